//! The profile's [`HomeBind`]s (host directories that persist inside the private HOME, such
//! as package caches) planned for each rung: a read-write bind at the place on the namespace
//! rungs, a symlink the helper makes in the scratch HOME plus a Landlock write rule on the
//! directory on the Landlock-only rung. Nothing else of the HOME persists.

use std::path::{Path, PathBuf};

use super::facts::HostFacts;
use super::types::MountOp;
use crate::profile::{HomeBind, Profile};

/// The binds of a namespaced plan, given the root's other operations so far (`ops`): each
/// valid bind becomes a [`MountOp::BindDir`] at `home/at`, and a root bound at or below that
/// place is dropped (the bind hides it). With the HOME private (a tmpfs) the helper makes the
/// mount point; where a root of the host's home holds the place instead (a `full` shell reads
/// `~/.cargo`), the bind is planned only when the place exists there (a mount point cannot
/// be made in a read-only root, and none is made on the host).
pub(super) fn mounts(
    profile: &Profile,
    facts: &HostFacts,
    home: &Path,
    home_private: bool,
    ops: &mut Vec<MountOp>,
) {
    if !home_private {
        return;
    }
    for bind in profile.home_binds.iter().filter(|b| b.is_valid()) {
        let place = home.join(&bind.at);
        let in_root = ops.iter().any(|op| {
            matches!(op, MountOp::Bind { path, .. } | MountOp::Symlink { path, .. }
                if place.starts_with(path) && *path != place && path.starts_with(home)
                    && path != home)
        });
        if in_root && !facts.is_dir(&place) {
            continue;
        }
        ops.retain(|op| !op.path().starts_with(&place));
        ops.push(MountOp::BindDir {
            src: bind.host.clone(),
            path: place,
        });
    }
}

/// The places of the binds in `home` (what the gather looks at on the namespace rungs).
pub(super) fn places(profile: &Profile, home: &Path) -> Vec<PathBuf> {
    valid(profile).map(|b| home.join(&b.at)).collect()
}

/// The binds the Landlock-only rung's helper links into the scratch HOME.
pub(super) fn links(profile: &Profile) -> Vec<HomeBind> {
    valid(profile).cloned().collect()
}

/// The host directories the Landlock-only rung grants write access to (and nothing above).
pub(super) fn write_rules(profile: &Profile) -> impl Iterator<Item = PathBuf> + '_ {
    valid(profile).map(|b| b.host.clone())
}

fn valid(profile: &Profile) -> impl Iterator<Item = &HomeBind> {
    profile.home_binds.iter().filter(|b| b.is_valid())
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::super::facts::HostFacts;
    use super::super::types::MountOp;
    use crate::backend::Backend;
    use crate::profile::Profile;

    const HOME: &str = "/zc-fabricated/home";
    const CACHE: &str = "/zc-fabricated/state/caches/c";

    fn host() -> HostFacts {
        HostFacts {
            home: Some(HOME.into()),
            ..HostFacts::default()
        }
        .with_dir("/usr")
        .with_dir("/zc-fabricated/ws")
        .with_dir(HOME)
        .with_dir(CACHE)
    }

    fn profile() -> Profile {
        Profile::for_workspace("/zc-fabricated/ws")
            .bind_in_home(CACHE, ".cache")
            .bind_in_home(CACHE, ".cargo/registry")
            .bind_in_home(CACHE, "../escape")
    }

    fn plan(backend: Backend, profile: &Profile, facts: &HostFacts) -> super::super::Plan {
        let scratch = (backend == Backend::Landlock).then(|| PathBuf::from("/s"));
        super::super::build(backend, profile, facts, vec!["true".into()], scratch)
    }

    fn bind_dir(at: &str) -> MountOp {
        MountOp::BindDir {
            src: CACHE.into(),
            path: PathBuf::from(HOME).join(at),
        }
    }

    #[test]
    fn the_namespace_rungs_bind_each_valid_place_in_the_private_home() {
        for backend in [Backend::Namespaces, Backend::Bubblewrap] {
            let plan = plan(backend, &profile(), &host());
            let home = plan
                .mounts
                .iter()
                .position(|op| op.path() == std::path::Path::new(HOME));
            let cache = plan.mounts.iter().position(|op| *op == bind_dir(".cache"));
            assert!(home.is_some() && cache > home, "{:?}", plan.mounts);
            assert!(plan.mounts.contains(&bind_dir(".cargo/registry")));
            let escaped = plan.mounts.iter().any(|op| op.path().ends_with("escape"));
            assert!(!escaped, "{:?}", plan.mounts);
            assert!(plan.home.links.is_empty());
            assert!(!plan.landlock.write.contains(&PathBuf::from(CACHE)));
        }
    }

    #[test]
    fn a_root_at_the_place_is_replaced_and_one_above_a_missing_place_keeps_it_unbound() {
        // A `full` shell reads the host home's `~/.cache` and `~/.cargo` (no `registry`).
        let profile = profile()
            .allow_read(format!("{HOME}/.cache"))
            .allow_read(format!("{HOME}/.cargo"));
        let facts = host()
            .with_dir(format!("{HOME}/.cache"))
            .with_dir(format!("{HOME}/.cargo"));
        let plan = plan(Backend::Namespaces, &profile, &facts);
        assert!(
            plan.mounts.contains(&bind_dir(".cache")),
            "{:?}",
            plan.mounts
        );
        let host_cache = plan
            .mounts
            .iter()
            .any(|op| matches!(op, MountOp::Bind { path, .. } if path.ends_with(".cache")));
        assert!(!host_cache, "{:?}", plan.mounts);
        assert!(!plan.mounts.contains(&bind_dir(".cargo/registry")));
    }

    #[test]
    fn the_landlock_rung_links_the_places_and_grants_only_the_directories() {
        let plan = plan(Backend::Landlock, &profile(), &host());
        let places: Vec<_> = plan.home.links.iter().map(|l| l.at.clone()).collect();
        assert_eq!(places, [PathBuf::from(".cache"), ".cargo/registry".into()]);
        assert!(plan.landlock.write.contains(&PathBuf::from(CACHE)));
        assert!(
            !plan
                .landlock
                .write
                .contains(&PathBuf::from("/zc-fabricated/state"))
        );
        assert!(plan.mounts.is_empty());
    }
}
