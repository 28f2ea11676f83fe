//! The session store against real SQLite files: durability, ordering, atomicity, cascade,
//! migration and unwritable locations.

use std::path::{Path, PathBuf};

use crate::support::read_only_dir;

use read_only_dir::ReadOnlyDir;
use serde_json::json;
use zeroclaw::store::{SessionRecord, Store, StoreError, StoredEntry};

fn record(id: &str) -> SessionRecord {
    SessionRecord {
        id: id.to_owned(),
        agent_alias: "coder".to_owned(),
        workspace_dir: PathBuf::from("/work/space"),
        mcp_servers: json!([{"name": "fs", "command": "mcp-fs", "args": [], "env": []}]),
        owner: Some("alice".to_owned()),
        created_at: 1_700_000_000_000,
        last_activity: 1_700_000_000_000,
    }
}

fn entry(kind: &str, n: u64) -> StoredEntry {
    StoredEntry {
        kind: kind.to_owned(),
        payload: json!({ "n": n, "text": format!("{kind} {n}") }),
    }
}

fn db_in(dir: &Path) -> PathBuf {
    dir.join("sessions").join("acp-sessions.db")
}

#[tokio::test]
async fn sessions_and_history_survive_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let path = db_in(dir.path());
    {
        let store = Store::open(&path).unwrap();
        store.create_session(record("s1")).await.unwrap();
        store
            .append_turn("s1", vec![entry("user", 1), entry("assistant", 2)])
            .await
            .unwrap();
    }
    let store = Store::open(&path).unwrap();
    let rec = store
        .get_session("s1")
        .await
        .unwrap()
        .expect("session kept");
    assert_eq!(rec.agent_alias, "coder");
    assert_eq!(rec.mcp_servers, record("s1").mcp_servers);
    assert_eq!(rec.owner.as_deref(), Some("alice"));
    assert_eq!(rec.workspace_dir, PathBuf::from("/work/space"));
    assert!(
        rec.last_activity > rec.created_at,
        "append_turn updates last_activity"
    );
    let history = store.history("s1").await.unwrap();
    assert_eq!(history, vec![entry("user", 1), entry("assistant", 2)]);
}

#[tokio::test]
async fn history_comes_back_in_turn_then_append_order() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&db_in(dir.path())).unwrap();
    store.create_session(record("s")).await.unwrap();
    let mut expected = Vec::new();
    for turn in 0..12u64 {
        let entries: Vec<_> = (0..11).map(|i| entry("e", turn * 100 + i)).collect();
        expected.extend(entries.clone());
        store.append_turn("s", entries).await.unwrap();
    }
    assert_eq!(store.history("s").await.unwrap(), expected);
    let summary = &store.list_summaries().await.unwrap()[0];
    assert_eq!((summary.turns, summary.entries), (12, 132));
}

#[tokio::test]
async fn a_failed_turn_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let path = db_in(dir.path());
    let store = Store::open(&path).unwrap();
    store.create_session(record("s")).await.unwrap();
    store
        .append_turn("s", vec![entry("user", 1)])
        .await
        .unwrap();
    let before = store.get_session("s").await.unwrap().unwrap();
    // A second connection plants a trigger that aborts the insert of the turn's last entry.
    let other = rusqlite::Connection::open(&path).unwrap();
    other
        .execute_batch(
            "CREATE TRIGGER poison BEFORE INSERT ON messages WHEN NEW.kind = 'poison'
             BEGIN SELECT RAISE(ABORT, 'poisoned entry'); END;",
        )
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(5)); // a distinct last_activity if written
    let turn = vec![entry("user", 2), entry("assistant", 3), entry("poison", 4)];
    let err = store.append_turn("s", turn).await.unwrap_err();
    assert!(err.to_string().contains("poisoned entry"), "{err}");
    assert_eq!(store.history("s").await.unwrap(), vec![entry("user", 1)]);
    let after = store.get_session("s").await.unwrap().unwrap();
    assert_eq!(after.last_activity, before.last_activity);
    // The next good turn still gets the next number and lands after the first.
    store
        .append_turn("s", vec![entry("user", 5)])
        .await
        .unwrap();
    assert_eq!(
        store.history("s").await.unwrap(),
        vec![entry("user", 1), entry("user", 5)]
    );
}

#[tokio::test]
async fn appending_to_an_unknown_session_is_not_found_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&db_in(dir.path())).unwrap();
    let err = store
        .append_turn("ghost", vec![entry("user", 1)])
        .await
        .unwrap_err();
    assert!(
        matches!(err, StoreError::SessionNotFound(ref id) if id == "ghost"),
        "{err}"
    );
    assert!(store.history("ghost").await.unwrap().is_empty());
    assert!(matches!(
        store.touch("ghost").await,
        Err(StoreError::SessionNotFound(_))
    ));
}

#[tokio::test]
async fn deleting_a_session_deletes_its_history() {
    let dir = tempfile::tempdir().unwrap();
    let path = db_in(dir.path());
    let store = Store::open(&path).unwrap();
    store.create_session(record("a")).await.unwrap();
    store.create_session(record("b")).await.unwrap();
    store
        .append_turn("a", vec![entry("user", 1)])
        .await
        .unwrap();
    store
        .append_turn("b", vec![entry("user", 2)])
        .await
        .unwrap();
    assert!(store.delete_session("a").await.unwrap());
    assert!(!store.delete_session("a").await.unwrap());
    assert!(store.get_session("a").await.unwrap().is_none());
    let other = rusqlite::Connection::open(&path).unwrap();
    let orphans: i64 = other
        .query_row(
            "SELECT COUNT(*) FROM messages WHERE session_id = 'a'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(orphans, 0, "history rows cascade with the session");
    assert_eq!(store.history("b").await.unwrap(), vec![entry("user", 2)]);
}

#[tokio::test]
async fn list_is_most_recent_first_and_touch_moves_a_session_up() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&db_in(dir.path())).unwrap();
    for (id, t) in [("old", 1), ("mid", 2), ("new", 3)] {
        let mut rec = record(id);
        rec.last_activity = t;
        store.create_session(rec).await.unwrap();
    }
    let ids = |v: Vec<SessionRecord>| v.into_iter().map(|r| r.id).collect::<Vec<_>>();
    assert_eq!(
        ids(store.list_sessions().await.unwrap()),
        ["new", "mid", "old"]
    );
    store.touch("old").await.unwrap();
    assert_eq!(
        ids(store.list_sessions().await.unwrap()),
        ["old", "new", "mid"]
    );
}

#[tokio::test]
async fn duplicate_session_ids_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&db_in(dir.path())).unwrap();
    store.create_session(record("s")).await.unwrap();
    assert!(store.create_session(record("s")).await.is_err());
}

#[tokio::test]
async fn an_empty_file_is_migrated_with_wal_and_foreign_keys() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty.db");
    std::fs::write(&path, b"").unwrap();
    let store = Store::open(&path).unwrap();
    store.create_session(record("s")).await.unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, 9);
    assert_eq!(mode.to_lowercase(), "wal");
}

#[tokio::test]
async fn stop_reasons_are_kept_per_turn_and_a_version_1_file_gains_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v1.db");
    {
        // A file as the first schema version left it, with one turn.
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE sessions (id TEXT PRIMARY KEY NOT NULL, agent_alias TEXT NOT NULL,
                workspace_dir TEXT NOT NULL, mcp_servers TEXT NOT NULL, owner TEXT,
                created_at INTEGER NOT NULL, last_activity INTEGER NOT NULL);
             CREATE TABLE messages (session_id TEXT NOT NULL REFERENCES sessions(id)
                ON DELETE CASCADE, turn INTEGER NOT NULL, seq INTEGER NOT NULL,
                kind TEXT NOT NULL, payload TEXT NOT NULL, created_at INTEGER NOT NULL,
                PRIMARY KEY (session_id, turn, seq)) WITHOUT ROWID;
             INSERT INTO sessions VALUES ('old', 'coder', '/w', '[]', NULL, 1, 1);
             INSERT INTO messages VALUES ('old', 1, 0, 'user', '{\"text\":\"hi\"}', 1);
             PRAGMA user_version = 1;",
        )
        .unwrap();
    }
    let store = Store::open(&path).unwrap();
    store
        .append_ended_turn("old", vec![entry("user", 2)], "cancelled")
        .await
        .unwrap();
    store
        .append_ended_turn(
            "old",
            vec![entry("user", 3), entry("assistant", 3)],
            "end_turn",
        )
        .await
        .unwrap();
    let turns = store.turns("old").await.unwrap();
    let summary: Vec<(i64, Option<&str>, usize)> = turns
        .iter()
        .map(|t| (t.number, t.stop_reason.as_deref(), t.entries.len()))
        .collect();
    assert_eq!(
        summary,
        vec![
            (1, None, 1),
            (2, Some("cancelled"), 1),
            (3, Some("end_turn"), 2)
        ]
    );
    assert_eq!(store.history("old").await.unwrap().len(), 4);
    assert!(store.delete_session("old").await.unwrap());
    let conn = rusqlite::Connection::open(&path).unwrap();
    let left: i64 = conn
        .query_row("SELECT COUNT(*) FROM turns", [], |r| r.get(0))
        .unwrap();
    assert_eq!(left, 0, "stop reasons go with their session");
}

#[test]
fn a_newer_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("future.db");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.pragma_update(None, "user_version", 99).unwrap();
    drop(conn);
    let err = Store::open(&path).unwrap_err();
    assert!(matches!(err, StoreError::TooNew { found: 99, .. }), "{err}");
}

#[test]
fn a_path_under_a_regular_file_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("file"), b"x").unwrap();
    let err = Store::open(&db_in(&dir.path().join("file"))).unwrap_err();
    assert!(matches!(err, StoreError::CreateDir { .. }), "{err}");
    assert!(err.to_string().contains("file"), "{err}");
}

#[test]
fn a_read_only_directory_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let Some(ro) = ReadOnlyDir::new(&dir.path().join("ro")) else {
        return;
    };
    let err = Store::open(&ro.path.join("acp-sessions.db")).unwrap_err();
    assert!(matches!(err, StoreError::Open { .. }), "{err}");
    assert!(err.to_string().contains("acp-sessions.db"), "{err}");
    let leftovers = std::fs::read_dir(&ro.path).unwrap().count();
    assert_eq!(leftovers, 0);
}

#[tokio::test]
async fn config_options_are_kept_per_session_replaced_and_deleted_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("o.db")).unwrap();
    store.create_session(record("s")).await.unwrap();
    store.set_option("s", "model", "a").await.unwrap();
    store.set_option("s", "model", "b").await.unwrap();
    store
        .set_option("s", "thought_level", "high")
        .await
        .unwrap();
    let options = store.options("s").await.unwrap();
    assert_eq!(options.get("model").map(String::as_str), Some("b"));
    assert_eq!(options.len(), 2);
    let missing = store.set_option("nope", "model", "a").await.unwrap_err();
    assert!(
        matches!(missing, StoreError::SessionNotFound(_)),
        "{missing}"
    );
    assert!(store.delete_session("s").await.unwrap());
    assert!(store.options("s").await.unwrap().is_empty());
}
