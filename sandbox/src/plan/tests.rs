use std::path::{Path, PathBuf};

use super::subtract_on_host as subtract;
use super::*;
use crate::backend::Backend;
use crate::host::scan::proc_private;
use crate::profile::Profile;

/// A scratch directory outside any git repository (and outside `/tmp`).
fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("zc-plan-")
        .tempdir_in("/var/tmp")
        .unwrap()
}

/// The facts of this machine for `p` (namespace backends).
fn on_host(p: &Profile) -> HostFacts {
    HostFacts::gather(Backend::Namespaces, p, NO_GIT)
}

fn ws() -> (tempfile::TempDir, Profile) {
    let dir = scratch();
    let p = Profile::for_workspace(dir.path());
    (dir, p)
}

#[test]
fn parents_are_mounted_before_children() {
    let (_d, p) = ws();
    let ops = mounts(&p, &on_host(&p), Path::new("/root"));
    let depths: Vec<usize> = ops.iter().map(|o| depth(o.path())).collect();
    let mut sorted = depths.clone();
    sorted.sort();
    assert_eq!(depths, sorted);
}

#[test]
fn workspace_is_bound_writable_and_system_read_only() {
    let (_d, p) = ws();
    let ops = mounts(&p, &on_host(&p), Path::new("/root"));
    assert!(ops.contains(&MountOp::Bind {
        path: p.workspace.clone(),
        rw: true,
        optional: false
    }));
    assert!(ops.contains(&MountOp::Bind {
        path: "/usr".into(),
        rw: false,
        optional: true
    }));
    assert!(ops.contains(&MountOp::Tmpfs {
        path: "/tmp".into(),
        mode: 0o1777
    }));
}

#[test]
fn namespaced_ruleset_reads_through_one_rule_on_the_new_root() {
    let (_d, p) = ws();
    for backend in [Backend::Namespaces, Backend::Bubblewrap] {
        let plan = build_on_host(backend, &p, vec!["true".into()], None);
        let ll = &plan.landlock;
        assert_eq!(ll.read, [PathBuf::from("/")], "{backend:?}");
        assert!(ll.write.contains(&p.workspace), "{backend:?}");
        assert!(ll.write.contains(&PathBuf::from("/tmp")), "{backend:?}");
        assert_eq!(ll.devices, [PathBuf::from("/dev")], "{backend:?}");
        assert!(!ll.no_symlinks, "{backend:?}");
    }
}

#[test]
fn git_dir_is_pinned_and_hooks_bound_read_only() {
    let (_d, p) = ws();
    let ops = mounts(&p, &on_host(&p), Path::new("/root"));
    let git = p.workspace.join(".git");
    assert!(ops.contains(&MountOp::Bind {
        path: git.clone(),
        rw: true,
        optional: false
    }));
    assert!(ops.contains(&MountOp::Bind {
        path: git.join("hooks"),
        rw: false,
        optional: false
    }));
    assert!(ops.contains(&MountOp::Bind {
        path: git.join("config"),
        rw: false,
        optional: false
    }));
}

#[test]
fn only_roots_holding_nothing_guarded_may_vanish_before_mounting() {
    let (_d, p) = ws();
    let extra = scratch();
    let extra = crate::profile::absolute(extra.path());
    let (ro, rw, guarding) = (extra.join("ro"), extra.join("rw"), extra.join("guarding"));
    for dir in [&ro, &rw, &guarding.join("keep")] {
        std::fs::create_dir_all(dir).unwrap();
    }
    let p = p
        .allow_read(&ro)
        .allow_write(&rw)
        .allow_write(&guarding)
        .protect(guarding.join("keep"));
    let ops = mounts(&p, &on_host(&p), Path::new("/root"));
    let optional = |path: &Path| {
        ops.iter().find_map(|op| match op {
            MountOp::Bind {
                path: at, optional, ..
            } if at == path => Some(*optional),
            _ => None,
        })
    };
    assert_eq!(optional(&ro), Some(true));
    assert_eq!(optional(&rw), Some(true));
    assert_eq!(optional(&guarding), Some(false));
    assert_eq!(optional(&guarding.join("keep")), Some(false));
    assert_eq!(optional(&p.workspace), Some(false));
    assert_eq!(optional(&p.workspace.join(".git/hooks")), Some(false));
}

#[test]
fn a_denied_path_inside_a_masked_directory_is_not_masked_again() {
    let (_d, p) = ws();
    let dir = scratch();
    let data = crate::profile::absolute(dir.path());
    let outer = data.join("secret");
    std::fs::create_dir_all(outer.join("sub")).unwrap();
    std::fs::write(outer.join("key"), "").unwrap();
    std::fs::write(data.join("token"), "").unwrap();
    let p = p
        .allow_read(&data)
        .deny(outer.join("sub"))
        .deny(&outer)
        .deny(outer.join("key"))
        .deny(data.join("token"));
    let ops = mounts(&p, &on_host(&p), Path::new("/root"));
    let mut masked: Vec<&Path> = ops
        .iter()
        .filter(|op| matches!(op, MountOp::MaskDir { .. } | MountOp::MaskFile { .. }))
        .map(MountOp::path)
        .filter(|m| m.starts_with(&data))
        .collect();
    masked.sort();
    assert_eq!(masked, vec![outer.as_path(), &data.join("token")]);
    assert!(ops.contains(&MountOp::MaskDir { path: outer }));
}

#[test]
fn missing_git_gets_placeholders_dir_hooks_file_config() {
    let (_d, p) = ws();
    let ph = placeholders(&p, &on_host(&p));
    let git = p.workspace.join(".git");
    assert!(ph.contains(&Placeholder {
        path: git.clone(),
        dir: true,
        denied: false
    }));
    assert!(ph.contains(&Placeholder {
        path: git.join("hooks"),
        dir: true,
        denied: false
    }));
    assert!(ph.contains(&Placeholder {
        path: git.join("config"),
        dir: false,
        denied: false
    }));
}

/// Denied paths missing from a writable root get directory placeholders (parents first,
/// a file-like name too) and an empty read-only mask, their parents a pin; one missing
/// from a read-only root gets neither (nothing can be created there).
#[test]
fn missing_denied_paths_in_a_writable_root_get_placeholders_pins_and_masks() {
    let (_d, p) = ws();
    let ws = p.workspace.clone();
    let ro = scratch();
    let ro = crate::profile::absolute(ro.path());
    let (ssh, netrc, cargo) = (ws.join(".ssh"), ws.join(".netrc"), ws.join(".cargo"));
    let creds = cargo.join("credentials.toml");
    let p = p
        .allow_read(&ro)
        .deny(&ssh)
        .deny(&netrc)
        .deny(&creds)
        .deny(ro.join(".ssh"));
    let plan = build_on_host(Backend::Namespaces, &p, vec!["true".into()], None);
    let guarded: Vec<&Path> = plan
        .placeholders
        .iter()
        .filter(|ph| ph.denied)
        .inspect(|ph| assert!(ph.dir, "{ph:?}"))
        .map(|ph| ph.path.as_path())
        .collect();
    assert_eq!(guarded, [ssh.as_path(), &netrc, &cargo, &creds]);
    for masked in [&ssh, &netrc, &creds] {
        assert!(
            plan.mounts.contains(&MountOp::MaskDir {
                path: masked.clone()
            }),
            "{masked:?} not masked: {:?}",
            plan.mounts
        );
    }
    assert!(plan.mounts.contains(&MountOp::Bind {
        path: cargo.clone(),
        rw: true,
        optional: false
    }));
    let depths: Vec<usize> = plan.mounts.iter().map(|o| depth(o.path())).collect();
    assert!(depths.is_sorted());
    assert!(
        !plan
            .mounts
            .iter()
            .any(|op| op.path().starts_with(&ro) && op.path() != ro)
    );
    assert!(!plan.placeholders.iter().any(|ph| ph.path.starts_with(&ro)));
    // The Landlock-only rung carves instead: nothing is created.
    let plan = build_on_host(
        Backend::Landlock,
        &p,
        vec!["true".into()],
        Some("/s".into()),
    );
    assert!(plan.placeholders.is_empty());
}

/// An existing denied directory in a writable root is held too (it may be another run's
/// placeholder); an existing denied file is masked as before, and a path below another
/// denied path is left to that one's mask.
#[test]
fn existing_denied_directories_are_held_files_and_nested_paths_are_not() {
    let (_d, p) = ws();
    let ws = p.workspace.clone();
    std::fs::create_dir(ws.join(".aws")).unwrap();
    std::fs::write(ws.join(".npmrc"), "").unwrap();
    let p = p
        .deny(ws.join(".aws"))
        .deny(ws.join(".npmrc"))
        .deny(ws.join(".aws/credentials"));
    let guarded: Vec<PathBuf> = placeholders(&p, &on_host(&p))
        .into_iter()
        .filter(|ph| ph.denied)
        .map(|ph| ph.path)
        .collect();
    assert_eq!(guarded, [ws.join(".aws")]);
    let ops = mounts(&p, &on_host(&p), Path::new("/root"));
    assert!(ops.contains(&MountOp::MaskDir {
        path: ws.join(".aws")
    }));
    assert!(ops.contains(&MountOp::MaskFile {
        path: ws.join(".npmrc")
    }));
    assert!(
        !ops.iter()
            .any(|op| op.path() == ws.join(".aws/credentials"))
    );
}

#[test]
fn etc_shadow_is_masked_when_present() {
    let (_d, p) = ws();
    let ops = mounts(&p, &on_host(&p), Path::new("/root"));
    if Path::new("/etc/shadow").exists() {
        assert!(ops.contains(&MountOp::MaskFile {
            path: "/etc/shadow".into()
        }));
    }
}

/// The root-only files of `/proc` are found by mode, the world-readable ones are not, and
/// the host's `/proc/sys/net` only when asked for.
#[test]
fn proc_private_lists_root_only_proc_files() {
    let base = proc_private(false);
    for f in [
        "/proc/kpageflags",
        "/proc/slabinfo",
        "/proc/sys/kernel/cad_pid",
    ] {
        if Path::new(f).exists() {
            assert!(base.contains(&PathBuf::from(f)), "{f} missing: {base:?}");
        }
    }
    for f in ["/proc/cpuinfo", "/proc/meminfo", "/proc/sys/kernel/ostype"] {
        assert!(!base.contains(&PathBuf::from(f)), "{f} listed");
    }
    assert!(!base.iter().any(|p| p.starts_with("/proc/sys/net")));
    assert!(
        base.iter().all(|p| !p
            .strip_prefix("/proc")
            .unwrap()
            .components()
            .next()
            .is_some_and(|c| c
                .as_os_str()
                .as_encoded_bytes()
                .iter()
                .all(u8::is_ascii_digit))),
        "a process directory listed: {base:?}"
    );
    let with_net = proc_private(true);
    assert!(with_net.len() >= base.len());
}

/// The host's `/proc/sys/net` is scanned only for a child that shares the host's network:
/// `deny` and `proxy` on the namespace backends run in a network namespace of their own (the
/// scan is a thousand entries on the start of every such call, and bwrap could not mask the
/// host's entries the new namespace lacks).
#[test]
fn host_net_is_scanned_only_for_a_child_sharing_the_host_network() {
    use crate::profile::Network;
    let (_d, p) = ws();
    let scanned = |backend, network| {
        HostFacts::gather(backend, &p.clone().network(network), NO_GIT)
            .proc_private
            .iter()
            .any(|f| f.starts_with("/proc/sys/net"))
    };
    for backend in [Backend::Namespaces, Backend::Bubblewrap] {
        assert!(!scanned(backend, Network::Deny), "{backend:?}");
        assert!(!scanned(backend, Network::Proxy), "{backend:?}");
    }
    let host_has_some = proc_private(true)
        .iter()
        .any(|f| f.starts_with("/proc/sys/net"));
    if !nix::unistd::geteuid().is_root() || !host_has_some {
        eprintln!("skipped the shared-network half: not root, or no root-only /proc/sys/net file");
        return;
    }
    assert!(scanned(Backend::Namespaces, Network::Allow));
    assert!(scanned(Backend::Bubblewrap, Network::Allow));
    // The Landlock-only rung shares the host's network namespace in every mode: its root-only
    // files are hidden, and with the network denied the whole directory is.
    for network in [Network::Deny, Network::Proxy, Network::Allow] {
        assert!(scanned(Backend::Landlock, network), "{network:?}");
    }
    let deny = HostFacts::gather(Backend::Landlock, &p.clone().network(Network::Deny), NO_GIT);
    let net: Vec<_> = deny
        .proc_private
        .iter()
        .filter(|f| f.starts_with("/proc/sys/net"))
        .collect();
    assert_eq!(net, [&PathBuf::from("/proc/sys/net")]);
}

#[test]
fn subtract_leaves_out_symlinks_beside_the_denied_path() {
    let d = scratch();
    let d = d.path();
    std::fs::create_dir(d.join("secret")).unwrap();
    std::fs::write(d.join("a"), "").unwrap();
    std::os::unix::fs::symlink(d.join("secret"), d.join("link")).unwrap();
    std::os::unix::fs::symlink("/etc", d.join("etc-link")).unwrap();
    let out = subtract(vec![d.into()], &[d.join("secret")]);
    assert_eq!(out, vec![d.join("a")]);
}

#[test]
fn landlock_only_plan_carves_denied_paths_out_of_writable_roots() {
    let (d, p) = ws();
    let ws = p.workspace.clone();
    let ssh = ws.join(".ssh");
    std::fs::create_dir_all(ssh.join("keys")).unwrap();
    std::fs::create_dir(ws.join("src")).unwrap();
    std::fs::write(ws.join("README"), "").unwrap();
    let out = scratch();
    let out_dir = crate::profile::absolute(out.path());
    std::fs::create_dir(out_dir.join("cache")).unwrap();
    let p = p
        .deny(&ssh)
        .allow_write(&out_dir)
        .deny(out_dir.join("cache/secret"));
    let plan = build_on_host(
        Backend::Landlock,
        &p,
        vec!["true".into()],
        Some("/s".into()),
    );
    let write = &plan.landlock.write;
    for granted in [ws.join("src"), ws.join("README"), PathBuf::from("/s")] {
        assert!(
            write.contains(&granted),
            "{granted:?} missing from {write:?}"
        );
    }
    for denied in [
        &ws,
        &ssh,
        &ssh.join("keys"),
        &out_dir,
        &out_dir.join("cache"),
    ] {
        assert!(
            !write.iter().chain(&plan.landlock.read).any(|w| w == denied),
            "{denied:?} granted: {write:?}"
        );
    }
    assert!(!write.iter().any(|w| w.starts_with(&ssh)));
    // The namespace backends mask instead: their Landlock stage keeps the whole root.
    let plan = build_on_host(Backend::Namespaces, &p, vec!["true".into()], None);
    assert!(plan.landlock.write.contains(&ws));
    assert!(plan.mounts.contains(&MountOp::MaskDir { path: ssh }));
    drop(d);
}

#[test]
fn subtract_compares_whole_components_however_paths_are_spelled() {
    let d = scratch();
    let d = d.path();
    for dir in ["ssl", "ssl2", "sub"] {
        std::fs::create_dir(d.join(dir)).unwrap();
    }
    for f in ["sub/key", "sub/ok"] {
        std::fs::write(d.join(f), "").unwrap();
    }
    // `ssl` begins the bytes of the denied `ssl2`, not its components: it stays whole.
    let denied = [d.join("ssl2/"), d.join("./sub//key")];
    let mut out = subtract(vec![d.join(".")], &denied);
    out.sort();
    assert_eq!(out, vec![d.join("ssl"), d.join("sub/ok")]);
    let from_root = subtract(vec!["/".into()], &denied);
    assert!(from_root.contains(&PathBuf::from("/usr")), "{from_root:?}");
    assert!(from_root.contains(&d.join("ssl")), "{from_root:?}");
    assert!(
        !from_root.iter().any(|p| d.join("ssl2").starts_with(p)),
        "{from_root:?}"
    );
}

#[test]
fn subtract_expands_a_root_around_the_denied_path() {
    let d = tempfile::tempdir().unwrap();
    for f in ["a", "b", "secret"] {
        std::fs::write(d.path().join(f), "").unwrap();
    }
    let out = subtract(vec![d.path().into()], &[d.path().join("secret")]);
    assert_eq!(out.len(), 2);
    assert!(!out.contains(&d.path().join("secret")));
    let untouched = subtract(vec!["/usr".into()], &[d.path().join("secret")]);
    assert_eq!(untouched, vec![PathBuf::from("/usr")]);
}

#[test]
fn environment_is_an_allowlist() {
    let (_d, p) = ws();
    let p = p.set_env("FOO", "bar");
    let env = environment(&p, &on_host(&p), Path::new("/h"), Path::new("/t"));
    let names: Vec<_> = env.iter().map(|(k, _)| k.to_str().unwrap()).collect();
    for n in &names {
        assert!(
            [
                "PATH",
                "LANG",
                "TERM",
                "HOME",
                "TMPDIR",
                "RUSTUP_HOME",
                "GIT_CONFIG_GLOBAL",
                "FOO"
            ]
            .contains(n),
            "{n}"
        );
    }
    assert!(env.contains(&("HOME".into(), "/h".into())));
    assert!(env.contains(&("FOO".into(), "bar".into())));
}

#[test]
fn landlock_only_plan_supervises_attributes_and_uses_scratch() {
    let (_d, p) = ws();
    let plan = build_on_host(
        Backend::Landlock,
        &p,
        vec!["true".into()],
        Some("/s".into()),
    );
    assert!(plan.seccomp.deny_attr_changes);
    assert!(plan.mounts.is_empty());
    assert!(plan.landlock.write.contains(&PathBuf::from("/s")));
    assert!(plan.env.contains(&("HOME".into(), "/s/home".into())));
    assert!(!plan.landlock.read.contains(&PathBuf::from("/etc")));
}
