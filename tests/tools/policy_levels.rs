//! The autonomy levels end to end: `readonly` rejects writes and mutating commands without
//! asking while reads still work; `full` never asks, reaches paths outside the session cwd,
//! and still denies forbidden paths.

use crate::support;
use crate::tools_support;

use std::fs;

use serde_json::json;

use support::acp_client::Permission;
use tools_support::{ENV_CANARY, KEY_CANARY, Scene, Setup};

/// A client that would approve anything: a refusal must come from the policy.
fn approving(level: &str) -> Setup {
    Setup::level(level).permission(Permission::Select("allow-always".into()))
}

#[test]
fn readonly_rejects_a_write_without_asking() {
    let s = Scene::start(approving("readonly"));
    let out = s.call("file_write", json!({"path": "a.txt", "content": "A"}));
    out.assert_failed()
        .assert_result_contains("denied by policy");
    assert!(out.permission_requests.is_empty(), "{}", out.describe());
    assert!(!s.ws().join("a.txt").exists());
}

#[test]
fn readonly_rejects_an_edit_and_a_mutating_command_without_asking() {
    let s = Scene::start(approving("readonly"));
    fs::write(s.ws().join("a.txt"), "keep").unwrap();
    let edit = s.call(
        "file_edit",
        json!({"path": "a.txt", "old_string": "keep", "new_string": "lost"}),
    );
    edit.assert_failed()
        .assert_result_contains("denied by policy");
    let rm = s.call("shell", json!({"command": "rm -f a.txt"}));
    rm.assert_failed()
        .assert_result_contains("denied by policy");
    assert!(edit.permission_requests.is_empty() && rm.permission_requests.is_empty());
    assert_eq!(fs::read_to_string(s.ws().join("a.txt")).unwrap(), "keep");
}

#[test]
fn readonly_still_reads_and_searches() {
    let s = Scene::start(approving("readonly"));
    fs::write(s.ws().join("a.txt"), "visible-text").unwrap();
    s.call("file_read", json!({"path": "a.txt"}))
        .assert_completed()
        .assert_result_contains("visible-text");
    s.call("shell", json!({"command": "cat a.txt"}))
        .assert_completed()
        .assert_result_contains("visible-text");
}

#[test]
fn full_never_asks_reads_outside_the_cwd_and_writes_there_only_when_named() {
    let s = Scene::start(Setup::level("full").permission(Permission::Select("reject-once".into())));
    let outside = s.root.path().join("outside.txt");
    fs::write(s.root.path().join("seen.txt"), "outside-text").unwrap();
    s.call("file_read", json!({"path": s.root.path().join("seen.txt")}))
        .assert_completed()
        .assert_result_contains("outside-text");
    let write = s.call(
        "file_write",
        json!({"path": outside.to_string_lossy(), "content": "out"}),
    );
    write
        .assert_failed()
        .assert_result_contains("allowed_roots")
        .assert_result_contains("full_host_writes");
    assert!(!outside.exists());
    fs::create_dir(s.ws().join("junk")).unwrap();
    let rm = s.call("shell", json!({"command": "rm -rf junk"}));
    rm.assert_completed();
    assert!(!s.ws().join("junk").exists());
    assert!(s.client.permission_requests().is_empty(), "full never asks");

    let s = Scene::start(Setup::level("full").autonomy("full_host_writes = true"));
    let outside = s.root.path().join("outside.txt");
    s.call(
        "file_write",
        json!({"path": outside.to_string_lossy(), "content": "out"}),
    )
    .assert_completed();
    assert_eq!(fs::read_to_string(&outside).unwrap(), "out");
}

#[test]
fn full_still_denies_forbidden_paths() {
    let s = Scene::start(Setup::level("full"));
    let key = s.home.path().join(".ssh/id_ed25519");
    let out = s.call("file_read", json!({"path": key.to_string_lossy()}));
    out.assert_failed()
        .assert_result_contains("denied by policy");
    let leak = s.everything_seen();
    assert!(
        !leak.contains(KEY_CANARY),
        "the key never reaches client or model"
    );
}

#[test]
fn supervised_denies_paths_outside_the_workspace_without_asking() {
    let s = Scene::start(approving("supervised"));
    let outside = s.root.path().join("outside.txt");
    let out = s.call(
        "file_write",
        json!({"path": "../outside.txt", "content": "out"}),
    );
    out.assert_failed()
        .assert_result_contains("denied by policy");
    assert!(out.permission_requests.is_empty(), "{}", out.describe());
    assert!(!outside.exists());
}

#[test]
fn tool_children_get_the_allowlisted_environment_only() {
    let s = Scene::start(Setup::level("full"));
    let out = s.call("shell", json!({"command": "env; echo env-listed"}));
    out.assert_completed().assert_result_contains("env-listed");
    assert!(
        !out.model_saw.contains(ENV_CANARY) && !out.model_saw.contains("ZEROCLAW_providers"),
        "the daemon's variables (and its provider key) never reach a child: {}",
        out.describe()
    );
}
