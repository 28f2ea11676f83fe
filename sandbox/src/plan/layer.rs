//! The plan's transactional workspace: on the namespace rungs, a profile with a layers
//! directory gets its workspace root mounted as a writable overlay of itself over a fresh,
//! private layer ([`MountOp::Layer`]), landed through validation once the call's tree ended
//! (see [`crate::layer`]). The namespace backend (fresh and warm helpers); bubblewrap launched
//! by root, whose inner stage mounts the overlay (bwrap 0.8, Debian 12's, has no
//! `--overlay`); and bubblewrap launched by another user in a workspace without `.git`,
//! where the helper mounts the overlay in a user and mount namespace of its own and runs bwrap
//! in it ([`Layering::Outside`]). The Landlock-only and Seatbelt rungs have no mount
//! namespace: their writes reach the workspace directly, with the `.git` stage and
//! placeholders (`sandbox/README.md`, "Transactional workspace").

use std::path::{Path, PathBuf};

use super::types::{MountOp, Plan};
use crate::backend::Backend;
use crate::error::SandboxError;
use crate::profile::Profile;

/// Whether bubblewrap launched by another user may have the layer mounted around it, as the
/// daemon side found the host (`plan::planner`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layering {
    /// The helper may mount it in a user namespace of its own and run bwrap there: bwrap is
    /// not setuid (a setuid bwrap would lose its bit there and need the user namespaces it is
    /// installed to do without), and the workspace has no `.git` (an existing repository's
    /// stage is bound by bwrap from the helper's view, which would be the overlay).
    Outside,
    /// Not for bubblewrap launched by another user.
    Inside,
}

/// Turns the workspace's writable bind into a layer when the backend and profile have one.
/// A layers directory inside the workspace is a profile error (overlayfs refuses an upper
/// layer inside its lower one, and the child would see its own layer).
pub fn apply(
    backend: Backend,
    profile: &Profile,
    plan: &mut Plan,
    layering: Layering,
) -> Result<(), SandboxError> {
    let Some(layers) = &profile.layers else {
        return Ok(());
    };
    let namespaced = backend == Backend::Namespaces
        || (backend == Backend::Bubblewrap
            && (plan.seals_in_bwrap() || layering == Layering::Outside));
    if !namespaced || profile.workspace_read_only {
        return Ok(());
    }
    if layers.starts_with(&profile.workspace) {
        return Err(SandboxError::Profile(format!(
            "the layers directory {} lies inside the workspace {}: a call's private layer \
             must be outside what it lands in",
            layers.display(),
            profile.workspace.display()
        )));
    }
    let dir = new_dir(layers);
    let workspace = &profile.workspace;
    // The writable binds below the root pin a protected or denied path's ancestors (bound
    // onto themselves, so they cannot be renamed): a bind of the host's directory would let
    // the call write past the layer, so each is pinned in the overlay instead. (Overlayfs
    // refuses to rename a directory the host has, EXDEV, but `mv` then copies it: without
    // the pin, a denied path's placeholder parent would be copied out and landed.)
    // The first writable bind of the root becomes its layer; a second one (the root also
    // listed among the writable roots) would mount another overlay over the same layer.
    let mut layered = false;
    plan.mounts.retain(|op| {
        let root = matches!(op, MountOp::Bind { path, rw: true, .. } if path == workspace);
        let keep = !(root && layered);
        layered |= root;
        keep
    });
    for op in plan.mounts.iter_mut() {
        match op {
            MountOp::Bind { path, rw: true, .. } if path == workspace => {
                *op = MountOp::Layer {
                    path: workspace.clone(),
                    dir: dir.clone(),
                };
            }
            MountOp::Bind { path, rw: true, .. } if path.starts_with(workspace) => {
                *op = MountOp::Pin { path: path.clone() };
            }
            _ => {}
        }
    }
    Ok(())
}

/// A fresh layer directory name under `layers` (unique per process and call).
fn new_dir(layers: &Path) -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    layers.join(format!(
        "{}-{}-{nanos:08x}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `profile`'s plan on `backend`, before the layer is applied.
    fn built(backend: Backend, profile: &Profile) -> Plan {
        let facts = crate::plan::HostFacts::gather(backend, profile, crate::git::READER);
        let mut plan = crate::plan::build(backend, profile, &facts, vec!["true".into()], None);
        plan.bwrap = crate::plan::stand_in_bubblewrap(backend, &facts);
        plan
    }

    fn planned(backend: Backend, profile: &Profile) -> Plan {
        let mut plan = built(backend, profile);
        apply(backend, profile, &mut plan, Layering::Inside).unwrap();
        plan
    }

    #[test]
    fn a_namespaced_workspace_with_a_layers_directory_is_layered_and_others_are_not() {
        let ws = tempfile::tempdir().unwrap();
        let layers = tempfile::tempdir().unwrap();
        let ws_path = ws.path().canonicalize().unwrap();
        let profile = Profile::for_workspace(&ws_path).land_through(layers.path());
        {
            let plan = planned(Backend::Namespaces, &profile);
            let (workspace, dir) = plan.layer().expect("layered");
            assert_eq!(workspace, ws_path);
            assert!(dir.starts_with(layers.path()), "{}", dir.display());
            assert!(
                !plan.mounts.iter().any(
                    |op| matches!(op, MountOp::Bind { path, rw: true, .. } if *path == ws_path)
                ),
                "the workspace is not also bound directly"
            );
        }
        let bwrap = planned(Backend::Bubblewrap, &profile);
        assert_eq!(
            bwrap.layer().is_some(),
            bwrap.seals_in_bwrap(),
            "bubblewrap: root launched, unless the layer can be mounted around it"
        );
        let mut around = built(Backend::Bubblewrap, &profile);
        around.bwrap.as_mut().expect("a bubblewrap section").seal = false;
        apply(
            Backend::Bubblewrap,
            &profile,
            &mut around,
            Layering::Outside,
        )
        .unwrap();
        assert!(
            around.layer().is_some(),
            "bubblewrap launched by another user"
        );
        for backend in [Backend::Landlock, Backend::Seatbelt] {
            assert!(planned(backend, &profile).layer().is_none(), "{backend:?}");
        }
        let plain = Profile::for_workspace(&ws_path);
        assert!(planned(Backend::Namespaces, &plain).layer().is_none());
        let read_only = profile.clone().read_only_workspace();
        assert!(planned(Backend::Namespaces, &read_only).layer().is_none());
    }

    #[test]
    fn no_writable_bind_below_a_layered_workspace_reaches_past_the_layer() {
        let ws = tempfile::tempdir().unwrap();
        let layers = tempfile::tempdir().unwrap();
        let ws_path = ws.path().canonicalize().unwrap();
        std::fs::create_dir_all(ws_path.join(".git/hooks")).unwrap();
        std::fs::write(ws_path.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(ws_path.join(".git/config"), "").unwrap();
        let profile = Profile::for_workspace(&ws_path).deny(ws_path.join("secret/key"));
        let plain = planned(Backend::Namespaces, &profile);
        let below = |plan: &Plan| {
            plan.mounts
                .iter()
                .filter(|op| {
                    matches!(op, MountOp::Bind { path, rw: true, .. } if path != &ws_path && path.starts_with(&ws_path))
                })
                .count()
        };
        assert!(
            below(&plain) > 0,
            "the unlayered plan pins .git: {:#?}",
            plain.mounts
        );
        let layered = planned(Backend::Namespaces, &profile.land_through(layers.path()));
        assert_eq!(below(&layered), 0, "{:#?}", layered.mounts);
        assert_eq!(
            layered
                .mounts
                .iter()
                .filter(|op| matches!(op, MountOp::Pin { .. }))
                .count(),
            below(&plain),
            "each pin is kept in the overlay: {:#?}",
            layered.mounts
        );
        assert!(
            layered.mounts.iter().any(|op| matches!(op, MountOp::Bind { path, rw: false, .. } if *path == ws_path.join(".git/config"))),
            "the protected paths stay read-only: {:#?}",
            layered.mounts
        );
    }

    #[test]
    fn a_workspace_also_listed_as_a_writable_root_gets_one_layer() {
        let ws = tempfile::tempdir().unwrap();
        let layers = tempfile::tempdir().unwrap();
        let ws_path = ws.path().canonicalize().unwrap();
        let profile = Profile::for_workspace(&ws_path)
            .allow_write(&ws_path)
            .land_through(layers.path());
        let plan = planned(Backend::Namespaces, &profile);
        let at_root = |plan: &Plan| plan.mounts.iter().filter(|op| op.path() == ws_path).count();
        assert_eq!(at_root(&plan), 1, "{:#?}", plan.mounts);
        assert!(plan.layer().is_some());
    }

    #[test]
    fn a_layers_directory_inside_the_workspace_is_refused() {
        let ws = tempfile::tempdir().unwrap();
        let profile = Profile::for_workspace(ws.path()).land_through(ws.path().join("layers"));
        let mut plan = built(Backend::Namespaces, &profile);
        let err = apply(Backend::Namespaces, &profile, &mut plan, Layering::Inside).unwrap_err();
        assert!(err.to_string().contains("inside the workspace"), "{err}");
    }
}
