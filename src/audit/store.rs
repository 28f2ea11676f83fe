//! The audit database: one table of chained records in its own SQLite file (WAL,
//! `synchronous = NORMAL`), the writer thread that appends to it, and the reads of the CLI.
//!
//! Every append is one `BEGIN IMMEDIATE` transaction that reads the head, links the new record
//! to it and commits, so two processes on the same file still build one chain. The caller
//! waits for the commit: a record is in the WAL before the event it describes is answered.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;
use tokio::sync::oneshot;

use super::chain::{self, ALG_HMAC, ALG_SHA256, GENESIS, Row};
use super::{AuditError, anchor};

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS records (
    seq       INTEGER PRIMARY KEY NOT NULL,
    time_ms   INTEGER NOT NULL,
    body      TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    hash      TEXT NOT NULL
);";

/// Opens (creating the file and its directory) the audit database for writing.
pub fn open(path: &Path) -> Result<Connection, AuditError> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| AuditError::open(path, e.to_string()))?;
    }
    let conn = Connection::open(path).map_err(|e| AuditError::open(path, e.to_string()))?;
    let setup = || -> rusqlite::Result<()> {
        conn.busy_timeout(Duration::from_secs(5))?;
        // WAL + NORMAL: a committed record survives the process being killed; only a power
        // loss can take the last commits (no fsync per record).
        let _: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
        conn.execute_batch("PRAGMA synchronous = NORMAL;")?;
        conn.execute_batch(SCHEMA)?;
        Ok(())
    };
    setup().map_err(|e| AuditError::open(path, e.to_string()))?;
    Ok(conn)
}

/// Opens an existing audit database for reading only.
pub fn open_read(path: &Path) -> Result<Connection, AuditError> {
    if !path.exists() {
        return Err(AuditError::open(path, "no such file".into()));
    }
    let conn = Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .map_err(|e| AuditError::open(path, e.to_string()))?;
    conn.busy_timeout(Duration::from_secs(5))
        .map_err(|e| AuditError::open(path, e.to_string()))?;
    Ok(conn)
}

/// Appends `body` (an object without `seq`, `alg`) as the next record; returns its seq and
/// hash.
pub fn append(
    conn: &mut Connection,
    mut body: Value,
    key: Option<&[u8]>,
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

/// Deletes the records older than `before_ms` (a prefix of the chain) and appends a
/// checkpoint naming the last pruned seq and its hash; returns how many went.
pub fn prune(
    conn: &mut Connection,
    path: &Path,
    before_ms: i64,
    key: Option<&[u8]>,
) -> Result<u64, String> {
    let query = |sql: &str, arg: Option<i64>| -> Result<Option<i64>, String> {
        let value = match arg {
            Some(arg) => conn.query_row(sql, [arg], |r| r.get(0)),
            None => conn.query_row(sql, [], |r| r.get(0)),
        };
        value.map_err(|e| e.to_string())
    };
    let first_kept = query(
        "SELECT MIN(seq) FROM records WHERE time_ms >= ?1",
        Some(before_ms),
    )?;
    let through = match first_kept {
        Some(seq) => seq - 1,
        None => query("SELECT MAX(seq) FROM records", None)?.unwrap_or(0),
    };
    let hash: Option<String> = conn
        .query_row("SELECT hash FROM records WHERE seq = ?1", [through], |r| {
            r.get(0)
        })
        .optional()
        .map_err(|e| e.to_string())?;
    let Some(hash) = hash else {
        return Ok(0);
    };
    // The checkpoint goes in first, so the pruned head is named in the chain before anything
    // is deleted; then the prefix goes.
    let body = serde_json::json!({
        "kind": "checkpoint",
        "time_ms": crate::store::now_ms(),
        "pruned_through_seq": through,
        "pruned_head_hash": hash,
    });
    let (seq, hash) = append(conn, body, key)?;
    if let Err(error) = anchor::write(path, seq, &hash, key) {
        tracing::warn!(%error, "cannot write the audit anchor");
    }
    let deleted = conn
        .execute("DELETE FROM records WHERE seq <= ?1", [through])
        .map_err(|e| e.to_string())?;
    Ok(deleted as u64)
}

/// A body to append, or `None`: a probe answered with the open state.
/// How often, at most, the anchor is rewritten while records come in.
const ANCHOR_EVERY: Duration = Duration::from_secs(1);

type Job = (Option<Value>, oneshot::Sender<Result<i64, String>>);

/// The sender side of the writer thread.
#[derive(Clone)]
pub struct Writer {
    jobs: mpsc::Sender<Job>,
    /// Whether the file opened and the last append committed (for `/readyz`).
    healthy: Arc<AtomicBool>,
}

impl Writer {
    /// Starts the thread, which opens `path` itself (start-up does not wait for the disk);
    /// an open failure is the answer to every append.
    /// `key` is the HMAC key (or why it is unusable: then nothing is written, never unkeyed).
    pub fn spawn(path: PathBuf, key: Result<Option<Vec<u8>>, String>) -> Writer {
        let (jobs, inbox) = mpsc::channel::<Job>();
        let healthy = Arc::new(AtomicBool::new(false));
        let health = healthy.clone();
        let started = std::thread::Builder::new()
            .name("zeroclaw-audit".into())
            .spawn(move || {
                let mut conn = key.and_then(|key| {
                    let conn = open(&path).map_err(|e| e.to_string())?;
                    Ok((conn, key))
                });
                health.store(conn.is_ok(), Ordering::SeqCst);
                // The newest head not yet anchored, and when the anchor was last written.
                let mut unanchored: Option<(i64, String)> = None;
                let mut anchored_at = Instant::now();
                loop {
                    let job = match inbox.recv_timeout(ANCHOR_EVERY) {
                        Ok(job) => Some(job),
                        Err(mpsc::RecvTimeoutError::Timeout) => None,
                        Err(mpsc::RecvTimeoutError::Disconnected) => break,
                    };
                    if let Some((body, reply)) = job {
                        let answer = match (&mut conn, body) {
                            (Ok((conn, key)), Some(body)) => append(conn, body, key.as_deref()),
                            (Ok(_), None) => Ok((0, String::new())),
                            (Err(e), _) => Err(e.clone()),
                        };
                        health.store(answer.is_ok(), Ordering::SeqCst);
                        if let Ok((seq, hash)) = &answer
                            && *seq > 0
                        {
                            unanchored = Some((*seq, hash.clone()));
                        }
                        let _ = reply.send(answer.map(|(seq, _)| seq));
                        if anchored_at.elapsed() < ANCHOR_EVERY {
                            continue;
                        }
                    }
                    if let (Some((seq, hash)), Ok((_, key))) = (unanchored.take(), &conn) {
                        if let Err(error) = anchor::write(&path, seq, &hash, key.as_deref()) {
                            tracing::warn!(%error, "cannot write the audit anchor");
                        }
                        anchored_at = Instant::now();
                    }
                }
            });
        if let Err(error) = started {
            tracing::error!(%error, "cannot start the audit writer thread");
        }
        Writer { jobs, healthy }
    }

    /// The file opened and the last append (if any) committed.
    pub fn healthy(&self) -> bool {
        self.healthy.load(Ordering::SeqCst)
    }

    /// Appends `body` and waits for its commit.
    pub async fn append(&self, body: Value) -> Result<i64, String> {
        self.send(Some(body)).await
    }

    /// Waits until the thread has opened the file; `Err` says why it could not.
    pub async fn probe(&self) -> Result<(), String> {
        self.send(None).await.map(|_| ())
    }

    async fn send(&self, body: Option<Value>) -> Result<i64, String> {
        let (reply, answer) = oneshot::channel();
        self.jobs
            .send((body, reply))
            .map_err(|_| "the audit writer is not running".to_owned())?;
        answer
            .await
            .map_err(|_| "the audit writer stopped".to_owned())?
    }
}
