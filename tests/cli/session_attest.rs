//! `zeroclaw sessions attest ID` through the real binary: a supervised session's signed record
//! (in-toto Statement in a DSSE envelope) lists its principal, agent, model, each tool call
//! with its decision, approval, confinement report and exit, and the checkpoint covering its
//! records; `zeroclaw attest verify FILE --key PUB` passes it with only the public key, and
//! refuses it after a one-byte edit or with another key; a call's connections through the
//! egress proxy are listed under it. Again on PostgreSQL.

use std::path::Path;
use std::process::{Command, Output};

use base64::Engine;
use serde_json::{Value, json};

use crate::audit_log::bodies;
use crate::audit_tlog::Keys;
use crate::support;
use crate::support::acp_client::Permission;
use crate::tools_support::{Scene, Setup};

/// `zeroclaw ARGS`; with a config dir, in the environment the session ran with (its agent).
fn zeroclaw(args: &[&str], config_dir: Option<&Path>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_zeroclaw"));
    cmd.args(args).env_remove("ZEROCLAW_CONFIG_DIR");
    if let Some(dir) = config_dir {
        cmd.arg("--config-dir")
            .arg(dir)
            .envs(support::store_under_test::env())
            .envs(support::acp_client::model_env("http://127.0.0.1:9"));
    }
    cmd.output().unwrap()
}

fn verify(file: &Path, key: &Path) -> Output {
    zeroclaw(
        &[
            "attest",
            "verify",
            file.to_str().unwrap(),
            "--key",
            key.to_str().unwrap(),
        ],
        None,
    )
}

#[test]
fn a_session_attestation_verifies_offline_and_not_after_a_one_byte_edit() {
    let keys = Keys::new();
    let setup =
        keys.on(Setup::level("supervised").permission(Permission::Select("allow-once".into())));
    let mut s = Scene::start(setup);
    s.call("shell", json!({"command": "echo hi"}))
        .assert_completed();
    s.call("file_write", json!({"path": "a.txt", "content": "A"}))
        .assert_completed();
    s.client
        .call("session/close", json!({"sessionId": s.session}));
    s.client.shutdown();
    let config_dir = s.config_dir();
    let count = bodies(&config_dir).len();

    let out = zeroclaw(&["sessions", "attest", &s.session], Some(&config_dir));
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let envelope: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(envelope["payloadType"], "application/vnd.in-toto+json");
    let payload = base64::engine::general_purpose::STANDARD
        .decode(envelope["payload"].as_str().unwrap())
        .unwrap();
    let statement: Value = serde_json::from_slice(&payload).unwrap();
    assert_eq!(statement["_type"], "https://in-toto.io/Statement/v1");
    let predicate = &statement["predicate"];
    assert_eq!(predicate["session"], s.session.as_str());
    assert!(predicate["principal"].is_string(), "{predicate}");
    assert!(predicate["agent"].is_string(), "{predicate}");
    assert_eq!(predicate["model"], "m", "{predicate}");
    let call = &predicate["tool_calls"][0];
    assert_eq!(call["tool"], "shell", "{call}");
    assert_eq!(call["command"], "echo hi", "{call}");
    assert_eq!(call["args_sha256"].as_str().map(str::len), Some(64));
    assert_eq!(call["decision"]["decision"], "allow", "{call}");
    assert!(call["confinement"]["backend"].is_string(), "{call}");
    assert!(call["confinement"]["enforcement"].is_object(), "{call}");
    assert_eq!(call["exit"]["exit"]["code"], 0, "{call}");
    let write = &predicate["tool_calls"][1];
    assert_eq!(write["tool"], "file_write", "{write}");
    assert_eq!(write["path"], "a.txt", "{write}");
    assert_eq!(write["decision"]["decision"], "ask", "{write}");
    assert_eq!(write["approval"]["option_kind"], "allow_once", "{write}");
    assert_eq!(predicate["checkpoint"]["tree_size"], count, "{predicate}");

    let outside = tempfile::tempdir().unwrap();
    let file = outside.path().join("session.dsse.json");
    std::fs::write(&file, &text).unwrap();
    let out = verify(&file, &keys.public());
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{said}{out:?}");
    assert!(
        said.starts_with(&format!("ok: session {}", s.session)),
        "{said}"
    );

    // One byte of the payload changed (a base64 character that still decodes).
    let encoded = envelope["payload"].as_str().unwrap();
    let at = encoded.len() / 2;
    let old = encoded.as_bytes()[at];
    let new = if old == b'A' { 'B' } else { 'A' };
    let mut edited = encoded.to_owned();
    edited.replace_range(at..at + 1, &new.to_string());
    let edited_file = outside.path().join("edited.json");
    std::fs::write(&edited_file, text.replacen(encoded, &edited, 1)).unwrap();
    let out = verify(&edited_file, &keys.public());
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("no signature of the key"), "{said}");

    // Another key.
    let other = Keys::new();
    let out = verify(&file, &other.public());
    assert!(!out.status.success());
}

crate::on_postgres!(a_session_attestation_verifies_offline_and_not_after_a_one_byte_edit);

/// A call's connections through the egress proxy (its `network.connection` records) are
/// listed under the call in the attestation, with the name, port, decision and rule.
#[test]
fn a_calls_proxied_connections_are_listed_under_it() {
    if !crate::tools_support::backend_available("namespaces") || !support::have_program("curl") {
        return;
    }
    let keys = Keys::new();
    let network = "[sandbox.network]\nmode = \"proxy\"\nallow_domains = [\"files.example\"]\n";
    let setup = keys.on(Setup::level("full").backend("namespaces").extra(network));
    let mut s = Scene::start(setup);
    let command = "curl -sS -o /dev/null -w \"other %{http_code}\\n\" http://other.example/x";
    s.call("shell", json!({ "command": command }))
        .assert_completed()
        .assert_result_contains("other 403");
    s.client
        .call("session/close", json!({"sessionId": s.session}));
    s.client.shutdown();
    let out = zeroclaw(&["sessions", "attest", &s.session], Some(&s.config_dir()));
    assert!(out.status.success(), "{out:?}");
    let envelope: Value = serde_json::from_slice(&out.stdout).unwrap();
    let payload = base64::engine::general_purpose::STANDARD
        .decode(envelope["payload"].as_str().unwrap())
        .unwrap();
    let statement: Value = serde_json::from_slice(&payload).unwrap();
    let call = &statement["predicate"]["tool_calls"][0];
    assert_eq!(call["tool"], "shell", "{call}");
    let network = call["network"]
        .as_array()
        .unwrap_or_else(|| panic!("{call}"));
    assert_eq!(network.len(), 1, "{call}");
    assert_eq!(network[0]["name"], "other.example", "{call}");
    assert_eq!(network[0]["port"], 80, "{call}");
    assert_eq!(network[0]["via"], "http", "{call}");
    assert_eq!(network[0]["decision"], "deny", "{call}");
    assert_eq!(network[0]["rule"], "not_in_allow_domains", "{call}");
    let enforcement = &call["confinement"]["enforcement"];
    assert!(
        enforcement["checked"]["held"]
            .as_array()
            .is_some_and(|h| !h.is_empty()),
        "the inside check is in the call's confinement report: {call}"
    );
}
