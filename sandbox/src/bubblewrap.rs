//! Pure argv builder for the bubblewrap backend: the plan's mount operations in bwrap syntax,
//! our own binary bound at [`HELPER_INSIDE`] and run as the inner stage (overlays over the
//! read-only roots, Landlock, seccomp, capabilities, rlimits), the plan on fd 3 and reports on
//! fd 4 (and a proxy call's plan socket on [`crate::wire::EGRESS_FD`], which the helper
//! installs: bwrap keeps every descriptor that is not close-on-exec). A [`MountOp::File`]
//! (transparent egress's `/etc/hosts` and `/etc/resolv.conf`) is left to the inner stage,
//! which mounts it once it sealed the read-only roots (or, launched by another user, in a
//! mount namespace of its own).

use std::ffi::OsString;
use std::path::Path;

use crate::plan::{MountOp, Plan};
use crate::wire::{HELPER_ARG, INNER_ARG};

/// Where the helper binary appears inside the bubblewrap sandbox.
pub const HELPER_INSIDE: &str = "/.zeroclaw-helper";

/// The bwrap arguments (without the program name) that run the inner stage for `plan`.
pub fn args(plan: &Plan, helper: &Path) -> Vec<OsString> {
    let mut a: Vec<OsString> = Vec::new();
    let mut push = |items: &[&dyn AsRefOs]| a.extend(items.iter().map(|i| i.os()));
    push(&[
        &"--die-with-parent",
        &"--new-session",
        &"--unshare-user",
        &"--unshare-pid",
    ]);
    push(&[
        &"--unshare-ipc",
        &"--unshare-uts",
        &"--unshare-cgroup-try",
        &"--hostname",
        &"zeroclaw",
    ]);
    if plan.egress.own_namespace {
        push(&[&"--unshare-net"]);
    }
    // Our inner stage keeps only what it needs, and drops every capability before the exec:
    // CAP_SYS_ADMIN (in bwrap's user namespace), when root launched, to cover the read-only
    // roots with overlays (which hide host Unix sockets in them, see
    // `helper::mounts::SocketSeal`; bwrap makes their empty lower layer); CAP_SYS_RESOURCE to
    // set the namespace's per-user limits; CAP_SETPCAP to empty the bounding set afterwards
    // (uid 0 would get it back at execve otherwise). A non-root user's setuid-root bwrap
    // refuses --cap-add, and runs the sandbox in a nested user namespace that cannot mount:
    // the inner stage reports the gaps.
    push(&[&"--cap-drop", &"ALL"]);
    // Transparent egress launched by another user: CAP_SYS_ADMIN in the stage's nested user
    // namespace, to make a network and a mount namespace of its own there.
    if plan.seals_in_bwrap() || plan.egress.inner_namespaces {
        push(&[&"--cap-add", &"CAP_SYS_ADMIN"]);
    }
    if !plan.process.user_limits.is_empty() {
        push(&[&"--cap-add", &"CAP_SYS_RESOURCE"]);
    }
    // The workspace's layer (`plan::layer`, root launched): overlayfs acts on its upper layer
    // with the credentials of whoever mounted it, for the whole call — copying up a file the
    // command may not read, keeping its owner and mode — so the inner stage mounts it holding
    // what a root mounter needs for that (and drops them all before the exec, as the others).
    if plan.seals_in_bwrap() && plan.layer().is_some() {
        for cap in [
            "CAP_CHOWN",
            "CAP_DAC_OVERRIDE",
            "CAP_DAC_READ_SEARCH",
            "CAP_FOWNER",
            "CAP_FSETID",
            "CAP_MKNOD",
        ] {
            push(&[&"--cap-add", &cap]);
        }
    }
    // Transparent egress: the inner stage adds the route, binds port 53 and opens the raw
    // socket watching refused connections in bwrap's network namespace (root launched) or its
    // own (`helper::egress::send_from_inner`, `egress::refused_watch`).
    if plan.egress.transparent.is_some() {
        push(&[
            &"--cap-add",
            &"CAP_NET_ADMIN",
            &"--cap-add",
            &"CAP_NET_BIND_SERVICE",
            &"--cap-add",
            &"CAP_NET_RAW",
        ]);
    }
    if plan.seals_in_bwrap()
        || plan.egress.inner_namespaces
        || !plan.process.user_limits.is_empty()
        || plan.egress.transparent.is_some()
    {
        push(&[&"--cap-add", &"CAP_SETPCAP"]);
    }
    if plan.seals_in_bwrap() {
        push(&[&"--dir", &crate::wire::EMPTY_DIR]);
    }
    for op in &plan.mounts {
        match op {
            // A read-only root gone since planning is skipped; a protected path or writable
            // root must exist (bwrap fails, naming it).
            MountOp::Bind {
                path,
                rw: false,
                optional: true,
            } => push(&[&"--ro-bind-try", path, path]),
            MountOp::Bind {
                path,
                rw: false,
                optional: false,
            } => push(&[&"--ro-bind", path, path]),
            MountOp::Bind {
                path,
                rw: true,
                optional: true,
            } => push(&[&"--bind-try", path, path]),
            MountOp::Bind {
                path,
                rw: true,
                optional: false,
            } => push(&[&"--bind", path, path]),
            MountOp::Symlink { path, target } => push(&[&"--symlink", target, path]),
            MountOp::Tmpfs { path, mode } => {
                let size = plan.process.limits.file_size_bytes.to_string();
                push(&[
                    &"--perms",
                    &format!("{mode:04o}"),
                    &"--size",
                    &size,
                    &"--tmpfs",
                    path,
                ]);
            }
            MountOp::MaskFile { path } => push(&[&"--ro-bind", &"/dev/null", path]),
            MountOp::MaskDir { path } => {
                push(&[&"--perms", &"0000", &"--tmpfs", path, &"--remount-ro", path])
            }
            MountOp::BindDir { src, path } | MountOp::Stage { src, path } => {
                push(&[&"--bind", src, path])
            }
            // Root launched, the inner stage mounts the overlay (`helper::mounts::
            // layer_in_bwrap`; bwrap 0.8 has no `--overlay`) from the layer's directory.
            MountOp::Layer { path, dir } if plan.seals_in_bwrap() => push(&[
                &"--bind",
                path,
                path,
                &"--bind",
                dir,
                &crate::wire::LAYER_DIR,
            ]),
            // Launched by another user, bwrap runs where the helper mounted the overlay
            // already (`helper::mounts::layer_outside`): bwrap binds it, and each pin from it.
            MountOp::Layer { path, .. } | MountOp::Pin { path } if !plan.seals_in_bwrap() => {
                push(&[&"--bind", path, path])
            }
            // The inner stage's, over the sealed roots (`helper::mounts::bind_files`).
            MountOp::File { .. } => {}
            // Root launched: the inner stage's, in the overlay it mounts.
            MountOp::Pin { .. } | MountOp::Layer { .. } => {}
        }
    }
    push(&[&"--dev", &"/dev", &"--proc", &"/proc"]);
    // Root-only files of the new /proc (the plan lists only entries this /proc has: another
    // network namespace's are left out).
    for path in &plan.proc_masks {
        if path.is_dir() {
            push(&[&"--perms", &"0000", &"--tmpfs", path, &"--remount-ro", path]);
        } else {
            push(&[&"--ro-bind", &"/dev/null", path]);
        }
    }
    push(&[&"--ro-bind", &helper, &HELPER_INSIDE]);
    push(&[
        &"--chdir",
        &plan.cwd,
        &"--clearenv",
        &"--",
        &HELPER_INSIDE,
        &HELPER_ARG,
        &INNER_ARG,
    ]);
    a
}

/// Anything that can become one argv element.
trait AsRefOs {
    fn os(&self) -> OsString;
}

impl AsRefOs for &str {
    fn os(&self) -> OsString {
        (*self).into()
    }
}

impl AsRefOs for String {
    fn os(&self) -> OsString {
        self.into()
    }
}

impl AsRefOs for std::path::PathBuf {
    fn os(&self) -> OsString {
        self.clone().into_os_string()
    }
}

impl AsRefOs for &Path {
    fn os(&self) -> OsString {
        self.as_os_str().to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::Backend;
    use crate::profile::Profile;

    fn argv(p: &Profile) -> Vec<String> {
        let plan = crate::plan::build_on_host(Backend::Bubblewrap, p, vec!["true".into()], None);
        args(&plan, Path::new("/opt/zc/zeroclaw"))
            .into_iter()
            .map(|s| s.into_string().unwrap())
            .collect()
    }

    /// Root launched bwrap, or not ([`crate::plan::BwrapPlan::seal`]).
    fn set_seal(plan: &mut Plan, seal: bool) {
        plan.bwrap.as_mut().expect("a bubblewrap section").seal = seal;
    }

    /// The bwrap argv for `plan`, as strings.
    fn plan_args(plan: &Plan) -> Vec<String> {
        args(plan, Path::new("/opt/zc/zeroclaw"))
            .into_iter()
            .map(|s| s.into_string().unwrap())
            .collect()
    }

    /// The capabilities `v` keeps for the inner stage (`--cap-add`), in order.
    fn caps_added(v: &[String]) -> Vec<&str> {
        v.windows(2)
            .filter(|w| w[0] == "--cap-add")
            .map(|w| w[1].as_str())
            .collect()
    }

    fn has_seq(v: &[String], seq: &[&str]) -> bool {
        v.windows(seq.len())
            .any(|w| w.iter().zip(seq).all(|(a, b)| a == b))
    }

    #[test]
    fn confines_with_every_namespace_and_no_capabilities() {
        let d = tempfile::tempdir().unwrap();
        let v = argv(&Profile::for_workspace(d.path()));
        for flag in [
            "--die-with-parent",
            "--new-session",
            "--unshare-user",
            "--unshare-pid",
            "--unshare-net",
        ] {
            assert!(v.iter().any(|a| a == flag), "{flag} missing from {v:?}");
        }
        assert!(has_seq(&v, &["--cap-drop", "ALL"]));
        // With per-user limits to set (and no overlays to mount), the inner stage keeps the
        // two capabilities it needs for that (and drops them before the exec); without, none.
        let mut plan = crate::plan::build_on_host(
            Backend::Bubblewrap,
            &Profile::for_workspace(d.path()),
            vec!["true".into()],
            None,
        );
        set_seal(&mut plan, false);
        let added = |plan: &Plan| -> Vec<String> {
            caps_added(&plan_args(plan))
                .into_iter()
                .map(str::to_owned)
                .collect()
        };
        plan.process.user_limits = vec![("max_inotify_instances".into(), 32)];
        assert_eq!(added(&plan), ["CAP_SYS_RESOURCE", "CAP_SETPCAP"]);
        plan.process.user_limits.clear();
        assert!(added(&plan).is_empty());
    }

    /// Transparent egress keeps the inner stage the two network capabilities (and the one to
    /// drop them), and its files are left to the inner stage, not to bwrap.
    #[test]
    fn transparent_egress_keeps_the_network_capabilities_and_leaves_the_files_inside() {
        let d = tempfile::tempdir().unwrap();
        let profile = Profile::for_workspace(d.path()).network(crate::profile::Network::Proxy);
        let mut plan =
            crate::plan::build_on_host(Backend::Bubblewrap, &profile, vec!["true".into()], None);
        crate::plan::egress::apply(Backend::Bubblewrap, &profile, 0, &mut plan).unwrap();
        plan.process.user_limits.clear();
        set_seal(&mut plan, false);
        assert!(plan.egress.transparent.is_some());
        let v = plan_args(&plan);
        assert_eq!(
            caps_added(&v),
            [
                "CAP_NET_ADMIN",
                "CAP_NET_BIND_SERVICE",
                "CAP_NET_RAW",
                "CAP_SETPCAP"
            ]
        );
        assert!(!v.iter().any(|a| a == "/etc/resolv.conf"), "{v:?}");
        // Launched by another user: CAP_SYS_ADMIN too, for the stage's own network and mount
        // namespaces.
        plan.egress.inner_namespaces = true;
        let v = plan_args(&plan);
        assert_eq!(
            caps_added(&v),
            [
                "CAP_SYS_ADMIN",
                "CAP_NET_ADMIN",
                "CAP_NET_BIND_SERVICE",
                "CAP_NET_RAW",
                "CAP_SETPCAP"
            ]
        );
        assert!(!has_seq(&v, &["--dir", crate::wire::EMPTY_DIR]), "{v:?}");
    }

    /// The inner stage gets only what it needs to mount the overlays (and to empty its
    /// bounding set), and bwrap makes their empty lower layer; without root, nothing.
    #[test]
    fn the_inner_stage_keeps_only_the_mount_capabilities() {
        let d = tempfile::tempdir().unwrap();
        let mut plan = crate::plan::build_on_host(
            Backend::Bubblewrap,
            &Profile::for_workspace(d.path()),
            vec!["true".into()],
            None,
        );
        plan.process.user_limits = Vec::new();
        set_seal(&mut plan, false);
        let unsealed = plan_args(&plan);
        assert!(!unsealed.iter().any(|a| a == "--cap-add"), "{unsealed:?}");
        set_seal(&mut plan, true);
        let v = plan_args(&plan);
        assert_eq!(caps_added(&v), ["CAP_SYS_ADMIN", "CAP_SETPCAP"]);
        assert!(has_seq(&v, &["--dir", crate::wire::EMPTY_DIR]));
    }

    #[test]
    fn network_allow_keeps_the_host_network() {
        let d = tempfile::tempdir().unwrap();
        let v = argv(&Profile::for_workspace(d.path()).network(crate::profile::Network::Allow));
        assert!(!v.iter().any(|a| a == "--unshare-net"));
    }

    /// The proxy's listeners are bound in bwrap's own network namespace (only `lo`).
    #[test]
    fn network_proxy_gets_a_network_namespace_of_its_own() {
        let d = tempfile::tempdir().unwrap();
        let p = Profile::for_workspace(d.path()).network(crate::profile::Network::Proxy);
        let mut plan =
            crate::plan::build_on_host(Backend::Bubblewrap, &p, vec!["true".into()], None);
        crate::plan::egress::apply(Backend::Bubblewrap, &p, 0, &mut plan).unwrap();
        let v: Vec<String> = args(&plan, Path::new("/h"))
            .into_iter()
            .map(|s| s.into_string().unwrap())
            .collect();
        assert!(v.iter().any(|a| a == "--unshare-net"), "{v:?}");
    }

    #[test]
    fn workspace_rw_system_ro_and_helper_runs_inner_stage() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().canonicalize().unwrap().display().to_string();
        let v = argv(&Profile::for_workspace(d.path()));
        assert!(has_seq(&v, &["--bind", &ws, &ws]));
        assert!(has_seq(&v, &["--ro-bind-try", "/usr", "/usr"]));
        assert!(has_seq(
            &v,
            &["--ro-bind", "/opt/zc/zeroclaw", HELPER_INSIDE]
        ));
        assert!(has_seq(
            &v,
            &[
                "--chdir",
                &ws,
                "--clearenv",
                "--",
                HELPER_INSIDE,
                HELPER_ARG,
                INNER_ARG
            ]
        ));
        let size = crate::profile::Limits::default()
            .file_size_bytes
            .to_string();
        assert!(has_seq(
            &v,
            &["--perms", "1777", "--size", &size, "--tmpfs", "/tmp"]
        ));
    }

    #[test]
    fn git_hooks_are_bound_read_only_after_the_workspace() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().canonicalize().unwrap();
        let hooks = ws.join(".git/hooks").display().to_string();
        let v = argv(&Profile::for_workspace(d.path()));
        let ws_at = v
            .iter()
            .position(|a| *a == ws.display().to_string())
            .unwrap();
        let hooks_at = v.iter().position(|a| *a == hooks).unwrap();
        assert!(ws_at < hooks_at);
        assert!(has_seq(&v, &["--ro-bind", &hooks, &hooks]));
    }

    fn scratch() -> tempfile::TempDir {
        tempfile::Builder::new()
            .prefix("zc-bwrap-")
            .tempdir_in("/var/tmp")
            .unwrap()
    }

    /// Read-only roots may vanish before bwrap runs (skipped); protected paths and writable
    /// roots may not (bwrap fails naming them).
    #[test]
    fn only_read_only_roots_are_bound_with_try() {
        let (d, extra) = (scratch(), scratch());
        let ws = d.path().canonicalize().unwrap();
        let ro = extra.path().canonicalize().unwrap();
        let (ro_s, ws_s) = (ro.display().to_string(), ws.display().to_string());
        let config = ws.join(".git/config").display().to_string();
        let v = argv(&Profile::for_workspace(&ws).allow_read(&ro));
        assert!(has_seq(&v, &["--ro-bind-try", &ro_s, &ro_s]));
        assert!(has_seq(&v, &["--ro-bind", &config, &config]));
        assert!(has_seq(&v, &["--bind", &ws_s, &ws_s]));
        assert!(!has_seq(&v, &["--ro-bind-try", &config]));
        assert!(!v.iter().any(|a| a == "--bind-try"));
    }

    /// bwrap cannot create a mount point inside a masked (read-only, empty) directory, and
    /// need not: the outer mask already hides everything below it.
    #[test]
    fn a_denied_path_inside_a_denied_directory_is_masked_once() {
        let (d, extra) = (scratch(), scratch());
        let data = extra.path().canonicalize().unwrap();
        let (outer, inner) = (data.join("x"), data.join("x/sub"));
        std::fs::create_dir_all(&inner).unwrap();
        let p = Profile::for_workspace(d.path())
            .allow_read(&data)
            .deny(&outer)
            .deny(&inner);
        let v = argv(&p);
        let (outer, inner) = (outer.display().to_string(), inner.display().to_string());
        assert!(has_seq(&v, &["--tmpfs", &outer, "--remount-ro", &outer]));
        assert!(!v.contains(&inner), "{inner} in {v:?}");
    }

    /// A denied path missing from a writable root is masked after the root is bound (the
    /// helper creates its placeholder before bwrap runs), its parent pinned.
    #[test]
    fn a_missing_denied_path_in_the_workspace_is_masked_after_binding_it() {
        let d = scratch();
        let ws = d.path().canonicalize().unwrap();
        let (ssh, cargo) = (ws.join(".ssh"), ws.join(".cargo"));
        let creds = cargo.join("credentials.toml");
        let v = argv(&Profile::for_workspace(&ws).deny(&ssh).deny(&creds));
        let s = |p: &Path| p.display().to_string();
        let (ws_s, ssh_s, cargo_s, creds_s) = (s(&ws), s(&ssh), s(&cargo), s(&creds));
        let at = |seq: &[&str]| {
            v.windows(seq.len())
                .position(|w| w.iter().zip(seq).all(|(a, b)| a == b))
                .unwrap_or_else(|| panic!("{seq:?} missing from {v:?}"))
        };
        let bound = at(&["--bind", &ws_s, &ws_s]);
        assert!(bound < at(&["--tmpfs", &ssh_s, "--remount-ro", &ssh_s]));
        let pinned = at(&["--bind", &cargo_s, &cargo_s]);
        assert!(bound < pinned);
        assert!(pinned < at(&["--tmpfs", &creds_s, "--remount-ro", &creds_s]));
    }
}
