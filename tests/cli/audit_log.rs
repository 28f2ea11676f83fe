//! The audit log end to end, through the real binary: a supervised session's tool calls,
//! policy decisions, approvals, sandbox failures and lifecycle land in
//! `workspace/sessions/audit.db` and are found with `zeroclaw audit list`; `audit verify`
//! passes, and names the first broken seq after an edit, a deletion, a swap, and (keyed mode)
//! a truncated tail with a forged head; a read-only log refuses tool calls unless
//! `best_effort`; `kill -9` in a burst leaves a chain that verifies; nothing secret is stored.
//! The suites that do not need a file of their own run again with a PostgreSQL store
//! (`on_postgres::…`), where the records live in the database's `audit_records` table; two
//! daemons appending to one such database at once build one chain that verifies.

use crate::support;
use crate::tools_support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

use support::acp_client::{Permission, is_response, prompt_params};
use support::model_server::{text_reply, tool_reply};
use tools_support::{ENV_CANARY, KEY_CANARY, Scene, Setup};

const API_CANARY: &str = "zc-canary-apikey-5e0d91";

pub(crate) fn zeroclaw_audit(config_dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zeroclaw"))
        .arg("audit")
        .arg("--config-dir")
        .arg(config_dir)
        .args(args)
        .env_remove("ZEROCLAW_CONFIG_DIR")
        .envs(support::store_under_test::env())
        .output()
        .expect("run zeroclaw audit")
}

pub(crate) fn stdout_ok(config_dir: &Path, args: &[&str]) -> String {
    let out = zeroclaw_audit(config_dir, args);
    assert!(
        out.status.success(),
        "zeroclaw audit {args:?}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

pub(crate) fn audit_db(config_dir: &Path) -> PathBuf {
    config_dir.join("workspace/sessions/audit.db")
}

/// This suite's PostgreSQL database, when it runs on one (the log is then its table).
pub(crate) fn pg() -> Option<String> {
    support::store_under_test::url()
}

/// `sql` written for the SQLite `records` table, for the log under test.
pub(crate) fn on_log(sql: &str) -> String {
    match pg() {
        Some(_) => sql.replace(" records", " audit_records"),
        None => sql.to_owned(),
    }
}

/// The first column of each row of `sql` (about `records`), read from the log directly.
pub(crate) fn query_texts(config_dir: &Path, sql: &str) -> Vec<String> {
    if let Some(url) = pg() {
        return support::postgres::texts(&url, &on_log(sql));
    }
    let conn = rusqlite::Connection::open(audit_db(config_dir)).unwrap();
    let mut stmt = conn.prepare(sql).unwrap();
    stmt.query_map([], |r| r.get::<_, String>(0))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// Every stored record body, in seq order (read from the database directly).
pub(crate) fn bodies(config_dir: &Path) -> Vec<Value> {
    query_texts(config_dir, "SELECT body FROM records ORDER BY seq")
        .iter()
        .map(|b| serde_json::from_str(b).unwrap())
        .collect()
}

fn supervised() -> Setup {
    Setup::level("supervised")
        .permission(Permission::Select("allow-once".into()))
        .extra(&format!(
            "[providers.spare]\nbase_url = \"http://127.0.0.1:9\"\napi_key = \"{API_CANARY}\"\n"
        ))
}

#[test]
fn a_session_records_every_event_class_and_the_chain_verifies() {
    let s = Scene::start(supervised());
    let config_dir = s.config_dir();
    s.call("file_write", json!({"path": "a.txt", "content": "A"}))
        .assert_completed();
    s.call("shell", json!({"command": "echo hi"}))
        .assert_completed();
    s.call(
        "shell",
        json!({"command": "curl -s http://example.invalid/"}),
    )
    .assert_failed();
    s.call("file_read", json!({"path": "/etc/shadow"}));
    s.client
        .call("session/close", json!({"sessionId": s.session}));

    let list = stdout_ok(&config_dir, &["list"]);
    for kind in [
        "session.create",
        "policy.decision",
        "approval",
        "tool.exec",
        "session.close",
    ] {
        assert!(list.contains(kind), "no {kind} in\n{list}");
    }
    let records = bodies(&config_dir);
    let exec: Vec<&Value> = records
        .iter()
        .filter(|r| r["kind"] == "tool.exec")
        .collect();
    assert_eq!(exec.len(), 4, "{records:#?}");
    let write = exec[0];
    assert_eq!(write["tool"], "file_write");
    assert_eq!(write["session"], s.session.as_str());
    assert_eq!(
        write["tool_call_id"]
            .as_str()
            .map(|id| id.starts_with("call-")),
        Some(true)
    );
    assert_eq!(write["turn"], 1);
    assert_eq!(write["autonomy"], "supervised");
    assert_eq!(write["path"], "a.txt");
    assert_eq!(write["args_sha256"].as_str().map(str::len), Some(64));
    let echo = exec[1];
    assert_eq!(echo["command"], "echo hi");
    assert_eq!(echo["turn"], 2);
    assert_eq!(echo["sandbox"]["exit"]["code"], 0, "{echo}");
    assert_eq!(echo["sandbox"]["output_bytes"], 3, "{echo}");
    assert_eq!(echo["sandbox"]["output_capped"], false);
    assert!(echo["sandbox"]["backend"].is_string(), "{echo}");
    assert!(
        echo["sandbox"]["enforcement"]["seccomp"].is_boolean(),
        "{echo}"
    );
    assert_eq!(
        echo["sandbox"]["profile_sha256"].as_str().map(str::len),
        Some(64)
    );
    let approval = records.iter().find(|r| r["kind"] == "approval").unwrap();
    assert_eq!(approval["option_kind"], "allow_once", "{approval}");
    assert_eq!(approval["tool"], "file_write");

    let denied = stdout_ok(&config_dir, &["list", "--decision", "deny"]);
    assert!(denied.contains("rule=network_denied"), "{denied}");
    assert!(!denied.contains("decision=allow"), "{denied}");
    let asked = stdout_ok(
        &config_dir,
        &["list", "--decision", "ask", "--tool", "file_write"],
    );
    assert!(asked.contains("rule=supervised_level"), "{asked}");
    let mine = stdout_ok(
        &config_dir,
        &["list", "--session", &s.session, "--since", "2020-01-01"],
    );
    assert_eq!(mine.lines().count(), records.len(), "{mine}");
    assert!(stdout_ok(&config_dir, &["list", "--session", "s-other"]).is_empty());

    let verified = stdout_ok(&config_dir, &["verify"]);
    assert!(verified.starts_with("ok: "), "{verified}");
    let seq = records
        .iter()
        .position(|r| r["kind"] == "tool.exec")
        .unwrap()
        + 1;
    let shown = stdout_ok(&config_dir, &["show", &seq.to_string()]);
    let shown: Value = serde_json::from_str(&shown).unwrap();
    assert_eq!(shown["record"]["kind"], "tool.exec");
    assert_eq!(shown["hash"].as_str().map(str::len), Some(64));

    // OCSF: every event carries the schema's required fields.
    let ocsf = stdout_ok(&config_dir, &["export", "--format", "ocsf"]);
    let events: Vec<Value> = ocsf
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events.len(), records.len());
    for event in &events {
        for field in [
            "class_uid",
            "category_uid",
            "activity_id",
            "type_uid",
            "time",
            "severity_id",
        ] {
            assert!(event[field].is_number(), "{field} in {event}");
        }
        assert_eq!(
            event["type_uid"].as_i64().unwrap(),
            event["class_uid"].as_i64().unwrap() * 100 + event["activity_id"].as_i64().unwrap()
        );
        assert_eq!(event["metadata"]["product"]["name"], "zeroclaw");
        assert!(
            event["metadata"]["version"]
                .as_str()
                .unwrap()
                .starts_with("1.")
        );
    }
    let process: Vec<&Value> = events.iter().filter(|e| e["class_uid"] == 1007).collect();
    assert_eq!(process.len(), 4);
    for event in process {
        assert_eq!(event["category_uid"], 1);
        assert!(
            event["actor"].is_object() && event["process"]["cmd_line"].is_string(),
            "{event}"
        );
        assert!(event["device"].is_object(), "{event}");
    }
    let jsonl = stdout_ok(&config_dir, &["export", "--format", "jsonl"]);
    assert_eq!(jsonl.lines().count(), records.len());

    assert_no_secret(&config_dir);
}

/// The canary key, variable and API key appear in no byte of the audit files (or of the
/// records in the database).
fn assert_no_secret(config_dir: &Path) {
    let mut stored = vec![
        query_texts(config_dir, "SELECT body FROM records")
            .join("\n")
            .into_bytes(),
    ];
    let dir = config_dir.join("workspace/sessions");
    for entry in std::fs::read_dir(&dir).into_iter().flatten() {
        let path = entry.unwrap().path();
        if path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("audit.")
        {
            stored.push(std::fs::read(&path).unwrap());
        }
    }
    for bytes in stored {
        for canary in [KEY_CANARY, ENV_CANARY, API_CANARY] {
            let found = bytes.windows(canary.len()).any(|w| w == canary.as_bytes());
            assert!(!found, "{canary} in the audit log");
        }
    }
}

/// A line `audit list` would print, smuggled into a command after a newline.
const FORGED_RECORD: &str =
    "    99  2026-01-01 00:00:00 UTC  tool.exec        s-forged  shell  status=completed rm -rf ~";
/// A window title, a clipboard write (OSC 52) and a C1 CSI colour.
const TERMINAL_ATTACK: &str = "\u{1b}]0;pwned\u{7}\u{1b}]52;c;cHduZWQ=\u{7}\u{9b}31m";

/// Raw bytes a terminal acts on: ESC, BEL, CSI (C1).
fn terminal_controls(text: &str) -> bool {
    text.contains(['\u{1b}', '\u{7}', '\u{9b}'])
}

#[test]
fn what_the_model_chose_is_escaped_in_list_and_show_and_exact_in_export() {
    let mut s = Scene::start(supervised());
    let config_dir = s.config_dir();
    let command = format!("printf '%s' 'ok\n{FORGED_RECORD}\n{TERMINAL_ATTACK}'");
    s.call("shell", json!({ "command": command }))
        .assert_completed();
    s.client.shutdown();
    let records = bodies(&config_dir);
    let seq = 1 + records
        .iter()
        .position(|r| r["kind"] == "tool.exec")
        .expect("a tool.exec record");
    assert_eq!(records[seq - 1]["command"], command.as_str());

    let list = stdout_ok(&config_dir, &["list"]);
    assert_eq!(
        list.lines().count(),
        records.len(),
        "one line per record:\n{list}"
    );
    assert!(!terminal_controls(&list), "raw controls in:\n{list:?}");
    let exec = stdout_ok(&config_dir, &["list", "--kind", "tool.exec"]);
    assert_eq!(exec.lines().count(), 1, "{exec}");
    assert!(
        exec.contains(&format!(
            "ok\\n{FORGED_RECORD}\\n\\x1b]0;pwned\\x07\\x1b]52;"
        )),
        "the command is shown with visible escapes: {exec}"
    );
    assert!(exec.contains("\\u{9b}31m"), "{exec}");

    let shown = stdout_ok(&config_dir, &["show", &seq.to_string()]);
    assert!(!terminal_controls(&shown), "raw controls in:\n{shown:?}");
    let shown: Value = serde_json::from_str(&shown).unwrap();
    assert_eq!(
        shown["record"]["command"],
        command.as_str(),
        "show keeps the value"
    );

    let export = stdout_ok(&config_dir, &["export"]);
    assert_eq!(export.lines().count(), records.len());
    let exported: Value = serde_json::from_str(export.lines().nth(seq - 1).unwrap()).unwrap();
    assert_eq!(
        exported["record"]["command"],
        command.as_str(),
        "export is exact"
    );
    assert!(
        export.contains('\u{9b}'),
        "export keeps the bytes JSON allows raw"
    );
}

#[test]
fn a_sandbox_that_cannot_be_set_up_is_recorded() {
    let s = Scene::start(Setup::level("full").backend("seatbelt"));
    s.call("shell", json!({"command": "echo hi"}))
        .assert_failed();
    let failures = stdout_ok(&s.config_dir(), &["list", "--kind", "sandbox.failure"]);
    assert!(failures.contains("sandbox.failure"), "{failures}");
    assert!(failures.contains("stage="), "{failures}");
    let exec = stdout_ok(&s.config_dir(), &["list", "--kind", "tool.exec"]);
    assert!(exec.contains("status=failed"), "{exec}");
}

/// Runs a session with a few tool calls, stops it, and returns its config dir (kept alive by
/// the returned scene).
fn recorded_session(setup: Setup) -> Scene {
    let mut s = Scene::start(setup);
    for i in 0..3 {
        s.call("shell", json!({"command": format!("echo {i}")}))
            .assert_completed();
    }
    s.client.shutdown();
    s
}

/// A copy of `from`'s config dir (config and audit files) to tamper with; on PostgreSQL the
/// table is the same one, saved now and put back when the copy is dropped (one copy at a time).
pub(crate) struct Copy {
    dir: tempfile::TempDir,
    saved_in: Option<String>,
}

impl Copy {
    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Copy {
    fn drop(&mut self) {
        if let Some(url) = &self.saved_in {
            support::postgres::batch(
                url,
                "DELETE FROM audit_records; INSERT INTO audit_records SELECT * FROM audit_saved;
                 DROP TABLE audit_saved;",
            );
        }
    }
}

pub(crate) fn copy_of(from: &Path) -> Copy {
    let to = tempfile::tempdir().unwrap();
    std::fs::copy(from.join("config.toml"), to.path().join("config.toml")).unwrap();
    let sessions = to.path().join("workspace/sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    // On PostgreSQL the directory holds at most the anchor.
    let files = std::fs::read_dir(from.join("workspace/sessions"))
        .into_iter()
        .flatten();
    for entry in files {
        let path = entry.unwrap().path();
        if path.is_file() {
            std::fs::copy(&path, sessions.join(path.file_name().unwrap())).unwrap();
        }
    }
    let saved_in = pg();
    if let Some(url) = &saved_in {
        support::postgres::batch(
            url,
            "CREATE TABLE audit_saved AS SELECT * FROM audit_records",
        );
    }
    Copy { dir: to, saved_in }
}

pub(crate) fn broken_at(config_dir: &Path) -> String {
    let out = zeroclaw_audit(config_dir, &["verify"]);
    assert!(!out.status.success(), "verify passed a tampered log");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.split_whitespace()
        .nth(3)
        .unwrap_or("")
        .trim_end_matches(':')
        .to_owned()
}

/// Runs `sql` (about `records`) on the log directly.
pub(crate) fn tamper(config_dir: &Path, sql: &str) {
    if let Some(url) = pg() {
        return support::postgres::batch(&url, &on_log(sql));
    }
    let conn = rusqlite::Connection::open(audit_db(config_dir)).unwrap();
    conn.execute_batch(sql).unwrap();
}

#[test]
fn verify_names_the_first_broken_seq_after_an_edit_a_deletion_and_a_swap() {
    let s = recorded_session(Setup::level("full"));
    let config_dir = s.config_dir();
    let count = bodies(&config_dir).len();
    assert!(count >= 7, "{count} records");
    assert!(stdout_ok(&config_dir, &["verify"]).starts_with("ok: "));

    let edited = copy_of(&config_dir);
    tamper(
        edited.path(),
        "UPDATE records SET body = replace(body, '\"echo 1\"', '\"echo 9\"') WHERE seq = 5",
    );
    let body = &bodies(edited.path())[4];
    assert_eq!(
        body["command"], "echo 9",
        "the edit hit a tool record: {body}"
    );
    assert_eq!(broken_at(edited.path()), "5");
    drop(edited);

    let deleted = copy_of(&config_dir);
    tamper(deleted.path(), "DELETE FROM records WHERE seq = 4");
    assert_eq!(broken_at(deleted.path()), "4");
    drop(deleted);

    let first_gone = copy_of(&config_dir);
    tamper(first_gone.path(), "DELETE FROM records WHERE seq = 1");
    assert_eq!(broken_at(first_gone.path()), "1");
    drop(first_gone);

    let swapped = copy_of(&config_dir);
    tamper(
        swapped.path(),
        "UPDATE records SET seq = -3 WHERE seq = 3;
         UPDATE records SET seq = 3 WHERE seq = 6;
         UPDATE records SET seq = 6 WHERE seq = -3;",
    );
    assert_eq!(broken_at(swapped.path()), "3");
}

#[test]
fn keyed_mode_detects_a_truncated_tail_with_a_forged_head_and_prune_keeps_it_verifiable() {
    let key_dir = tempfile::tempdir().unwrap();
    let key_file = key_dir.path().join("audit.key");
    std::fs::write(&key_file, "k".repeat(40)).unwrap();
    std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let setup =
        Setup::level("full").extra(&format!("[audit]\nkey_file = \"{}\"\n", key_file.display()));
    let s = recorded_session(setup);
    let config_dir = s.config_dir();
    let count = bodies(&config_dir).len() as i64;
    let verified = stdout_ok(&config_dir, &["verify"]);
    assert!(verified.contains("(keyed)"), "{verified}");

    // Cut the last two records and append a forged head linked to the new tail: with the
    // public SHA-256, and as an HMAC under a guessed key.
    for forged_alg in ["sha256", "hmac-sha256"] {
        let forged = copy_of(&config_dir);
        tamper(
            forged.path(),
            &format!("DELETE FROM records WHERE seq >= {}", count - 1),
        );
        let prev = query_texts(
            forged.path(),
            &format!("SELECT hash FROM records WHERE seq = {}", count - 2),
        )
        .remove(0);
        let body = format!(
            r#"{{"alg":"{forged_alg}","kind":"session.close","seq":{},"time_ms":1}}"#,
            count - 1
        );
        let hash = {
            use sha2::Digest;
            hex::encode(sha2::Sha256::digest(format!("{prev}\n{body}").as_bytes()))
        };
        tamper(
            forged.path(),
            &format!(
                "INSERT INTO records (seq, time_ms, body, prev_hash, hash)
                 VALUES ({}, 1, '{body}', '{prev}', '{hash}')",
                count - 1
            ),
        );
        assert_eq!(
            broken_at(forged.path()),
            (count - 1).to_string(),
            "{forged_alg}"
        );
        drop(forged);
    }

    // Without the key, keyed records cannot be checked: verify says so.
    let keyless = copy_of(&config_dir);
    std::fs::write(keyless.path().join("config.toml"), "").unwrap();
    assert_eq!(broken_at(keyless.path()), "1");
    drop(keyless);

    // Pruning everything before now leaves a checkpoint, signed with the key, that verifies.
    let far_future = "2999-01-01";
    let pruned = stdout_ok(&config_dir, &["prune", "--before", far_future]);
    assert!(
        pruned.starts_with(&format!("pruned {count} records")),
        "{pruned}"
    );
    let left = bodies(&config_dir);
    assert_eq!(left.len(), 1);
    assert_eq!(left[0]["kind"], "checkpoint");
    assert_eq!(left[0]["alg"], "hmac-sha256");
    assert!(stdout_ok(&config_dir, &["verify"]).starts_with("ok: 1 records"));
}

#[test]
fn prune_keeps_the_newer_records_verifiable_and_a_later_deletion_is_still_found() {
    let s = recorded_session(Setup::level("full"));
    let config_dir = s.config_dir();
    let records = bodies(&config_dir);
    let cut = records[3]["time_ms"].as_i64().unwrap();
    stdout_ok(&config_dir, &["prune", "--before", &cut.to_string()]);
    let left = bodies(&config_dir);
    assert!(
        left.len() < records.len() + 1 && left.len() >= 2,
        "{left:#?}"
    );
    assert!(stdout_ok(&config_dir, &["verify"]).starts_with("ok: "));
    let first_left = left[0]["seq"].as_i64().unwrap();
    tamper(
        &config_dir,
        &format!("DELETE FROM records WHERE seq = {first_left}"),
    );
    assert_eq!(broken_at(&config_dir), first_left.to_string());
}

/// `file` made unwritable even for root (`chattr +i`) until dropped.
struct Immutable(PathBuf);

impl Immutable {
    /// `None` (with the reason printed, a failure under CI=true) when this user cannot be
    /// stopped from writing the file.
    fn new(file: &Path) -> Option<Immutable> {
        std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o444)).unwrap();
        let guard = Immutable(file.to_owned());
        if std::fs::OpenOptions::new().append(true).open(file).is_ok() {
            let _ = Command::new("chattr").arg("+i").arg(file).status();
        }
        if std::fs::OpenOptions::new().append(true).open(file).is_ok() {
            support::require_feature(
                "cannot make a file read-only for this user (chattr +i unavailable)",
            );
            return None;
        }
        Some(guard)
    }
}

impl Drop for Immutable {
    fn drop(&mut self) {
        // Lets the temp dir be removed (a no-op when the attribute was never set).
        let _ = Command::new("chattr").arg("-i").arg(&self.0).status();
    }
}

/// A scene whose audit database is read-only, and the outcome of one `shell` call there (with
/// the first scene, which owns the config dir).
fn read_only_log(mode: Option<&str>) -> Option<(Scene, tools_support::Outcome, Scene)> {
    let mut setup = Setup::level("full");
    if let Some(mode) = mode {
        setup = setup.extra(&format!("[audit]\nmode = \"{mode}\"\n"));
    }
    let mut s = Scene::start(setup);
    s.client.shutdown();
    let config_dir = s.config_dir();
    // A clean exit leaves only the database file (no WAL to write to).
    let db = audit_db(&config_dir);
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", db.display()));
    }
    let immutable = Immutable::new(&db)?;
    let mut setup = Setup::level("full");
    setup.config_dir = Some(config_dir);
    if let Some(mode) = mode {
        setup = setup.extra(&format!("[audit]\nmode = \"{mode}\"\n"));
    }
    let again = Scene::start(setup);
    let out = again.call("shell", json!({"command": "echo ran > ran.txt"}));
    drop(immutable);
    Some((again, out, s))
}

#[test]
fn a_read_only_audit_log_refuses_tool_calls_with_a_clear_error() {
    let Some((s, out, _first)) = read_only_log(None) else {
        return;
    };
    out.assert_failed()
        .assert_result_contains("audit record cannot be written");
    assert!(
        !s.ws().join("ran.txt").exists(),
        "the command ran unaudited"
    );
}

#[test]
fn best_effort_lets_calls_run_on_a_read_only_log_and_doctor_reports_it() {
    let Some((s, out, _first)) = read_only_log(Some("best_effort")) else {
        return;
    };
    out.assert_completed();
    assert!(s.ws().join("ran.txt").exists());
    let doctor = Command::new(env!("CARGO_BIN_EXE_zeroclaw"))
        .arg("doctor")
        .arg("--config-dir")
        .arg(s.config_dir())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&doctor.stdout);
    assert!(text.contains("audit: best_effort"), "{text}");
}

#[test]
fn kill_9_during_a_burst_leaves_a_chain_that_verifies_with_every_answered_call() {
    let mut s = Scene::start(Setup::level("full"));
    let calls = 20;
    for i in 0..calls {
        s.model.push(tool_reply(
            &format!("burst-{i}"),
            "shell",
            &json!({"command": format!("echo {i}")}),
        ));
    }
    s.model.push(text_reply("done"));
    let id = s
        .client
        .send_request("session/prompt", prompt_params(&s.session, "go"));
    s.client.wait_for(|m| {
        m["params"]["update"]["toolCallId"] == "burst-8"
            && m["params"]["update"]["status"] == "completed"
    });
    s.client.kill9();
    let answered: Vec<String> = s
        .client
        .messages()
        .iter()
        .filter(|m| m["params"]["update"]["status"] == "completed")
        .filter_map(|m| {
            m["params"]["update"]["toolCallId"]
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    assert!(answered.len() >= 9, "{answered:?}");
    assert!(
        !s.client
            .messages()
            .iter()
            .any(|m| is_response(m) && m["id"] == id),
        "the turn ended before the kill"
    );
    let config_dir = s.config_dir();
    assert!(stdout_ok(&config_dir, &["verify"]).starts_with("ok: "));
    let recorded: Vec<String> = bodies(&config_dir)
        .iter()
        .filter(|r| r["kind"] == "tool.exec")
        .filter_map(|r| r["tool_call_id"].as_str().map(str::to_owned))
        .collect();
    for call in &answered {
        assert!(recorded.contains(call), "{call} answered but not recorded");
    }
}

#[test]
fn a_bad_token_on_the_daemon_is_recorded_without_the_token() {
    let mut daemon = support::ws_daemon::Daemon::builder().spawn();
    let canary = "zc-canary-token-41c7e2";
    let bearer = format!("Bearer {canary}");
    for (target, headers) in [
        ("/acp".to_owned(), vec![("Authorization", bearer.as_str())]),
        (format!("/acp?token={canary}"), vec![]),
        ("/acp".to_owned(), vec![]),
    ] {
        let stream = std::net::TcpStream::connect(daemon.tcp()).expect("connect");
        let raw = support::ws_conn::raw_get(stream, &target, &headers, true);
        assert_eq!(support::ws_conn::status_of(&raw), 401, "{raw}");
    }
    let config_dir = daemon.config_dir().to_path_buf();
    // The record is committed before the 401 is sent.
    let failures = stdout_ok(&config_dir, &["list", "--kind", "auth.failure"]);
    assert_eq!(failures.lines().count(), 3, "{failures}");
    assert_eq!(
        failures.matches("invalid or revoked token").count(),
        1,
        "{failures}"
    );
    assert!(failures.contains("token in the URL"), "{failures}");
    assert!(
        failures.contains("no credentials admitted this peer"),
        "{failures}"
    );
    let ocsf = stdout_ok(&config_dir, &["export", "--format", "ocsf"]);
    let auth: Vec<Value> = ocsf
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["class_uid"] == 3002)
        .collect();
    assert_eq!(auth.len(), 3, "{ocsf}");
    assert_eq!(auth[0]["category_uid"], 3);
    assert_eq!(auth[0]["status_id"], 2);
    assert!(auth[0]["user"].is_object(), "{}", auth[0]);
    daemon.terminate();
    let stored = query_texts(&config_dir, "SELECT body FROM records").join("\n");
    assert!(!stored.contains(canary), "the token is in a record");
    let files = std::fs::read_dir(config_dir.join("workspace/sessions"))
        .into_iter()
        .flatten();
    for entry in files {
        let path = entry.unwrap().path();
        if path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("audit.db")
        {
            let bytes = std::fs::read(&path).unwrap();
            let found = bytes.windows(canary.len()).any(|w| w == canary.as_bytes());
            assert!(!found, "the token is in {}", path.display());
        }
    }
}

#[test]
fn session_load_and_delete_are_recorded() {
    let setup = Setup::level("full");
    let mut s = Scene::start(Setup::level("full"));
    s.respawn(&setup);
    s.client.shutdown();
    let config_dir = s.config_dir();
    let out = Command::new(env!("CARGO_BIN_EXE_zeroclaw"))
        .args(["sessions", "delete", &s.session, "--config-dir"])
        .arg(&config_dir)
        .env_remove("ZEROCLAW_CONFIG_DIR")
        .envs(support::store_under_test::env())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let list = stdout_ok(&config_dir, &["list", "--session", &s.session]);
    let kinds: Vec<&str> = list
        .lines()
        .filter_map(|l| l.split_whitespace().nth(4))
        .collect();
    assert_eq!(
        kinds,
        ["session.create", "session.load", "session.delete"],
        "{list}"
    );
    assert!(stdout_ok(&config_dir, &["verify"]).starts_with("ok: 3 records"));
}

#[test]
fn a_key_file_others_can_read_records_nothing_and_refuses_tool_calls() {
    let key_dir = tempfile::tempdir().unwrap();
    let key_file = key_dir.path().join("audit.key");
    std::fs::write(&key_file, "k".repeat(40)).unwrap();
    std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let s = Scene::start(
        Setup::level("full").extra(&format!("[audit]\nkey_file = \"{}\"\n", key_file.display())),
    );
    let out = s.call("shell", json!({"command": "echo ran > ran.txt"}));
    out.assert_failed()
        .assert_result_contains("lets others read it");
    assert!(!s.ws().join("ran.txt").exists());
    let doctor = Command::new(env!("CARGO_BIN_EXE_zeroclaw"))
        .arg("doctor")
        .arg("--config-dir")
        .arg(s.config_dir())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&doctor.stdout);
    assert!(text.contains("audit: required, KEY UNUSABLE"), "{text}");
}

#[test]
fn the_anchor_finds_a_tail_cut_off_without_any_forged_record() {
    let mut s = Scene::start(Setup::level("full"));
    s.call("shell", json!({"command": "echo 1"}))
        .assert_completed();
    // The writer anchors the head within a second of the last record.
    let anchor = s.config_dir().join("workspace/sessions/audit.head");
    let start = std::time::Instant::now();
    while !anchor.exists() && start.elapsed() < std::time::Duration::from_secs(5) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    s.client.shutdown();
    let config_dir = s.config_dir();
    let count = bodies(&config_dir).len();
    let verified = stdout_ok(&config_dir, &["verify"]);
    assert!(
        verified.contains(&format!("anchored at seq {count}")),
        "{verified}"
    );
    let cut = copy_of(&config_dir);
    tamper(
        cut.path(),
        &format!("DELETE FROM records WHERE seq >= {}", count - 1),
    );
    assert_eq!(broken_at(cut.path()), (count - 1).to_string());
}

crate::on_postgres!(
    a_session_records_every_event_class_and_the_chain_verifies,
    verify_names_the_first_broken_seq_after_an_edit_a_deletion_and_a_swap,
    keyed_mode_detects_a_truncated_tail_with_a_forged_head_and_prune_keeps_it_verifiable,
    prune_keeps_the_newer_records_verifiable_and_a_later_deletion_is_still_found,
    kill_9_during_a_burst_leaves_a_chain_that_verifies_with_every_answered_call,
    a_bad_token_on_the_daemon_is_recorded_without_the_token,
    session_load_and_delete_are_recorded,
    the_anchor_finds_a_tail_cut_off_without_any_forged_record,
);
