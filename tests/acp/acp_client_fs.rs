//! The client's unsaved buffers: a client that offers `fs.readTextFile` / `fs.writeTextFile`
//! in `initialize` is asked for the files the file tools touch (`fs/read_text_file`,
//! `fs/write_text_file`) — `file_read` sees its buffer, `file_write` and `file_edit` land in
//! it and zeroclaw leaves the disk alone — after the policy's path checks (a refused path is
//! never asked of the client). A client error, or no answer within `session_timeout_secs`,
//! fails the call with the reason and nothing falls back to the disk; without the capability
//! the disk is used as before. Run over stdio and over the daemon's WebSocket (TCP and its Unix
//! socket); every message is checked against the schema.

use crate::support;
use crate::tools_support;

use std::fs;

use serde_json::{Value, json};
use support::acp_fs::Buffers;
use tools_support::{Scene, Setup};

fn editor(read: bool, write: bool) -> Scene {
    Scene::start(Setup::level("supervised").client_fs(read, write))
}

fn diff(outcome: &tools_support::Outcome) -> Value {
    outcome
        .updates
        .iter()
        .flat_map(|u| u["content"].as_array().cloned().unwrap_or_default())
        .find(|c| c["type"] == "diff")
        .unwrap_or_else(|| panic!("no diff: {}", outcome.describe()))
}

fn read_buffer_write_and_edit_land_in_the_client() {
    let s = editor(true, true);
    let a = s.ws().join("a.txt");
    fs::write(&a, "on disk\n").unwrap();
    s.client
        .serve_files(Buffers::default().with(&a, "unsaved one\nunsaved two\n"));

    let read = s.call("file_read", json!({"path": "a.txt"}));
    read.assert_completed()
        .assert_result_contains("unsaved one\nunsaved two");
    assert!(!read.model_saw.contains("on disk"), "{}", read.describe());
    assert!(
        read.model_saw.contains("lines 1-2 of 2"),
        "{}",
        read.describe()
    );

    let write = s.call("file_write", json!({"path": "b.txt", "content": "fresh"}));
    write.assert_completed();
    let b = s.ws().join("b.txt");
    assert_eq!(
        s.client.buffers().open.get(&b).map(String::as_str),
        Some("fresh")
    );
    assert!(!b.exists(), "zeroclaw wrote the disk behind the editor");

    let edit = s.call(
        "file_edit",
        json!({"path": "a.txt", "old_string": "two", "new_string": "2"}),
    );
    edit.assert_completed();
    assert_eq!(
        s.client.buffers().open.get(&a).map(String::as_str),
        Some("unsaved one\nunsaved 2\n")
    );
    assert_eq!(fs::read_to_string(&a).unwrap(), "on disk\n");
    let diff = diff(&edit);
    assert_eq!(diff["oldText"], "unsaved one\nunsaved two\n", "{diff}");
    assert_eq!(diff["newText"], "unsaved one\nunsaved 2\n", "{diff}");

    let methods: Vec<Value> = s
        .client
        .fs_requests()
        .iter()
        .map(|m| m["method"].clone())
        .collect();
    assert!(methods.contains(&json!("fs/read_text_file")), "{methods:?}");
    assert!(
        methods.contains(&json!("fs/write_text_file")),
        "{methods:?}"
    );
    for request in s.client.fs_requests() {
        assert_eq!(request["params"]["sessionId"], s.session.as_str());
    }
    s.client.assert_valid();
}

#[test]
fn the_client_serves_reads_and_takes_writes_and_edits() {
    read_buffer_write_and_edit_land_in_the_client();
}

#[test]
fn a_path_the_policy_refuses_is_never_asked_of_the_client() {
    let s = editor(true, true);
    s.client.serve_files(Buffers::default());
    let outside = s.root.path().join("outside.txt");
    for (tool, args) in [
        ("file_read", json!({"path": "~/.ssh/id_ed25519"})),
        ("file_read", json!({"path": outside})),
        ("file_write", json!({"path": outside, "content": "x"})),
        (
            "file_edit",
            json!({"path": "~/.ssh/id_ed25519", "old_string": "a", "new_string": "b"}),
        ),
        (
            "file_write",
            json!({"path": ".git/hooks/pre-commit", "content": "x"}),
        ),
    ] {
        let out = s.call(tool, args);
        out.assert_failed()
            .assert_result_contains("denied by policy");
    }
    assert_eq!(s.client.fs_requests(), Vec::<Value>::new());
    assert!(!outside.exists());
    s.client.assert_valid();
}

#[test]
fn a_client_error_fails_the_call_with_its_message_and_nothing_falls_back_to_the_disk() {
    let s = editor(true, true);
    fs::write(s.ws().join("a.txt"), "on disk\n").unwrap();
    s.client
        .serve_files(Buffers::failing("buffer is locked by the user"));
    let read = s.call("file_read", json!({"path": "a.txt"}));
    read.assert_failed()
        .assert_result_contains("buffer is locked by the user");
    assert!(!read.model_saw.contains("on disk"), "{}", read.describe());
    let write = s.call("file_write", json!({"path": "b.txt", "content": "x"}));
    write
        .assert_failed()
        .assert_result_contains("buffer is locked by the user");
    assert!(!s.ws().join("b.txt").exists());
    let edit = s.call(
        "file_edit",
        json!({"path": "a.txt", "old_string": "disk", "new_string": "edit"}),
    );
    edit.assert_failed()
        .assert_result_contains("buffer is locked by the user");
    assert_eq!(
        fs::read_to_string(s.ws().join("a.txt")).unwrap(),
        "on disk\n"
    );
    s.client.assert_valid();
}

#[test]
fn a_client_that_does_not_answer_fails_the_call_after_the_session_timeout() {
    let s = Scene::start(
        Setup::level("supervised")
            .client_fs(true, true)
            .extra("[acp]\nsession_timeout_secs = 2"),
    );
    s.client.serve_files(Buffers {
        silent: true,
        ..Buffers::default()
    });
    let write = s.call("file_write", json!({"path": "b.txt", "content": "x"}));
    write
        .assert_failed()
        .assert_result_contains("did not answer fs/write_text_file within 2s");
    let edit = s.call(
        "file_edit",
        json!({"path": "b.txt", "old_string": "a", "new_string": "b"}),
    );
    edit.assert_failed()
        .assert_result_contains("did not answer fs/read_text_file within 2s");
    assert!(!s.ws().join("b.txt").exists(), "no fallback to the disk");
    s.client.assert_valid();
}

#[test]
fn without_the_capability_the_disk_is_used() {
    let s = editor(false, false);
    let a = s.ws().join("a.txt");
    fs::write(&a, "on disk\n").unwrap();
    s.client
        .serve_files(Buffers::default().with(&a, "unsaved\n"));
    let read = s.call("file_read", json!({"path": "a.txt"}));
    read.assert_completed().assert_result_contains("on disk");
    s.call("file_write", json!({"path": "b.txt", "content": "B"}))
        .assert_completed();
    assert_eq!(fs::read_to_string(s.ws().join("b.txt")).unwrap(), "B");
    assert_eq!(s.client.fs_requests(), Vec::<Value>::new());
    s.client.assert_valid();
}

#[test]
fn with_only_writes_an_edit_starts_from_the_disk_and_lands_in_the_client() {
    let s = editor(false, true);
    let a = s.ws().join("a.txt");
    fs::write(&a, "on disk\n").unwrap();
    s.client.serve_files(Buffers::default());
    let read = s.call("file_read", json!({"path": "a.txt"}));
    read.assert_completed().assert_result_contains("on disk");
    let edit = s.call(
        "file_edit",
        json!({"path": "a.txt", "old_string": "disk", "new_string": "buffer"}),
    );
    edit.assert_completed();
    assert_eq!(
        s.client.buffers().open.get(&a).map(String::as_str),
        Some("on buffer\n")
    );
    assert_eq!(fs::read_to_string(&a).unwrap(), "on disk\n");
    let methods: Vec<Value> = s
        .client
        .fs_requests()
        .iter()
        .map(|m| m["method"].clone())
        .collect();
    assert_eq!(methods, [json!("fs/write_text_file")]);
    s.client.assert_valid();
}

mod over_daemon {
    use support::ws_transport::{Transport, with_transport};

    use super::*;

    #[test]
    fn the_client_serves_reads_and_takes_writes_over_websocket() {
        with_transport(
            Transport::WsTcp,
            read_buffer_write_and_edit_land_in_the_client,
        );
    }

    #[test]
    fn the_client_serves_reads_and_takes_writes_over_the_unix_socket() {
        with_transport(
            Transport::WsUnix,
            read_buffer_write_and_edit_land_in_the_client,
        );
    }
}
