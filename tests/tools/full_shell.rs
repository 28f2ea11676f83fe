//! `shell` at autonomy level `full`, end to end on every Linux backend: under `[autonomy]
//! full_host_writes` the command reads and writes a directory outside the session cwd (checked
//! from outside; without it, see `full_confined.rs`), while the same command in `supervised`
//! reaches nothing there; in `full` the forbidden paths (a fake `~/.ssh` key,
//! the session database) stay unreadable and unwritable, `.git/hooks` stays read-only, and the
//! child's HOME stays private — all judged from outside: files unchanged, canaries never seen.
//! A repository the agent initialises lands validated, and what validation refused is told to
//! the model in the tool result.
//!
//! Every scene lives under `/var/tmp` (the sandbox gives each child a private `/tmp`, so a
//! scene under `/tmp` would prove nothing) and outside any repository. The tests take turns:
//! a `full` shell lists the directories around the denied paths, and a sibling scene removed
//! meanwhile would fail the mount of a root that just vanished.

use crate::support;
use crate::tools_support;

use std::fs;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};

use serde_json::json;

use support::acp_client::Permission;
use tools_support::{KEY_CANARY, Scene, Setup, backend_available};

const OUTSIDE_TEXT: &str = "zc-outside-text-51e0";
const HOME_TEXT: &str = "zc-home-notes-7c2a";
const SQLITE_MAGIC: &str = "SQLite format 3";

static TURNS: Mutex<()> = Mutex::new(());

/// One `full` scene under `/var/tmp` at a time, across this file and `full_confined.rs`.
pub(crate) fn take_turn() -> MutexGuard<'static, ()> {
    TURNS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A scene under `/var/tmp` at `level` on `backend` whose client approves everything, with
/// `root/elsewhere/in.txt` outside the cwd; `None` (after a printed skip) without the backend.
fn scene(level: &str, backend: &'static str) -> Option<Scene> {
    scene_with(level, backend, "full_host_writes = false")
}

/// [`scene`] with one more `[autonomy]` line.
fn scene_with(level: &str, backend: &'static str, line: &str) -> Option<Scene> {
    if !backend_available(backend) {
        return None;
    }
    let setup = Setup::level(level)
        .autonomy(line)
        .backend(backend)
        .under("/var/tmp")
        .permission(Permission::Select("allow-always".into()));
    let s = Scene::start(setup);
    fs::create_dir(elsewhere(&s)).expect("elsewhere");
    fs::write(elsewhere(&s).join("in.txt"), OUTSIDE_TEXT).expect("in.txt");
    Some(s)
}

fn elsewhere(s: &Scene) -> PathBuf {
    s.root.path().join("elsewhere")
}

/// `cat`s `in.txt` and writes `out.txt` outside the cwd, then a file inside and one in `$HOME`.
fn reach_outside(s: &Scene) -> tools_support::Outcome {
    let dir = elsewhere(s);
    let command = format!(
        "cat {in_}; echo written-by-shell > {out}; echo inside > inside.txt; \
         echo private > \"$HOME/zc-home-probe\"; echo finished",
        in_ = dir.join("in.txt").display(),
        out = dir.join("out.txt").display(),
    );
    s.call("shell", json!({ "command": command }))
}

fn full_reaches_outside(backend: &'static str) {
    let _turn = take_turn();
    let Some(s) = scene_with("full", backend, "full_host_writes = true") else {
        return;
    };
    let out = reach_outside(&s);
    out.assert_completed()
        .assert_result_contains(OUTSIDE_TEXT)
        .assert_result_contains("finished");
    assert_eq!(
        fs::read_to_string(elsewhere(&s).join("out.txt"))
            .ok()
            .as_deref(),
        Some("written-by-shell\n"),
        "the file outside the cwd was written: {}",
        out.describe()
    );
    assert!(s.ws().join("inside.txt").exists(), "{}", out.describe());
    assert!(
        !s.home.path().join("zc-home-probe").exists(),
        "the child's HOME is private, not the real one: {}",
        out.describe()
    );
    assert!(out.permission_requests.is_empty(), "full never asks");
}

fn supervised_stays_in_the_cwd(backend: &'static str) {
    let _turn = take_turn();
    let Some(s) = scene("supervised", backend) else {
        return;
    };
    let mark = s.mark();
    let out = reach_outside(&s);
    out.assert_result_contains("finished");
    assert!(
        s.ws().join("inside.txt").exists(),
        "the command ran: {}",
        out.describe()
    );
    assert!(
        !s.seen_since(mark).contains(OUTSIDE_TEXT),
        "a supervised shell read outside the cwd: {}",
        out.describe()
    );
    assert!(
        !elsewhere(&s).join("out.txt").exists(),
        "a supervised shell wrote outside the cwd: {}",
        out.describe()
    );
}

/// `hooks`: whether the backend keeps `.git/hooks` read-only (the Landlock rung does not, see
/// `injection.rs`; the policy refuses it there for the file tools).
fn full_still_denies_forbidden_paths(backend: &'static str, hooks: bool) {
    let _turn = take_turn();
    let Some(s) = scene("full", backend) else {
        return;
    };
    fs::create_dir_all(s.ws().join(".git/hooks")).expect("hooks dir");
    fs::write(s.home.path().join("notes.txt"), HOME_TEXT).expect("home notes");
    s.call("file_write", json!({"path": "seed.txt", "content": "seed"}))
        .assert_completed();
    let db = s.session_db();
    assert!(db.exists(), "the session database exists");
    let key = s.home.path().join(".ssh/id_ed25519");
    let key_before = fs::read(&key).expect("key");
    let mark = s.mark();
    let command = format!(
        "cat {notes}; cat {key}; head -c 64 {db}; echo pwned >> {key}; \
         echo pwned > .git/hooks/pre-commit; echo done-trying",
        notes = s.home.path().join("notes.txt").display(),
        key = key.display(),
        db = db.display(),
    );
    let out = s.call("shell", json!({ "command": command }));
    out.assert_completed()
        .assert_result_contains("done-trying")
        .assert_result_contains(HOME_TEXT);
    let seen = s.seen_since(mark);
    assert!(
        !seen.contains(KEY_CANARY),
        "the key leaked: {}",
        out.describe()
    );
    assert!(
        !seen.contains(SQLITE_MAGIC),
        "the session database was read: {}",
        out.describe()
    );
    assert_eq!(fs::read(&key).expect("key"), key_before, "the key changed");
    if hooks {
        let hook = s.ws().join(".git/hooks/pre-commit");
        assert!(
            !fs::metadata(&hook).is_ok_and(|m| m.len() > 0),
            "a hook was planted: {}",
            out.describe()
        );
    }
}

#[test]
fn full_shell_reaches_outside_the_cwd_namespaces() {
    full_reaches_outside("namespaces");
}

#[test]
fn full_shell_reaches_outside_the_cwd_bubblewrap() {
    full_reaches_outside("bubblewrap");
}

#[test]
fn full_shell_reaches_outside_the_cwd_landlock() {
    full_reaches_outside("landlock");
}

#[test]
fn supervised_shell_stays_in_the_cwd_namespaces() {
    supervised_stays_in_the_cwd("namespaces");
}

#[test]
fn supervised_shell_stays_in_the_cwd_bubblewrap() {
    supervised_stays_in_the_cwd("bubblewrap");
}

#[test]
fn supervised_shell_stays_in_the_cwd_landlock() {
    supervised_stays_in_the_cwd("landlock");
}

#[test]
fn full_shell_still_denies_forbidden_and_protected_paths_namespaces() {
    full_still_denies_forbidden_paths("namespaces", true);
}

#[test]
fn full_shell_still_denies_forbidden_and_protected_paths_bubblewrap() {
    full_still_denies_forbidden_paths("bubblewrap", true);
}

#[test]
fn full_shell_still_denies_forbidden_paths_landlock() {
    full_still_denies_forbidden_paths("landlock", false);
}

/// The agent initialises a repository (the scene has none): `git init` works confined, the
/// repository lands validated, and the refused key is told to the client and the model in
/// one line.
fn full_git_init_refusal_reaches_the_model(backend: &'static str) {
    let _turn = take_turn();
    let Some(s) = scene("full", backend) else {
        return;
    };
    let command = "git init -q && git config user.name zc && \
                   git config core.fsmonitor /bin/false && echo inited";
    let out = s.call("shell", json!({ "command": command }));
    out.assert_completed()
        .assert_result_contains("inited")
        .assert_result_contains(
            "git: refused core.fsmonitor in .git/config (runs a program outside the sandbox)",
        );
    // The accepted bytes land as git wrote them: only the refused key's line goes.
    let config = fs::read_to_string(s.ws().join(".git/config")).unwrap_or_default();
    assert!(
        config.contains("\tname = zc\n") && !config.contains("fsmonitor"),
        "the repository did not land validated: {config:?}\n{}",
        out.describe()
    );
}

#[test]
fn full_git_init_refusal_reaches_the_model_namespaces() {
    full_git_init_refusal_reaches_the_model("namespaces");
}

#[test]
fn full_git_init_refusal_reaches_the_model_bubblewrap() {
    full_git_init_refusal_reaches_the_model("bubblewrap");
}
