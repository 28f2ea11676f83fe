//! The verifiable audit log through the real binary: `audit keygen` writes a key pair safely;
//! a process with `[audit] signing_key_file` signs checkpoints of the Merkle tree over its
//! records, the last one as it exits (end of input, SIGTERM), so the final anchor and
//! checkpoint cover its last record (`session.close`); `audit verify` then names what is wrong
//! after a truncation below a checkpoint, a checkpoint of another key, a history rewritten
//! before or between two checkpoints (consistency proof), and a forged record appended after
//! the last one; `audit prove` gives a proof `audit check-proof` checks with only the public
//! key. The suites run again on PostgreSQL (`on_postgres::…`).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use sha2::Digest;

use crate::audit_log::{
    Copy, bodies, broken_at, copy_of, pg, query_texts, stdout_ok, tamper, zeroclaw_audit,
};
use crate::support;
use crate::tools_support::{Scene, Setup};

const KEY_NAME: &str = "test.example/audit";

/// A key pair made by `zeroclaw audit keygen` in its own temp dir.
pub(crate) struct Keys {
    dir: tempfile::TempDir,
}

impl Keys {
    pub(crate) fn new() -> Keys {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("audit.key");
        stdout_ok(
            dir.path(),
            &["keygen", "--out", out.to_str().unwrap(), "--name", KEY_NAME],
        );
        Keys { dir }
    }

    fn private(&self) -> PathBuf {
        self.dir.path().join("audit.key")
    }

    pub(crate) fn public(&self) -> PathBuf {
        self.dir.path().join("audit.key.pub")
    }

    fn setup(&self) -> Setup {
        self.on(Setup::level("full"))
    }

    /// `setup` with this key as `[audit] signing_key_file`.
    pub(crate) fn on(&self, setup: Setup) -> Setup {
        setup.extra(&format!(
            "[audit]\nsigning_key_file = \"{}\"\n",
            self.private().display()
        ))
    }
}

/// The stored checkpoint sizes, smallest first.
fn checkpoint_sizes(config_dir: &Path) -> Vec<u64> {
    let sql = match pg() {
        Some(_) => "SELECT CAST(tree_size AS TEXT) FROM audit_checkpoints ORDER BY tree_size",
        None => "SELECT CAST(tree_size AS TEXT) FROM checkpoints ORDER BY tree_size",
    };
    query_texts(config_dir, sql)
        .iter()
        .map(|s| s.parse().unwrap())
        .collect()
}

/// Replaces record `seq`'s body with `edit(body)` and rewrites the chain from there on, as
/// someone who can write the (unkeyed) log would: the chain verifies again.
fn rewrite_history(config_dir: &Path, seq: i64, edit: impl Fn(&str) -> String) {
    let rows: Vec<(i64, String, String)> = query_texts(
        config_dir,
        "SELECT CAST(seq AS TEXT) || '|' || prev_hash || '|' || body FROM records ORDER BY seq",
    )
    .iter()
    .map(|line| {
        let mut parts = line.splitn(3, '|');
        let seq = parts.next().unwrap().parse().unwrap();
        let prev = parts.next().unwrap().to_owned();
        (seq, prev, parts.next().unwrap().to_owned())
    })
    .collect();
    let mut prev: Option<String> = None;
    for (at, stored_prev, body) in rows.into_iter().filter(|(s, _, _)| *s >= seq) {
        let body = if at == seq { edit(&body) } else { body };
        let prev_hash = prev.take().unwrap_or(stored_prev);
        let hash = hex::encode(sha2::Sha256::digest(format!("{prev_hash}\n{body}")));
        tamper(
            config_dir,
            &format!(
                "UPDATE records SET body = '{}', prev_hash = '{prev_hash}', hash = '{hash}' \
                 WHERE seq = {at}",
                body.replace('\'', "''")
            ),
        );
        prev = Some(hash);
    }
}

/// A copy of the log without its anchor file, so only the checkpoints can catch a change.
fn unanchored_copy(config_dir: &Path) -> Copy {
    let copy = copy_of(config_dir);
    let _ = std::fs::remove_file(copy.path().join("workspace/sessions/audit.head"));
    copy
}

fn verify_output(config_dir: &Path, extra: &[&str]) -> String {
    let mut args = vec!["verify"];
    args.extend_from_slice(extra);
    let out = zeroclaw_audit(config_dir, &args);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn seq_of(records: &[Value], pred: impl Fn(&Value) -> bool) -> i64 {
    records
        .iter()
        .find(|r| pred(r))
        .and_then(|r| r["seq"].as_i64())
        .expect("a matching record")
}

#[test]
fn keygen_writes_a_private_key_only_its_owner_reads_and_never_replaces_a_key() {
    use std::os::unix::fs::PermissionsExt;
    let keys = Keys::new();
    let mode = std::fs::metadata(keys.private())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let private = std::fs::read_to_string(keys.private()).unwrap();
    let public = std::fs::read_to_string(keys.public()).unwrap();
    assert!(
        private.starts_with(&format!("PRIVATE+KEY+{KEY_NAME}+")),
        "{private}"
    );
    assert!(public.starts_with(&format!("{KEY_NAME}+")), "{public}");
    let again = zeroclaw_audit(
        keys.dir.path(),
        &["keygen", "--out", keys.private().to_str().unwrap()],
    );
    assert!(!again.status.success());
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("not replacing a key"),
        "{again:?}"
    );
    assert_eq!(std::fs::read_to_string(keys.private()).unwrap(), private);
}

#[test]
fn the_final_anchor_and_checkpoint_cover_session_close_at_end_of_input() {
    let keys = Keys::new();
    let mut s = Scene::start(keys.setup());
    s.call("shell", json!({"command": "echo 1"}))
        .assert_completed();
    s.client
        .call("session/close", json!({"sessionId": s.session}));
    // End of input right after the answer: the process exits at once.
    assert!(s.client.shutdown().success());
    let config_dir = s.config_dir();
    let records = bodies(&config_dir);
    let count = records.len();
    assert_eq!(records[count - 1]["kind"], "session.close", "{records:#?}");
    let verified = stdout_ok(&config_dir, &["verify", "--all-signed"]);
    assert!(
        verified.contains(&format!("anchored at seq {count}")),
        "{verified}"
    );
    assert!(
        verified.contains(&format!("latest size {count} ")),
        "{verified}"
    );
    let note = stdout_ok(&config_dir, &["checkpoint", "export"]);
    assert!(
        note.starts_with(&format!("{KEY_NAME}\n{count}\n")),
        "{note}"
    );
    assert!(
        note.contains(&format!("\n\n\u{2014} {KEY_NAME} ")),
        "{note}"
    );
}

#[test]
fn the_final_anchor_and_checkpoint_cover_the_last_record_on_sigterm() {
    let keys = Keys::new();
    let mut s = Scene::start(keys.setup());
    s.call("shell", json!({"command": "echo 1"}))
        .assert_completed();
    let pid = nix::unistd::Pid::from_raw(s.client.pid() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let status = s.client.wait_exit();
    assert_eq!(status.code(), Some(128 + libc_sigterm()), "{status:?}");
    let config_dir = s.config_dir();
    let count = bodies(&config_dir).len();
    let verified = stdout_ok(&config_dir, &["verify", "--all-signed"]);
    assert!(
        verified.contains(&format!("anchored at seq {count}")),
        "{verified}"
    );
    assert!(
        verified.contains(&format!("latest size {count} ")),
        "{verified}"
    );
}

fn libc_sigterm() -> i32 {
    nix::sys::signal::Signal::SIGTERM as i32
}

/// A log with two checkpoints: one process runs `echo 1` and exits (the first), a second one
/// loads the session, runs `echo 2` and exits (the second).
fn two_checkpoints(keys: &Keys) -> (Scene, u64, u64) {
    let setup = keys.setup();
    let mut s = Scene::start(keys.setup());
    s.call("shell", json!({"command": "echo 1"}))
        .assert_completed();
    s.respawn(&setup);
    s.call("shell", json!({"command": "echo 2"}))
        .assert_completed();
    s.client.shutdown();
    let sizes = checkpoint_sizes(&s.config_dir());
    let count = bodies(&s.config_dir()).len() as u64;
    assert!(sizes.len() >= 2, "{sizes:?}");
    assert_eq!(sizes[sizes.len() - 1], count, "{sizes:?}");
    let first = sizes[sizes.len() - 2];
    assert!(first < count, "{sizes:?}");
    (s, first, count)
}

#[test]
fn verify_names_a_truncation_a_rewritten_history_and_a_forged_append() {
    let keys = Keys::new();
    let (s, first, count) = two_checkpoints(&keys);
    let config_dir = s.config_dir();
    let verified = stdout_ok(&config_dir, &["verify"]);
    assert!(
        verified.contains(&format!("latest size {count} ")),
        "{verified}"
    );
    let records = bodies(&config_dir);

    // The tail cut below the last checkpoint (and the anchor gone with it).
    let cut = unanchored_copy(&config_dir);
    tamper(
        cut.path(),
        &format!("DELETE FROM records WHERE seq >= {}", count - 1),
    );
    assert_eq!(broken_at(cut.path()), (count - 1).to_string());
    let said = verify_output(cut.path(), &[]);
    assert!(
        said.contains(&format!("the checkpoint of size {count}")),
        "{said}"
    );
    drop(cut);

    // A record after the first checkpoint rewritten, the chain recomputed: the consistency
    // proof between the two checkpoints fails.
    let later = seq_of(&records, |r| r["command"] == "echo 2");
    assert!(later as u64 > first);
    let rewritten = unanchored_copy(&config_dir);
    rewrite_history(rewritten.path(), later, |b| b.replace("echo 2", "echo 7"));
    assert!(
        stdout_ok(rewritten.path(), &["show", &later.to_string()]).contains("echo 7"),
        "the rewrite did not land"
    );
    assert_eq!(broken_at(rewritten.path()), (first + 1).to_string());
    let said = verify_output(rewritten.path(), &[]);
    assert!(said.contains("consistency proof"), "{said}");
    drop(rewritten);

    // A record before the first checkpoint rewritten the same way.
    let early = seq_of(&records, |r| r["command"] == "echo 1");
    let rewritten = unanchored_copy(&config_dir);
    rewrite_history(rewritten.path(), early, |b| b.replace("echo 1", "echo 9"));
    assert_eq!(broken_at(rewritten.path()), "1");
    let said = verify_output(rewritten.path(), &[]);
    assert!(said.contains("do not match the checkpoint"), "{said}");
    drop(rewritten);

    // A forged record appended after the last checkpoint, chained correctly.
    let forged = unanchored_copy(&config_dir);
    let prev = query_texts(
        forged.path(),
        &format!("SELECT hash FROM records WHERE seq = {count}"),
    )
    .remove(0);
    let body = format!(
        r#"{{"alg":"sha256","kind":"session.close","seq":{},"time_ms":1}}"#,
        count + 1
    );
    let hash = hex::encode(sha2::Sha256::digest(format!("{prev}\n{body}")));
    tamper(
        forged.path(),
        &format!(
            "INSERT INTO records (seq, time_ms, body, prev_hash, hash)
             VALUES ({}, 1, '{body}', '{prev}', '{hash}')",
            count + 1
        ),
    );
    let said = stdout_ok(forged.path(), &["verify"]);
    assert!(said.contains("1 newer records not signed yet"), "{said}");
    let out = zeroclaw_audit(forged.path(), &["verify", "--all-signed"]);
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.starts_with(&format!("broken at seq {}: ", count + 1))
            && said.contains("not covered by a signed checkpoint"),
        "{said}"
    );
}

#[test]
fn a_checkpoint_of_another_key_is_refused() {
    let keys = Keys::new();
    let mut s = Scene::start(keys.setup());
    s.call("shell", json!({"command": "echo 1"}))
        .assert_completed();
    s.client.shutdown();
    let config_dir = s.config_dir();
    let count = bodies(&config_dir).len();

    // Checked with another key.
    let other = Keys::new();
    let out = zeroclaw_audit(
        &config_dir,
        &["verify", "--key", other.public().to_str().unwrap()],
    );
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("not signed by the key"), "{said}");

    // A checkpoint signed by another key stored beside the log's own.
    let signer = zeroclaw::audit::checkpoint::Signer::parse(
        &std::fs::read_to_string(other.private()).unwrap(),
    )
    .unwrap();
    let forged = zeroclaw::audit::checkpoint::Checkpoint {
        origin: KEY_NAME.into(),
        size: count as u64,
        root: [7; 32],
    }
    .sign(&signer);
    let table = if pg().is_some() {
        "audit_checkpoints"
    } else {
        "checkpoints"
    };
    let insert = format!(
        "INSERT INTO {table} (tree_size, time_ms, note, frontier) VALUES ({count}, 1, '{forged}', '[]')"
    );
    match pg() {
        Some(url) => support::postgres::batch(&url, &insert),
        None => rusqlite::Connection::open(config_dir.join("workspace/sessions/audit.db"))
            .unwrap()
            .execute_batch(&insert)
            .unwrap(),
    }
    assert_eq!(broken_at(&config_dir), count.to_string());
    let said = verify_output(&config_dir, &[]);
    assert!(said.contains("not signed by the key"), "{said}");
}

#[test]
fn an_inclusion_proof_verifies_with_only_the_public_key() {
    let keys = Keys::new();
    let mut s = Scene::start(keys.setup());
    s.call("shell", json!({"command": "echo 1"}))
        .assert_completed();
    s.client.shutdown();
    let config_dir = s.config_dir();
    let records = bodies(&config_dir);
    let seq = seq_of(&records, |r| r["kind"] == "tool.exec");
    let proof = stdout_ok(&config_dir, &["prove", &seq.to_string()]);

    // The outsider: a directory holding only the proof and the public key, no configuration.
    let outside = tempfile::tempdir().unwrap();
    let public = outside.path().join("log.pub");
    std::fs::copy(keys.public(), &public).unwrap();
    let file = outside.path().join("proof.json");
    std::fs::write(&file, &proof).unwrap();
    let check = |file: &Path, key: &Path| {
        Command::new(env!("CARGO_BIN_EXE_zeroclaw"))
            .args(["audit", "check-proof"])
            .arg(file)
            .arg("--key")
            .arg(key)
            .env_remove("ZEROCLAW_CONFIG_DIR")
            .env("HOME", outside.path())
            .output()
            .unwrap()
    };
    let out = check(&file, &public);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        said.starts_with(&format!(
            "ok: record seq {seq} (tool.exec) is in {KEY_NAME}"
        )),
        "{said}"
    );

    // One byte of the record changed: refused.
    let edited = outside.path().join("edited.json");
    std::fs::write(&edited, proof.replacen("echo 1", "echo 2", 1)).unwrap();
    let out = check(&edited, &public);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("is not in the tree"),
        "{out:?}"
    );
    // Another key: refused.
    let other = Keys::new();
    let out = check(&file, &other.public());
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("not signed by the key"),
        "{out:?}"
    );
}

#[test]
fn a_pruned_signed_log_still_verifies_from_the_checkpoint_at_the_pruned_seq() {
    let keys = Keys::new();
    let mut s = Scene::start(keys.setup());
    for i in 0..3 {
        s.call("shell", json!({"command": format!("echo {i}")}))
            .assert_completed();
    }
    s.client.shutdown();
    let config_dir = s.config_dir();
    let records = bodies(&config_dir);
    let cut = records[3]["time_ms"].as_i64().unwrap();
    stdout_ok(&config_dir, &["prune", "--before", &cut.to_string()]);
    let left = bodies(&config_dir);
    let first = left[0]["seq"].as_i64().unwrap();
    assert!(first > 1, "{left:#?}");
    assert!(checkpoint_sizes(&config_dir).contains(&(first as u64 - 1)));
    let verified = stdout_ok(&config_dir, &["verify", "--all-signed"]);
    assert!(verified.contains("checkpoints, latest size"), "{verified}");
}

crate::on_postgres!(
    the_final_anchor_and_checkpoint_cover_session_close_at_end_of_input,
    verify_names_a_truncation_a_rewritten_history_and_a_forged_append,
    a_checkpoint_of_another_key_is_refused,
    an_inclusion_proof_verifies_with_only_the_public_key,
    a_pruned_signed_log_still_verifies_from_the_checkpoint_at_the_pruned_seq,
);
