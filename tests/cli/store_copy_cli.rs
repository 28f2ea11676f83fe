//! `zeroclaw store copy` through the real binary: a SQLite installation's sessions and its
//! audit log move to PostgreSQL, where `zeroclaw audit export` prints the same records and
//! `audit verify` passes; a second copy into the same database is refused. Into a database
//! daemons already use, the audit log comes as an imported segment that verifies, and an
//! edited imported record is named. Skipped (printed) without a PostgreSQL server, a failure
//! with `CI=true`.

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
    assert!(
        error.contains("is already in") && error.contains("nothing was copied"),
        "{error}"
    );
    assert_eq!(
        stdout_ok(&config_dir, on_pg, &["audit", "export"]),
        exported,
        "a refused copy writes nothing"
    );
}

/// The seq of the first listed line (`audit list` lines start with it).
fn first_seq(listed: &str) -> i64 {
    listed
        .lines()
        .next()
        .and_then(|l| l.split_whitespace().next())
        .and_then(|seq| seq.parse().ok())
        .unwrap_or_else(|| panic!("no record listed: {listed}"))
}

#[test]
fn copy_into_a_store_daemons_use_imports_the_audit_log_as_a_verifiable_segment() {
    let Some(db) = TestDb::create() else { return };
    // The installation that joins: a SQLite store with a session and its audit records.
    let mut joining = Scene::start(Setup::level("full"));
    joining
        .call("shell", json!({"command": "echo from-the-joining-host"}))
        .assert_completed();
    let config_dir = joining.config_dir();
    // Its writer anchors the head (`audit.head`) a second after the last record; an
    // installation that ran a while has one.
    let anchor = config_dir.join("workspace/sessions/audit.head");
    let waited = std::time::Instant::now();
    while !anchor.exists() {
        assert!(
            waited.elapsed() < std::time::Duration::from_secs(60),
            "no anchor at {}",
            anchor.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    joining.client.shutdown();
    let sqlite = config_dir.join("workspace/sessions/acp-sessions.db");
    let from = format!("sqlite:{}", sqlite.display());
    let source = stdout_ok(&config_dir, None, &["audit", "export"]);
    let imported = source.lines().count();

    // A process of the cluster, running on PostgreSQL through the copy.
    let pg_store = format!("[store]\nurl = \"{}\"\n", db.url);
    let cluster = Scene::start(Setup::level("full").extra(&pg_store));
    cluster
        .call("shell", json!({"command": "echo before-the-copy"}))
        .assert_completed();
    let on_pg = Some(db.url.as_str());
    let before = stdout_ok(&config_dir, on_pg, &["audit", "export"])
        .lines()
        .count();
    assert!(before >= 3, "the cluster's records are there");

    let copied = stdout_ok(
        &config_dir,
        None,
        &["store", "copy", "--from", &from, "--to", &db.url],
    );
    assert!(copied.contains("copied 1 sessions"), "{copied}");
    assert!(
        copied.contains(&format!("imported {imported} audit records")),
        "{copied}"
    );
    cluster
        .call("shell", json!({"command": "echo after-the-copy"}))
        .assert_completed();

    // Verified from the joining installation's config dir (its anchor names a record of the
    // imported segment) and from the cluster's.
    for dir in [config_dir.clone(), cluster.config_dir()] {
        let verified = stdout_ok(&dir, on_pg, &["audit", "verify"]);
        assert!(verified.starts_with("ok: "), "{verified}");
        let records: usize = verified["ok: ".len()..]
            .split_whitespace()
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        assert!(records > before + 1 + imported, "{verified}");
    }
    let imports = stdout_ok(
        &config_dir,
        on_pg,
        &["audit", "list", "--kind", "audit.import"],
    );
    assert_eq!(imports.lines().count(), 1, "{imports}");
    let import_seq = first_seq(&imports);
    assert!(import_seq as usize > before, "{imports}");
    let listed = stdout_ok(
        &config_dir,
        on_pg,
        &["audit", "list", "--session", &joining.session],
    );
    assert!(listed.contains("tool.exec"), "{listed}");
    let mut seqs = listed.lines().map(first_seq);
    assert!(
        seqs.all(|seq| seq > import_seq && seq <= import_seq + imported as i64),
        "the imported records follow the import record: {listed}"
    );
    let sessions = stdout_ok(&config_dir, on_pg, &["sessions", "list"]);
    assert!(
        sessions.contains(&joining.session) && sessions.contains(&cluster.session),
        "{sessions}"
    );

    // An edited imported record breaks the chain there.
    let exec = stdout_ok(
        &config_dir,
        on_pg,
        &[
            "audit",
            "list",
            "--session",
            &joining.session,
            "--kind",
            "tool.exec",
        ],
    );
    let edited = first_seq(&exec);
    let changed = db.execute(&format!(
        "UPDATE audit_records SET body = replace(body, 'from-the-joining-host', 'forged') \
         WHERE seq = {edited}"
    ));
    assert_eq!(changed, 1);
    let out = zeroclaw(&config_dir, on_pg, &["audit", "verify"]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{said}");
    assert!(
        said.contains(&format!("broken at seq {edited}:")) && said.contains("imported record"),
        "{said}"
    );
}
