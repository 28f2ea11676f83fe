//! The audit log on SQLite: one table of chained records in its own file (WAL,
//! `synchronous = NORMAL`), versioned by `user_version` (1: the `records` table; 2: the
//! `checkpoints` table of signed tree heads beside them).
//!
//! Every append is one `BEGIN IMMEDIATE` transaction that reads the head, links the new record
//! to it and commits, so two processes on the same file still build one chain. The caller
//! waits for the commit: a record is in the WAL before the event it describes is answered.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;

use super::AuditError;
use super::chain::{self, ALG_HMAC, ALG_SHA256, GENESIS, Row};
use super::checkpoint::Stored;

/// The schema version this zeroclaw writes (`PRAGMA user_version`).
const VERSION: i64 = 2;

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS records (
    seq       INTEGER PRIMARY KEY NOT NULL,
    time_ms   INTEGER NOT NULL,
    body      TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    hash      TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS checkpoints (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    tree_size INTEGER NOT NULL,
    time_ms   INTEGER NOT NULL,
    note      TEXT NOT NULL,
    frontier  TEXT NOT NULL
);";

/// Opens (creating the file and its directory) the audit database for writing.
pub fn open(path: &Path) -> Result<Connection, AuditError> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .map_err(|e| AuditError::open(path.display(), e.to_string()))?;
    }
    let conn =
        Connection::open(path).map_err(|e| AuditError::open(path.display(), e.to_string()))?;
    let setup = || -> rusqlite::Result<i64> {
        conn.busy_timeout(Duration::from_secs(5))?;
        // WAL + NORMAL: a committed record survives the process being killed; only a power
        // loss can take the last commits (no fsync per record).
        let _: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
        conn.execute_batch("PRAGMA synchronous = NORMAL;")?;
        conn.execute_batch(SCHEMA)?;
        let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version < VERSION {
            conn.pragma_update(None, "user_version", VERSION)?;
        }
        Ok(version)
    };
    let version = setup().map_err(|e| AuditError::open(path.display(), e.to_string()))?;
    if version > VERSION {
        return Err(AuditError::open(
            path.display(),
            format!("schema version {version}, newer than this zeroclaw supports ({VERSION})"),
        ));
    }
    Ok(conn)
}

/// Opens an existing audit database for reading only.
pub fn open_read(path: &Path) -> Result<Connection, AuditError> {
    if !path.exists() {
        return Err(AuditError::open(path.display(), "no such file".into()));
    }
    let conn = Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .map_err(|e| AuditError::open(path.display(), e.to_string()))?;
    conn.busy_timeout(Duration::from_secs(5))
        .map_err(|e| AuditError::open(path.display(), e.to_string()))?;
    Ok(conn)
}

/// Appends `body` (an object without `seq`, `alg`) as the next record; returns its seq and
/// hash.
pub fn append(
    conn: &mut Connection,
    body: Value,
    key: Option<&[u8]>,
) -> Result<(i64, String), String> {
    append_then(conn, body, key, &[])
}

/// Appends `body` like [`append`] and, in the same transaction, `rows` after it as they are
/// (an imported segment: their own hashes, at the next seqs); returns the appended seq and
/// hash.
pub fn append_then(
    conn: &mut Connection,
    mut body: Value,
    key: Option<&[u8]>,
    rows: &[Row],
) -> Result<(i64, String), String> {
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(|e| e.to_string())?;
    let head: Option<(i64, String)> = tx
        .query_row(
            "SELECT seq, hash FROM records ORDER BY seq DESC LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()
        .map_err(|e| e.to_string())?;
    let (seq, prev_hash) = match head {
        Some((seq, hash)) => (seq + 1, hash),
        None => (1, GENESIS.to_owned()),
    };
    body["seq"] = seq.into();
    body["alg"] = if key.is_some() { ALG_HMAC } else { ALG_SHA256 }.into();
    let time_ms = body["time_ms"].as_i64().unwrap_or(0);
    let hash = chain::link_hash(&prev_hash, &body, key);
    tx.execute(
        "INSERT INTO records (seq, time_ms, body, prev_hash, hash) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![seq, time_ms, chain::canonical(&body), prev_hash, hash],
    )
    .map_err(|e| e.to_string())?;
    for (n, row) in rows.iter().enumerate() {
        tx.execute(
            "INSERT INTO records (seq, time_ms, body, prev_hash, hash) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![
                seq + 1 + n as i64,
                row.time_ms(),
                row.body,
                row.prev_hash,
                row.hash
            ],
        )
        .map_err(|e| e.to_string())?;
    }
    tx.commit().map_err(|e| e.to_string())?;
    Ok((seq, hash))
}

/// Every row in seq order.
pub fn rows(conn: &Connection) -> Result<Vec<Row>, String> {
    let mut stmt = conn
        .prepare("SELECT seq, body, prev_hash, hash FROM records ORDER BY seq")
        .map_err(|e| e.to_string())?;
    let rows = stmt
        .query_map([], |r| {
            Ok(Row {
                seq: r.get(0)?,
                body: r.get(1)?,
                prev_hash: r.get(2)?,
                hash: r.get(3)?,
            })
        })
        .map_err(|e| e.to_string())?;
    rows.collect::<Result<_, _>>().map_err(|e| e.to_string())
}

/// The first seq at or after `before_ms`, and the newest seq.
pub fn bounds(conn: &Connection, before_ms: i64) -> Result<(Option<i64>, Option<i64>), String> {
    conn.query_row(
        "SELECT (SELECT MIN(seq) FROM records WHERE time_ms >= ?1), (SELECT MAX(seq) FROM records)",
        [before_ms],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
    .map_err(|e| e.to_string())
}

/// The hash of record `seq`, if it is there.
pub fn hash_of(conn: &Connection, seq: i64) -> Result<Option<String>, String> {
    conn.query_row("SELECT hash FROM records WHERE seq = ?1", [seq], |r| {
        r.get(0)
    })
    .optional()
    .map_err(|e| e.to_string())
}

/// Deletes the records up to `through`; returns how many went.
pub fn delete_through(conn: &Connection, through: i64) -> Result<u64, String> {
    conn.execute("DELETE FROM records WHERE seq <= ?1", [through])
        .map(|n| n as u64)
        .map_err(|e| e.to_string())
}

/// Inserts `rows` as they are, in one transaction.
pub fn insert_rows(conn: &mut Connection, rows: &[Row]) -> Result<(), String> {
    let tx = conn.transaction().map_err(|e| e.to_string())?;
    for row in rows {
        tx.execute(
            "INSERT INTO records (seq, time_ms, body, prev_hash, hash) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![row.seq, row.time_ms(), row.body, row.prev_hash, row.hash],
        )
        .map_err(|e| e.to_string())?;
    }
    tx.commit().map_err(|e| e.to_string())
}

/// The bodies of the records after `seq`, in seq order (the leaves a writer adds to its tree).
pub fn bodies_after(conn: &Connection, seq: i64) -> Result<Vec<(i64, String)>, String> {
    let mut stmt = conn
        .prepare("SELECT seq, body FROM records WHERE seq > ?1 ORDER BY seq")
        .map_err(|e| e.to_string())?;
    let rows = stmt
        .query_map([seq], |r| Ok((r.get(0)?, r.get(1)?)))
        .map_err(|e| e.to_string())?;
    rows.collect::<Result<_, _>>().map_err(|e| e.to_string())
}

/// Stores a signed checkpoint.
pub fn insert_checkpoint(conn: &Connection, checkpoint: &Stored) -> Result<(), String> {
    conn.execute(
        "INSERT INTO checkpoints (tree_size, time_ms, note, frontier) VALUES (?1, ?2, ?3, ?4)",
        params![
            checkpoint.tree_size,
            checkpoint.time_ms,
            checkpoint.note,
            serde_json::to_string(&checkpoint.frontier).unwrap_or_default()
        ],
    )
    .map(|_| ())
    .map_err(|e| e.to_string())
}

/// Every stored checkpoint, by tree size (then as stored); none in a log older than them.
pub fn checkpoints(conn: &Connection) -> Result<Vec<Stored>, String> {
    let has_table: bool = conn
        .query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'checkpoints')",
            [],
            |r| r.get(0),
        )
        .map_err(|e| e.to_string())?;
    if !has_table {
        return Ok(Vec::new());
    }
    let mut stmt = conn
        .prepare(
            "SELECT tree_size, time_ms, note, frontier FROM checkpoints ORDER BY tree_size, id",
        )
        .map_err(|e| e.to_string())?;
    let rows = stmt
        .query_map([], |r| {
            Ok(Stored {
                tree_size: r.get(0)?,
                time_ms: r.get(1)?,
                note: r.get(2)?,
                frontier: serde_json::from_str(&r.get::<_, String>(3)?).unwrap_or_default(),
            })
        })
        .map_err(|e| e.to_string())?;
    rows.collect::<Result<_, _>>().map_err(|e| e.to_string())
}
