//! A `full` session never asks and stays confined, end to end on every Linux backend: its
//! `shell` reads the host and writes the workspace and a read-write `allowed_roots` entry, but
//! not the host (a directory standing for one), and under `[autonomy] full_host_writes` the
//! host too; at every setting neither `shell` nor the file tools write a path no child may
//! write (the fake HOME's shell start-up files, git, tool, editor and agent configuration,
//! `~/.local/bin`, a directory on the daemon's `PATH`, another live session's workspace,
//! `workspace_dir`). Judged on the host: every such path unchanged, byte for byte. With
//! `policy_checks = false` the file tools meet the kernel alone, and it holds too.
//!
//! Scenes live under `/var/tmp` (the child's `/tmp` is private) and take turns with
//! `full_shell.rs`'s: a `full` shell lists the directories around the denied paths, and a
//! sibling scene removed meanwhile would fail the mount of a root that just vanished.

use crate::support;
use crate::tools_support;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::json;
use tempfile::TempDir;

use super::full_shell::take_turn;
use support::acp_client::Permission;
use tools_support::{Scene, Setup, backend_available};

const HOST_TEXT: &str = "zc-host-text-4d19";

/// Never-writable files in the fake HOME: planted ones, and missing ones a child must not
/// create either.
const HOME_FILES: &[&str] = &[
    ".bashrc",
    ".profile",
    ".gitconfig",
    ".bash_profile",
    ".zshrc",
    ".zprofile",
    ".cargo/config.toml",
    ".npmrc",
    ".claude.json",
    ".pip/pip.conf",
];
const PLANTED_FILES: &[&str] = &[".bashrc", ".profile", ".gitconfig"];
/// Never-writable directories in the fake HOME (all planted); a child tries to add a file.
const HOME_DIRS: &[&str] = &[
    ".local/bin",
    ".codex",
    ".claude",
    ".vscode",
    ".config/fish",
    ".config/git",
    ".config/autostart",
    ".config/systemd/user",
    ".config/zed",
    ".ssh",
];

/// A `full` scene and the directories around it, all under `/var/tmp`.
struct Confined {
    s: Scene,
    /// On the daemon's `PATH`.
    bin: TempDir,
    /// Stands for a host directory outside the workspace.
    host: TempDir,
    /// A read-write `allowed_roots` entry.
    allowed: TempDir,
}

impl Confined {
    /// `None` (after a printed skip) without the backend.
    fn start(backend: &'static str, host_writes: bool, checks: bool) -> Option<Confined> {
        if !backend_available(backend) {
            return None;
        }
        let temp = || {
            tempfile::Builder::new()
                .prefix("zc-test-")
                .tempdir_in("/var/tmp")
                .expect("temp dir")
        };
        let (bin, host, allowed) = (temp(), temp(), temp());
        fs::write(host.path().join("in.txt"), HOST_TEXT).expect("host file");
        let path = format!(
            "{}:{}",
            bin.path().display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let setup = Setup::level("full")
            .backend(backend)
            .under("/var/tmp")
            .permission(Permission::Select("allow-always".into()))
            .autonomy(&format!(
                "allowed_roots = [{{ path = \"{}\", write = true }}]",
                allowed.path().display()
            ))
            .autonomy(&format!("full_host_writes = {host_writes}"))
            .autonomy(&format!("policy_checks = {checks}"))
            .env("PATH", &path);
        let s = Scene::start(setup);
        for file in PLANTED_FILES {
            fs::write(s.home.path().join(file), "# the user's own\n").expect("home file");
        }
        fs::create_dir_all(s.home.path().join(".cargo")).expect(".cargo");
        // A home toolchain: the sandbox's own read-only root, and a home entry `full` reads.
        fs::create_dir_all(s.home.path().join(".rustup")).expect(".rustup");
        for dir in HOME_DIRS {
            let dir = s.home.path().join(dir);
            fs::create_dir_all(&dir).expect("home dir");
            fs::write(dir.join("existing"), "# the user's own\n").expect("home dir file");
        }
        fs::write(bin.path().join("tool"), "#!/bin/sh\n").expect("bin file");
        let other = s.root.path().join("other");
        fs::create_dir(&other).expect("other workspace");
        fs::write(other.join("notes.txt"), "another session's\n").expect("other file");
        s.client.new_session(&other);
        Some(Confined {
            s,
            bin,
            host,
            allowed,
        })
    }

    /// Every path a child tries to write but must not: files, and a new file in each
    /// directory.
    fn targets(&self) -> Vec<PathBuf> {
        let home = self.s.home.path();
        let mut out: Vec<PathBuf> = HOME_FILES.iter().map(|f| home.join(f)).collect();
        out.extend(HOME_DIRS.iter().map(|d| home.join(d).join("planted")));
        out.push(self.bin.path().join("git"));
        out.push(self.bin.path().join("tool"));
        out.push(self.s.root.path().join("other/planted.txt"));
        out.push(self.s.root.path().join("other/notes.txt"));
        out.push(self.s.config_dir().join("workspace/planted"));
        out
    }

    /// What the host holds where the child must not write: the fake HOME, the `PATH`
    /// directory and the other session's workspace, file by file.
    fn snapshot(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        let mut out = BTreeMap::new();
        for dir in [
            self.s.home.path(),
            self.bin.path(),
            &self.s.root.path().join("other"),
        ] {
            walk(dir, &mut out);
        }
        out.insert(
            "workspace/planted exists".into(),
            vec![u8::from(
                self.s.config_dir().join("workspace/planted").exists(),
            )],
        );
        out
    }
}

fn walk(dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
    for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.insert(path.clone(), b"dir".to_vec());
            walk(&path, out);
        } else {
            out.insert(path.clone(), fs::read(&path).unwrap_or_default());
        }
    }
}

/// The differences between two snapshots, for a failure message.
fn changes(before: &BTreeMap<PathBuf, Vec<u8>>, after: &BTreeMap<PathBuf, Vec<u8>>) -> String {
    let mut out = Vec::new();
    for (path, content) in after {
        if before.get(path) != Some(content) {
            out.push(format!("changed or new: {}", path.display()));
        }
    }
    for path in before.keys().filter(|p| !after.contains_key(*p)) {
        out.push(format!("gone: {}", path.display()));
    }
    out.join("\n")
}

/// The shell tries every target, then writes the workspace, the allowed root and the host,
/// and reads the host.
fn shell_writes(c: &Confined, host_writes: bool) {
    let before = c.snapshot();
    let mut command = String::new();
    for target in c.targets() {
        let t = target.display();
        command += &format!(
            "mkdir -p \"$(dirname '{t}')\" 2>/dev/null; echo pwned >> '{t}' 2>/dev/null; "
        );
    }
    command += &format!(
        "echo ok > in-ws.txt; echo ok > '{allowed}/in-root.txt'; \
         echo ok > '{host}/out.txt' 2>/dev/null; cat '{host}/in.txt'; echo; echo finished",
        allowed = c.allowed.path().display(),
        host = c.host.path().display(),
    );
    let out = c.s.call("shell", json!({ "command": command }));
    out.assert_completed()
        .assert_result_contains("finished")
        .assert_result_contains(HOST_TEXT);
    assert!(out.permission_requests.is_empty(), "full never asks");
    let after = c.snapshot();
    assert!(
        before == after,
        "a never-writable path changed:\n{}\n{}",
        changes(&before, &after),
        out.describe()
    );
    assert!(c.s.ws().join("in-ws.txt").exists(), "{}", out.describe());
    assert!(
        c.allowed.path().join("in-root.txt").exists(),
        "the read-write allowed root was not written: {}",
        out.describe()
    );
    assert_eq!(
        c.host.path().join("out.txt").exists(),
        host_writes,
        "host writes only with full_host_writes: {}",
        out.describe()
    );
}

/// `file_write` to every target fails and changes nothing; with the policy's checks on, the
/// reason says so. Writes in the workspace and the allowed root land; the host only with
/// `full_host_writes`.
fn file_tools_write(c: &Confined, host_writes: bool, checks: bool) {
    let before = c.snapshot();
    for target in c.targets() {
        let out =
            c.s.call("file_write", json!({"path": target, "content": "pwned\n"}));
        // Without the policy's checks, a write into a directory the host does not have may
        // land in the child's private HOME: the host judges.
        if checks {
            out.assert_failed()
                .assert_result_contains("denied by policy");
        }
    }
    let edit = c.s.call(
        "file_edit",
        json!({"path": c.s.home.path().join(".bashrc"), "old_string": "own", "new_string": "pwned"}),
    );
    assert_ne!(edit.status, "completed", "{}", edit.describe());
    let _ = checks;
    let after = c.snapshot();
    assert!(
        before == after,
        "a file tool changed a never-writable path:\n{}",
        changes(&before, &after)
    );
    for path in [c.s.ws().join("tool.txt"), c.allowed.path().join("tool.txt")] {
        c.s.call("file_write", json!({"path": path, "content": "ok\n"}))
            .assert_completed();
        assert!(path.exists(), "{} was not written", path.display());
    }
    let host = c.host.path().join("tool.txt");
    let out =
        c.s.call("file_write", json!({"path": host, "content": "ok\n"}));
    assert_eq!(host.exists(), host_writes, "{}", out.describe());
    if !host_writes && checks {
        out.assert_result_contains("full_host_writes");
        out.assert_result_contains("allowed_roots");
    }
}

fn full_confined(backend: &'static str, host_writes: bool, checks: bool) {
    let _turn = take_turn();
    let Some(c) = Confined::start(backend, host_writes, checks) else {
        return;
    };
    shell_writes(&c, host_writes);
    file_tools_write(&c, host_writes, checks);
}

#[test]
fn full_writes_the_workspace_and_allowed_roots_only_namespaces() {
    full_confined("namespaces", false, true);
}

#[test]
fn full_writes_the_workspace_and_allowed_roots_only_bubblewrap() {
    full_confined("bubblewrap", false, true);
}

#[test]
fn full_writes_the_workspace_and_allowed_roots_only_landlock() {
    full_confined("landlock", false, true);
}

#[test]
fn full_host_writes_still_spares_the_never_writable_paths_namespaces() {
    full_confined("namespaces", true, true);
}

#[test]
fn full_host_writes_still_spares_the_never_writable_paths_bubblewrap() {
    full_confined("bubblewrap", true, true);
}

#[test]
fn full_host_writes_still_spares_the_never_writable_paths_landlock() {
    full_confined("landlock", true, true);
}

#[test]
fn full_file_tools_meet_the_kernel_alone_namespaces() {
    full_confined("namespaces", false, false);
}

#[test]
fn full_file_tools_meet_the_kernel_alone_bubblewrap() {
    full_confined("bubblewrap", false, false);
}

#[test]
fn full_file_tools_meet_the_kernel_alone_landlock() {
    full_confined("landlock", false, false);
}
