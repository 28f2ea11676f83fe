//! `zeroclaw store copy` through the real binary: a SQLite installation's sessions and its
//! audit log move to PostgreSQL, where `zeroclaw audit export` prints the same records and
//! `audit verify` passes; a second copy into the same database is refused. Skipped (printed)
//! without a PostgreSQL server, a failure with `CI=true`.

use crate::support;
use crate::tools_support;

use std::path::Path;
use std::process::{Command, Output};

use serde_json::json;
use support::postgres::TestDb;
use tools_support::{Scene, Setup};

fn zeroclaw(config_dir: &Path, store_url: Option<&str>, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_zeroclaw"));
    cmd.args(args)
        .arg("--config-dir")
        .arg(config_dir)
        .env_remove("ZEROCLAW_CONFIG_DIR")
        .env_remove("ZEROCLAW_store__url");
    if let Some(url) = store_url {
        cmd.env("ZEROCLAW_store__url", url);
    }
    cmd.output().expect("run zeroclaw")
}

fn stdout_ok(config_dir: &Path, store_url: Option<&str>, args: &[&str]) -> String {
    let out = zeroclaw(config_dir, store_url, args);
    assert!(
        out.status.success(),
        "zeroclaw {args:?}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn copy_moves_the_audit_log_with_the_sessions() {
    let Some(db) = TestDb::create() else { return };
    let mut s = Scene::start(Setup::level("full"));
    s.call("shell", json!({"command": "echo copied"}))
        .assert_completed();
    s.client.shutdown();
    let config_dir = s.config_dir();
    let sqlite = config_dir.join("workspace/sessions/acp-sessions.db");
    let from = format!("sqlite:{}", sqlite.display());

    let exported = stdout_ok(&config_dir, None, &["audit", "export"]);
    let records = exported.lines().count();
    assert!(records >= 3, "{exported}");

    let copied = stdout_ok(
        &config_dir,
        None,
        &["store", "copy", "--from", &from, "--to", &db.url],
    );
    assert!(copied.contains("copied 1 sessions"), "{copied}");
    assert!(
        copied.contains(&format!("copied {records} audit records")),
        "{copied}"
    );

    let on_pg = Some(db.url.as_str());
    assert_eq!(
        stdout_ok(&config_dir, on_pg, &["audit", "export"]),
        exported
    );
    let verified = stdout_ok(&config_dir, on_pg, &["audit", "verify"]);
    assert!(
        verified.starts_with(&format!("ok: {records} records")),
        "{verified}"
    );
    let listed = stdout_ok(&config_dir, on_pg, &["sessions", "list"]);
    assert!(listed.contains(&s.session), "{listed}");

    let again = zeroclaw(
        &config_dir,
        None,
        &["store", "copy", "--from", &from, "--to", &db.url],
    );
    assert!(!again.status.success());
    let error = String::from_utf8_lossy(&again.stderr);
    assert!(error.contains("is not empty"), "{error}");
}
