//! A reader that stops early (`zeroclaw doctor | head -1`) ends the command quietly: every
//! printing command, run with a stdout whose reader is already gone, exits with 141 (128 +
//! SIGPIPE, what a shell shows for a program the signal ended) and says nothing on stderr —
//! no panic (exit 101) and no backtrace.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::ws_daemon::create_token;
use serde_json::json;
use zeroclaw::config::Config;
use zeroclaw::store::{SessionRecord, Store, StoredEntry};

/// The binary with a clean `ZEROCLAW_*` environment pointing at `config_dir`.
fn zeroclaw(config_dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_zeroclaw"));
    for (name, _) in std::env::vars().filter(|(k, _)| k.starts_with("ZEROCLAW_")) {
        cmd.env_remove(name);
    }
    cmd.args(args).env("ZEROCLAW_CONFIG_DIR", config_dir);
    cmd
}

/// Runs the binary with stdout a pipe whose read end is closed, so its first write fails.
fn into_closed_pipe(config_dir: &Path, args: &[&str]) -> Output {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    zeroclaw(config_dir, args)
        .env("RUST_BACKTRACE", "1")
        .stdout(writer)
        .output()
        .expect("run zeroclaw")
}

fn assert_quiet(config_dir: &Path, args: &[&str]) {
    let out = into_closed_pipe(config_dir, args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(141),
        "zeroclaw {args:?} on a closed stdout: {stderr}"
    );
    assert!(stderr.is_empty(), "zeroclaw {args:?} said: {stderr}");
}

/// Two sessions, `sess-1` and `sess-2`, one turn each.
async fn seed_sessions(config_dir: &Path) {
    let env = std::iter::empty::<(String, String)>();
    let path = Config::load_with_env(config_dir, env).unwrap().store_path();
    let store = Store::open(&path).unwrap();
    for id in ["sess-1", "sess-2"] {
        store
            .create_session(SessionRecord {
                id: id.into(),
                agent_alias: "coder".into(),
                workspace_dir: PathBuf::from("/projects/one"),
                mcp_servers: json!([]),
                owner: None,
                created_at: 1_700_000_000_000,
                last_activity: 1_700_000_000_000,
            })
            .await
            .unwrap();
        let entry = StoredEntry {
            kind: "user".into(),
            payload: json!({"text": "hello"}),
        };
        store.append_turn(id, vec![entry]).await.unwrap();
    }
}

#[tokio::test]
async fn doctor_sessions_config_and_token_end_quietly_on_a_closed_stdout() {
    let dir = tempfile::tempdir().unwrap();
    seed_sessions(dir.path()).await;
    let config = dir.path();
    create_token(config, "ci");
    // An audit log with one record: the deletion.
    let deleted = zeroclaw(config, &["sessions", "delete", "sess-2"])
        .output()
        .unwrap();
    assert!(deleted.status.success(), "{deleted:?}");
    assert_quiet(config, &["doctor"]);
    assert_quiet(config, &["doctor", "--json"]);
    assert_quiet(config, &["sessions", "show", "sess-1"]);
    assert_quiet(config, &["sessions", "list"]);
    assert_quiet(config, &["config", "show"]);
    assert_quiet(config, &["config", "check"]);
    assert_quiet(config, &["token", "list"]);
    for audit in [&["list"][..], &["show", "1"], &["verify"], &["export"]] {
        assert_quiet(config, &[&["audit"][..], audit].concat());
    }
}
