//! Plans built from fabricated [`HostFacts`]: none of these paths exist on this machine, so
//! each assertion holds only if [`build`] reads the facts and never the host.

use std::path::{Path, PathBuf};

use super::*;
use crate::profile::{EnvPolicy, Limits};

const WS: &str = "/zc-fabricated/ws";

/// A profile of fabricated paths: the workspace writable, `/usr` and `/bin` read-only,
/// `.git/hooks` and `.git/config` protected, `~/.ssh` and the workspace's `.ssh` denied.
fn profile() -> Profile {
    let ws = PathBuf::from(WS);
    Profile {
        cwd: ws.clone(),
        workspace: ws.clone(),
        read_only: vec!["/usr".into(), "/bin".into(), "/etc".into()],
        read_write: Vec::new(),
        workspace_read_only: false,
        protected: vec![ws.join(".git/hooks"), ws.join(".git/config")],
        denied: vec!["/zc-fabricated/home/.ssh".into(), ws.join(".ssh")],
        network: Network::Deny,
        limits: Limits::default(),
        env: EnvPolicy::default(),
        umask: crate::profile::DEFAULT_UMASK,
        egress_ports: Vec::new(),
        home_binds: Vec::new(),
        layers: None,
        parent_worktree: Default::default(),
    }
}

/// A host with the workspace (a git checkout), `/usr`, `/etc`, `/bin -> /usr/bin`, a home.
fn host() -> HostFacts {
    HostFacts {
        home: Some("/zc-fabricated/home".into()),
        launcher_pid: 4242,
        ..HostFacts::default()
    }
    .with_dir("/usr/bin")
    .with_dir("/etc")
    .with_dir_link("/bin", "/usr/bin")
    .with_dir("/zc-fabricated/home")
    .with_file(format!("{WS}/.git/config"))
    .with_dir(format!("{WS}/.git/hooks"))
    .with_dir(format!("{WS}/src"))
}

fn plan(backend: Backend, profile: &Profile, facts: &HostFacts) -> Plan {
    let scratch = (backend == Backend::Landlock).then(|| PathBuf::from("/s"));
    build(backend, profile, facts, vec!["true".into()], scratch)
}

fn bind(path: impl Into<PathBuf>, rw: bool, optional: bool) -> MountOp {
    MountOp::Bind {
        path: path.into(),
        rw,
        optional,
    }
}

#[test]
fn the_new_root_is_what_the_facts_say_is_there() {
    let plan = plan(Backend::Namespaces, &profile(), &host());
    assert!(plan.mounts.contains(&bind(WS, true, false)));
    assert!(plan.mounts.contains(&bind("/usr", false, true)));
    assert!(plan.mounts.contains(&MountOp::Symlink {
        path: "/bin".into(),
        target: "/usr/bin".into()
    }));
    assert!(
        plan.mounts
            .contains(&bind(format!("{WS}/.git"), true, false))
    );
    assert!(
        plan.mounts
            .contains(&bind(format!("{WS}/.git/hooks"), false, false))
    );
    assert!(
        plan.placeholders.iter().all(|ph| ph.denied),
        "{:?}",
        plan.placeholders
    );
    assert_eq!(plan.launcher_pid, 4242);
    assert_eq!(plan.scrub, [PathBuf::from(WS).join(".git/commondir")]);
    // A root the facts do not know is not mounted.
    let gone = profile().allow_read("/zc-fabricated/gone");
    let plan = super::build(
        Backend::Namespaces,
        &gone,
        &host(),
        vec!["true".into()],
        None,
    );
    assert!(
        !plan
            .mounts
            .iter()
            .any(|op| op.path().starts_with("/zc-fabricated/gone"))
    );
}

#[test]
fn missing_protected_paths_get_placeholders_and_read_only_binds() {
    let facts = HostFacts::default()
        .with_dir(format!("{WS}/src"))
        .with_dir("/usr");
    let plan = plan(Backend::Bubblewrap, &profile(), &facts);
    let git = PathBuf::from(WS).join(".git");
    let created: Vec<(&Path, bool)> = plan
        .placeholders
        .iter()
        .filter(|ph| !ph.denied)
        .map(|ph| (ph.path.as_path(), ph.dir))
        .collect();
    assert_eq!(
        created,
        [
            (git.as_path(), true),
            (git.join("hooks").as_path(), true),
            (git.join("config").as_path(), false)
        ]
    );
    assert!(plan.mounts.contains(&bind(&git, true, false)));
    assert!(plan.mounts.contains(&bind(git.join("hooks"), false, false)));
    assert!(
        plan.mounts
            .contains(&bind(git.join("config"), false, false))
    );
    // The missing denied `.ssh` in the workspace is created, held and masked; the one in a
    // home that is no root is not.
    let ssh = PathBuf::from(WS).join(".ssh");
    assert!(plan.placeholders.contains(&Placeholder {
        path: ssh.clone(),
        dir: true,
        denied: true
    }));
    assert!(plan.mounts.contains(&MountOp::MaskDir { path: ssh }));
    assert!(
        !plan
            .mounts
            .iter()
            .any(|op| op.path().starts_with("/zc-fabricated/home"))
    );
}

#[test]
fn a_missing_home_gets_the_fallback_home_and_no_toolchain_paths() {
    let plan = plan(Backend::Namespaces, &profile(), &HostFacts::default());
    let env = |k: &str| {
        plan.env
            .iter()
            .find(|(name, _)| name == k)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(env("HOME"), Some("/home/sandbox".into()));
    assert_eq!(env("RUSTUP_HOME"), None);
    assert_eq!(
        env("PATH"),
        Some("/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".into())
    );
    assert_eq!(env("LANG"), Some("C.UTF-8".into()));
    assert_eq!(env("TERM"), Some("dumb".into()));
    assert!(plan.mounts.contains(&MountOp::Tmpfs {
        path: "/home/sandbox".into(),
        mode: 0o700
    }));
}

#[test]
fn the_environment_comes_from_the_facts() {
    let mut facts = host().with_dir("/zc-fabricated/home/.rustup");
    facts.vars.insert("LANG".into(), "de_DE.UTF-8".into());
    facts.vars.insert("RUST_LOG".into(), "debug".into());
    facts.vars.insert("SECRET".into(), "no".into());
    let plan = plan(Backend::Namespaces, &profile().pass_env("RUST_LOG"), &facts);
    assert!(plan.env.contains(&("LANG".into(), "de_DE.UTF-8".into())));
    assert!(plan.env.contains(&("RUST_LOG".into(), "debug".into())));
    assert!(
        plan.env
            .contains(&("HOME".into(), "/zc-fabricated/home".into()))
    );
    assert!(
        plan.env
            .contains(&("RUSTUP_HOME".into(), "/zc-fabricated/home/.rustup".into()))
    );
    assert!(!plan.env.iter().any(|(k, _)| k == "SECRET"));
}

/// The Landlock-only rung names a symlinked workspace by its real path and carves the
/// denied `.ssh` out of it by the listed entries.
#[test]
fn a_symlinked_workspace_is_ruled_by_its_real_path_with_denied_paths_carved() {
    let real = PathBuf::from("/zc-fabricated/real/ws");
    let mut facts = host()
        .with_dir(real.join(".ssh"))
        .with_dir(real.join("src"))
        .with_file(real.join("README"))
        .with_entries(&real, &[".ssh", "src", "README"]);
    facts.paths.insert(
        WS.into(),
        PathFact {
            kind: Some(Kind::Symlink),
            target: Some(real.clone()),
            dir: true,
            canonical: Some(real.clone()),
        },
    );
    // `.ssh` exists through the link: its real path is in the real workspace.
    facts.paths.insert(
        PathBuf::from(WS).join(".ssh"),
        PathFact {
            kind: Some(Kind::Dir),
            target: None,
            dir: true,
            canonical: Some(real.join(".ssh")),
        },
    );
    let plan = plan(Backend::Landlock, &profile(), &facts);
    let ll = &plan.landlock;
    assert!(ll.write.contains(&real.join("src")), "{:?}", ll.write);
    assert!(ll.write.contains(&real.join("README")), "{:?}", ll.write);
    assert!(ll.write.contains(&PathBuf::from("/s")), "{:?}", ll.write);
    for never in [Path::new(WS), &real, &real.join(".ssh")] {
        assert!(
            !ll.write.iter().chain(&ll.read).any(|p| p == never),
            "{never:?}: {ll:?}"
        );
    }
    // `/bin` is a symlink: the rule on `/usr` covers its target.
    assert!(ll.read.contains(&PathBuf::from("/usr")));
    assert!(!ll.read.contains(&PathBuf::from("/bin")));
    assert!(ll.no_symlinks);
    assert!(plan.mounts.is_empty() && plan.placeholders.is_empty());
}

/// Started by root: `/etc`'s root-only files are masked when `/etc` is not attached unowned
/// (bubblewrap), left to the idmapped `/etc` on the namespace backend, and carved out of
/// the Landlock-only rules.
#[test]
fn root_only_etc_files_follow_the_facts() {
    let mut facts = host()
        .with_file("/etc/shadow")
        .with_entries("/etc", &["shadow", "hosts"]);
    facts.root = true;
    facts.etc_private = vec!["/etc/shadow".into()];
    facts.proc_private = vec!["/proc/kcore".into()];
    let shadow = MountOp::MaskFile {
        path: "/etc/shadow".into(),
    };
    let bwrap = plan(Backend::Bubblewrap, &profile(), &facts);
    assert!(bwrap.mounts.contains(&shadow));
    assert!(bwrap.unowned.is_empty());
    let section = super::bubblewrap(
        Backend::Bubblewrap,
        &facts,
        Some("/usr/bin/bwrap".into()),
        false,
    );
    assert!(section.is_some_and(|b| b.seal));
    assert_eq!(bwrap.proc_masks, [PathBuf::from("/proc/kcore")]);
    let ns = plan(Backend::Namespaces, &profile(), &facts);
    assert_eq!(ns.unowned, [PathBuf::from("/etc")]);
    assert!(!ns.mounts.contains(&shadow));
    let ll = plan(Backend::Landlock, &profile(), &facts);
    assert!(ll.landlock.read.contains(&PathBuf::from("/etc/hosts")));
    assert!(
        !ll.landlock
            .read
            .iter()
            .any(|p| p.starts_with("/etc/shadow") || p == Path::new("/etc"))
    );
    assert_eq!(ll.landlock.proc_hidden, [PathBuf::from("/proc/kcore")]);
    // Not root: none of it.
    facts.root = false;
    let ns = plan(Backend::Namespaces, &profile(), &facts);
    assert!(ns.unowned.is_empty() && ns.proc_masks.is_empty());
}

fn env_var<'a>(plan: &'a Plan, name: &str) -> Option<&'a str> {
    let found = plan.env.iter().find(|(k, _)| k == name);
    found.map(|(_, v)| v.to_str().unwrap())
}

#[test]
fn path_is_the_callers_readable_entries_in_order_then_the_system_dirs() {
    let home = "/zc-fabricated/home";
    let mut profile = profile();
    profile.read_only.push(format!("{home}/.pyenv").into());
    profile.read_only.push(format!("{home}/.local/bin").into());
    profile.denied.push(format!("{home}/.pyenv/secret").into());
    let mut facts = host()
        .with_dir(format!("{home}/.pyenv/shims"))
        .with_dir(format!("{home}/.pyenv/secret/bin"))
        .with_dir(format!("{home}/.local/bin"))
        .with_dir(format!("{home}/elsewhere/bin"));
    let path = format!(
        "{home}/.pyenv/shims:relative/bin:{home}/.pyenv/secret/bin:/usr/bin:{home}/elsewhere/bin:\
         {home}/.missing/bin:{home}/.local/bin:{home}/.pyenv/shims:/usr/../tmp"
    );
    facts.vars.insert("PATH".into(), path.into());
    let plan = plan(Backend::Namespaces, &profile, &facts);
    assert_eq!(
        env_var(&plan, "PATH"),
        Some(
            "/zc-fabricated/home/.pyenv/shims:/usr/bin:/zc-fabricated/home/.local/bin:\
             /usr/local/sbin:/usr/local/bin:/usr/sbin:/sbin:/bin"
        )
    );
    facts.vars.remove(std::ffi::OsStr::new("PATH"));
    let plan = super::build(Backend::Namespaces, &profile, &facts, Vec::new(), None);
    assert_eq!(env_var(&plan, "PATH"), Some(crate::profile::DEFAULT_PATH));
}

#[test]
fn the_users_git_config_is_a_validated_copy_in_the_private_home() {
    let mut facts = host();
    // Validated by the reader (`git::global`'s tests): the plan writes the copy as read.
    facts.git_global = "[user]\n\tname = \"Ada\"\n".into();
    for backend in [Backend::Namespaces, Backend::Bubblewrap, Backend::Landlock] {
        let plan = plan(backend, &profile(), &facts);
        let git = plan.home.git_global.as_ref().expect("a copy");
        assert_eq!(git.text, "[user]\n\tname = \"Ada\"\n", "{backend:?}");
        let home = if backend == Backend::Landlock {
            "/s/home"
        } else {
            "/zc-fabricated/home"
        };
        assert_eq!(git.path, Path::new(home).join(".zeroclaw-gitconfig"));
        assert_eq!(
            env_var(&plan, "GIT_CONFIG_GLOBAL"),
            git.path.to_str(),
            "{backend:?}"
        );
    }
    let unconfined = plan(Backend::None, &profile(), &facts);
    assert!(unconfined.home.git_global.is_none());
    assert!(env_var(&unconfined, "GIT_CONFIG_GLOBAL").is_none());
    // A HOME inside a root is the host's: nothing is written there.
    let mut at_home = profile();
    at_home.read_write.push("/zc-fabricated".into());
    let host_home = plan(
        Backend::Namespaces,
        &at_home,
        &facts.clone().with_dir("/zc-fabricated"),
    );
    assert!(host_home.home.git_global.is_none());
    let own = profile().set_env("GIT_CONFIG_GLOBAL", "/mine");
    let plan = plan(Backend::Namespaces, &own, &facts);
    assert_eq!(env_var(&plan, "GIT_CONFIG_GLOBAL"), Some("/mine"));
}
