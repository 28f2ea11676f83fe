//! The store's record of a session's workspace files, through the real binary: a prompt's blob
//! (`uploads/<sha256>.<ext>`) and a file the agent delivered are listed by `zeroclaw sessions
//! show` with the digest and size of the file on disk; a refused image leaves no record;
//! `session/delete` removes the records with the session. Run on SQLite and again on PostgreSQL.

use crate::support;
use crate::tools_support;

use std::fs;
use std::path::Path;

use base64::Engine as _;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use support::model_server::text_reply;
use tools_support::{Scene, Setup};

fn sessions_show(config: &Path, session: &str) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_zeroclaw"))
        .args(["sessions", "show", session, "--config-dir"])
        .arg(config)
        .env_remove("ZEROCLAW_CONFIG_DIR")
        .envs(support::store_under_test::env())
        .output()
        .expect("run zeroclaw sessions show");
    assert!(out.status.success(), "sessions show: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

fn prompt(s: &Scene, part: Value) -> Value {
    let parts = json!([{"type": "text", "text": "see attached"}, part]);
    let params = json!({"sessionId": s.session, "prompt": parts});
    s.client.request("session/prompt", params)
}

fn sha256_of(path: &Path) -> (String, usize) {
    let bytes = fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (hex::encode(Sha256::digest(&bytes)), bytes.len())
}

/// The `session_files` rows left for `session`, from the store itself.
fn records_left(s: &Scene, session: &str) -> usize {
    let sql = format!("SELECT path FROM session_files WHERE session_id = '{session}'");
    match support::store_under_test::url() {
        Some(url) => support::postgres::texts(&url, &sql).len(),
        None => {
            let conn = rusqlite::Connection::open(s.session_db()).unwrap();
            let mut stmt = conn.prepare(&sql).unwrap();
            stmt.query_map([], |_| Ok(())).unwrap().count()
        }
    }
}

#[test]
fn uploads_and_delivered_files_are_recorded_with_their_digests_until_the_session_is_deleted() {
    let s = Scene::start(Setup::level("full"));
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);

    let upload = b"zc-upload-4c1e %PDF of the quarter\n".repeat(40);
    s.model.push(text_reply("read it"));
    let blob = json!({"type": "resource", "resource": {"uri": "file:///x/q.pdf",
        "mimeType": "application/pdf", "blob": b64(&upload)}});
    let answer = prompt(&s, blob);
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");

    fs::create_dir(s.ws().join("out")).unwrap();
    let report = s.ws().join("out/report.txt");
    fs::write(&report, b"zc-delivered-77a0 the report\n".repeat(10)).unwrap();
    s.call("deliver_file", json!({"path": "out/report.txt"}))
        .assert_completed();

    let not_png = b"zc-refused-image-not-a-png".to_vec();
    let image = json!({"type": "image", "mimeType": "image/png", "data": b64(&not_png)});
    let refused = prompt(&s, image);
    assert!(refused.get("error").is_some(), "{refused}");

    let show = sessions_show(&s.config_dir(), &s.session);
    let upload_name = format!("{}.pdf", hex::encode(Sha256::digest(&upload)));
    let (upload_sha, upload_size) = sha256_of(&s.ws().join("uploads").join(&upload_name));
    let (report_sha, report_size) = sha256_of(&report);
    let is_file = |l: &&str| l.starts_with("  upload ") || l.starts_with("  delivered ");
    let lines: Vec<&str> = show.lines().filter(is_file).collect();
    assert_eq!(lines.len(), 2, "one upload and one delivery:\n{show}");
    let words = |line: &str| {
        line.split_whitespace()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let size = upload_size.to_string();
    let uploaded = [
        "upload",
        "turn",
        "1",
        &format!("uploads/{upload_name}"),
        &size,
        &upload_sha,
    ];
    assert_eq!(words(lines[0]), uploaded, "{show}");
    let size = report_size.to_string();
    let delivered = [
        "delivered",
        "turn",
        "2",
        "out/report.txt",
        &size,
        &report_sha,
    ];
    assert_eq!(words(lines[1]), delivered, "{show}");
    let refused_sha = hex::encode(Sha256::digest(&not_png));
    assert!(
        !show.contains(&refused_sha),
        "the refused image left no record:\n{show}"
    );

    assert_eq!(records_left(&s, &s.session), 2);
    let deleted = s
        .client
        .call("session/delete", json!({"sessionId": s.session}));
    assert_eq!(deleted, json!({}));
    assert_eq!(records_left(&s, &s.session), 0, "deleted with the session");
}

crate::on_postgres!(
    uploads_and_delivered_files_are_recorded_with_their_digests_until_the_session_is_deleted
);
