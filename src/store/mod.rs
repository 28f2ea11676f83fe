//! SQLite session store: metadata and per-turn history, off the async executor.
//!
//! [`Store`] is a cheap handle to one connection owned by a dedicated thread ([`worker`]);
//! every method sends a closure there and awaits its answer, so the executor never blocks on
//! disk. [`schema`] opens the file (WAL, busy timeout, foreign keys) and migrates it through
//! `PRAGMA user_version`; [`queries`] holds the SQL. Each turn's stop reason is kept beside its
//! entries. History entries are opaque: the store keeps
//! their `kind` and JSON `payload` in order and never looks inside.

mod queries;
mod schema;
mod worker;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// One session's metadata row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionRecord {
    pub id: String,
    pub agent_alias: String,
    pub workspace_dir: PathBuf,
    pub mcp_servers: serde_json::Value,
    pub owner: Option<String>,
    /// Unix time in milliseconds.
    pub created_at: i64,
    /// Unix time in milliseconds.
    pub last_activity: i64,
}

/// A session with the size of its stored history, for listings.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionSummary {
    pub record: SessionRecord,
    pub turns: u64,
    pub entries: u64,
}

/// One history entry; `kind` and `payload` belong to the agent's history module.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredEntry {
    pub kind: String,
    pub payload: serde_json::Value,
}

/// One stored turn: its number (from 1), how it ended (the ACP `stopReason`; `None` for turns
/// stored before stop reasons were) and its entries in order.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredTurn {
    pub number: i64,
    pub stop_reason: Option<String>,
    pub entries: Vec<StoredEntry>,
}

/// Everything that can go wrong in the store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    #[error("cannot create the session store directory {path}: {source}")]
    CreateDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot open the session store {path}: {source}")]
    Open {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error(
        "the session store {path} has schema version {found}, newer than this zeroclaw supports ({supported})"
    )]
    TooNew {
        path: PathBuf,
        found: i64,
        supported: i64,
    },
    #[error("session `{0}` is not in the store")]
    SessionNotFound(String),
    #[error("workspace path {0} is not valid UTF-8")]
    NonUtf8Path(PathBuf),
    #[error("session store query failed: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("corrupt JSON in the session store: {0}")]
    Json(#[from] serde_json::Error),
    #[error("the session store did not answer (its thread stopped or the operation panicked)")]
    Closed,
}

/// A handle to the session database; clones share one connection and thread.
#[derive(Clone)]
pub struct Store {
    worker: worker::Worker,
    path: PathBuf,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
}

impl Store {
    /// Opens (creating parent directories and the file) and migrates the database at `path`.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let conn = schema::open(path)?;
        Ok(Store {
            worker: worker::Worker::spawn(conn)?,
            path: path.to_path_buf(),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Inserts a new session; an existing id is an error.
    pub async fn create_session(&self, rec: SessionRecord) -> Result<(), StoreError> {
        self.worker
            .run(move |c| queries::create_session(c, &rec))
            .await
    }

    pub async fn get_session(&self, id: &str) -> Result<Option<SessionRecord>, StoreError> {
        let id = id.to_owned();
        self.worker.run(move |c| queries::get_session(c, &id)).await
    }

    /// Every stored entry of the session, in the order it was appended.
    pub async fn history(&self, id: &str) -> Result<Vec<StoredEntry>, StoreError> {
        let id = id.to_owned();
        self.worker.run(move |c| queries::history(c, &id)).await
    }

    /// One transaction: appends the turn's entries (turn number = previous max + 1) and
    /// updates `last_activity`. Either all of a turn is stored or none of it.
    pub async fn append_turn(&self, id: &str, entries: Vec<StoredEntry>) -> Result<(), StoreError> {
        let id = id.to_owned();
        self.worker
            .run(move |c| queries::append_turn(c, &id, &entries, None))
            .await
    }

    /// [`Store::append_turn`], recording in the same transaction how the turn ended (its ACP
    /// `stopReason`, e.g. `cancelled`).
    pub async fn append_ended_turn(
        &self,
        id: &str,
        entries: Vec<StoredEntry>,
        stop_reason: &str,
    ) -> Result<(), StoreError> {
        let id = id.to_owned();
        let reason = stop_reason.to_owned();
        self.worker
            .run(move |c| queries::append_turn(c, &id, &entries, Some(&reason)))
            .await
    }

    /// The session's history grouped by turn, with each turn's stop reason.
    pub async fn turns(&self, id: &str) -> Result<Vec<StoredTurn>, StoreError> {
        let id = id.to_owned();
        self.worker.run(move |c| queries::turns(c, &id)).await
    }

    /// Sets `last_activity` to now; a missing session is [`StoreError::SessionNotFound`].
    pub async fn touch(&self, id: &str) -> Result<(), StoreError> {
        let id = id.to_owned();
        self.worker.run(move |c| queries::touch(c, &id)).await
    }

    /// All sessions, most recently active first.
    pub async fn list_sessions(&self) -> Result<Vec<SessionRecord>, StoreError> {
        let summaries = self.list_summaries().await?;
        Ok(summaries.into_iter().map(|s| s.record).collect())
    }

    /// All sessions with their history sizes, most recently active first.
    pub async fn list_summaries(&self) -> Result<Vec<SessionSummary>, StoreError> {
        self.worker.run(queries::list_summaries).await
    }

    /// Deletes the session and (by cascade) its history; `false` when it did not exist.
    pub async fn delete_session(&self, id: &str) -> Result<bool, StoreError> {
        let id = id.to_owned();
        self.worker
            .run(move |c| queries::delete_session(c, &id))
            .await
    }
}

/// The current time as Unix milliseconds.
pub fn now_ms() -> i64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    since.map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
