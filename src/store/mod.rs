//! The session store: metadata, per-turn history and session leases, on SQLite (the embedded
//! default) or PostgreSQL (shared by several daemons).
//!
//! [`Store`] is a cheap, cloneable handle over one [`Backend`]: [`sqlite`] keeps one connection
//! on a dedicated thread, [`postgres`] a connection pool; both migrate their schema on open and
//! give the same answers (the same SQL where the dialects agree). [`Location`] parses
//! `[store] url`. Leases ([`lease`]) let exactly one daemon run a session's turns, and every
//! turn's write checks the lease's fencing token, so a stale holder can never write after a
//! takeover. [`client_meta`]: what clients set on sessions (titles, modes) and the
//! per-principal listing. "Always allow" answers kept per agent (network hosts) are in the
//! `agent_approvals` table ([`Store::add_agent_approval`]). History entries are opaque: the store keeps their `kind` and JSON `payload` in order
//! and never looks inside.

mod backend;
pub mod client_meta;
pub mod copy;
pub mod files;
pub mod lease;
mod location;
mod postgres;
mod sqlite;

pub use client_meta::{ClientColumn, ClientSettings, ListQuery, ListedSession};

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

pub use backend::Backend;
pub use files::SessionFile;
pub use lease::{Fence, Holder, LeaseError};
pub use location::Location;
pub use postgres::{connect_client as postgres_client, pg_message};

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
    #[error("cannot open the session store {location}: {message}")]
    Connect { location: String, message: String },
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
    #[error("session `{0}` is already in the store")]
    SessionExists(String),
    #[error("workspace path {0} is not valid UTF-8")]
    NonUtf8Path(PathBuf),
    #[error("session store query failed: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("session store query failed: {0}")]
    Postgres(String),
    #[error("corrupt JSON in the session store: {0}")]
    Json(#[from] serde_json::Error),
    #[error(transparent)]
    Lease(#[from] LeaseError),
    #[error("the session store did not answer (its thread stopped or the operation panicked)")]
    Closed,
}

/// A handle to the session store; clones share one backend.
#[derive(Clone)]
pub struct Store {
    backend: Arc<dyn Backend>,
    location: Location,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("location", &self.location.to_string())
            .finish()
    }
}

impl Store {
    /// Opens (creating parent directories and the file) and migrates the SQLite database at
    /// `path`.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        Ok(Store {
            backend: Arc::new(sqlite::SqliteBackend::open(path)?),
            location: Location::Sqlite(path.to_path_buf()),
        })
    }

    /// Opens and migrates the store at `location`; `pool_size` bounds PostgreSQL connections.
    /// Blocks the calling thread (a PostgreSQL store is reached from a private runtime while
    /// the caller's is being built).
    pub fn open_location(location: &Location, pool_size: usize) -> Result<Store, StoreError> {
        match location {
            Location::Sqlite(path) => Store::open(path),
            Location::Postgres(url) => Ok(Store {
                backend: Arc::new(postgres::PgBackend::connect(url, pool_size)?),
                location: location.clone(),
            }),
        }
    }

    /// [`Store::open_location`] from async code (tests, `store copy`).
    pub async fn open_location_async(
        location: &Location,
        pool_size: usize,
    ) -> Result<Store, StoreError> {
        match location {
            Location::Sqlite(path) => Store::open(path),
            Location::Postgres(url) => Ok(Store {
                backend: Arc::new(postgres::PgBackend::connect_async(url, pool_size).await?),
                location: location.clone(),
            }),
        }
    }

    /// Where the store is, for messages (a PostgreSQL password is never shown).
    pub fn location(&self) -> &Location {
        &self.location
    }

    /// The SQLite file, when the store is one.
    pub fn path(&self) -> Option<&Path> {
        match &self.location {
            Location::Sqlite(path) => Some(path),
            Location::Postgres(_) => None,
        }
    }

    /// Inserts a new session; an existing id is an error.
    pub async fn create_session(&self, rec: SessionRecord) -> Result<(), StoreError> {
        timed_write(self.backend.create_session(rec)).await
    }

    pub async fn get_session(&self, id: &str) -> Result<Option<SessionRecord>, StoreError> {
        self.backend.get_session(id.to_owned()).await
    }

    /// Every stored entry of the session, in the order it was appended.
    pub async fn history(&self, id: &str) -> Result<Vec<StoredEntry>, StoreError> {
        let turns = self.turns(id).await?;
        Ok(turns.into_iter().flat_map(|t| t.entries).collect())
    }

    /// One transaction: appends the turn's entries (turn number = previous max + 1) and
    /// updates `last_activity`. Either all of a turn is stored or none of it.
    pub async fn append_turn(&self, id: &str, entries: Vec<StoredEntry>) -> Result<(), StoreError> {
        self.write_turn(NewTurn::new(id, entries)).await
    }

    /// [`Store::append_turn`], recording in the same transaction how the turn ended (its ACP
    /// `stopReason`, e.g. `cancelled`).
    pub async fn append_ended_turn(
        &self,
        id: &str,
        entries: Vec<StoredEntry>,
        stop_reason: &str,
    ) -> Result<(), StoreError> {
        let mut turn = NewTurn::new(id, entries);
        turn.stop_reason = Some(stop_reason.to_owned());
        self.write_turn(turn).await
    }

    /// Appends `turn` in one transaction; with a fence, only while that lease is still the
    /// session's (else [`LeaseError::Fenced`], and nothing is written).
    pub async fn write_turn(&self, turn: NewTurn) -> Result<(), StoreError> {
        timed_write(self.backend.append_turn(turn)).await
    }

    /// The session's history grouped by turn, with each turn's stop reason.
    pub async fn turns(&self, id: &str) -> Result<Vec<StoredTurn>, StoreError> {
        self.backend.turns(id.to_owned()).await
    }

    /// Sets `last_activity` to now; a missing session is [`StoreError::SessionNotFound`].
    pub async fn touch(&self, id: &str) -> Result<(), StoreError> {
        timed_write(self.backend.touch(id.to_owned())).await
    }

    /// All sessions, most recently active first.
    pub async fn list_sessions(&self) -> Result<Vec<SessionRecord>, StoreError> {
        let summaries = self.list_summaries().await?;
        Ok(summaries.into_iter().map(|s| s.record).collect())
    }

    /// All sessions with their history sizes, most recently active first.
    pub async fn list_summaries(&self) -> Result<Vec<SessionSummary>, StoreError> {
        self.backend.list_summaries().await
    }

    /// Stores the value of one config option of the session (replacing the previous one).
    pub async fn set_option(&self, id: &str, option: &str, value: &str) -> Result<(), StoreError> {
        let (id, option, value) = (id.to_owned(), option.to_owned(), value.to_owned());
        self.backend.set_option(id, option, value).await
    }

    /// The session's stored config option values, by option id.
    pub async fn options(
        &self,
        id: &str,
    ) -> Result<std::collections::BTreeMap<String, String>, StoreError> {
        self.backend.options(id.to_owned()).await
    }

    /// Remembers an "Always allow" answer (`approval`, e.g. `network:HOST`) for every session of
    /// `agent`, now and after a restart; remembering it twice is no error.
    pub async fn add_agent_approval(&self, agent: &str, approval: &str) -> Result<(), StoreError> {
        let (agent, approval) = (agent.to_owned(), approval.to_owned());
        timed_write(self.backend.add_agent_approval(agent, approval)).await
    }

    /// The "Always allow" answers remembered for `agent`, sorted.
    pub async fn agent_approvals(&self, agent: &str) -> Result<Vec<String>, StoreError> {
        self.backend.agent_approvals(agent.to_owned()).await
    }

    /// Every agent's remembered answers as `(agent, approval)`, sorted (`store copy`).
    pub async fn all_agent_approvals(&self) -> Result<Vec<(String, String)>, StoreError> {
        self.backend.all_agent_approvals().await
    }

    /// Deletes the session and (by cascade) its history, file records and lease; `false` when it did not
    /// exist.
    pub async fn delete_session(&self, id: &str) -> Result<bool, StoreError> {
        timed_write(self.backend.delete_session(id.to_owned())).await
    }

    /// Writes a whole session as it was elsewhere (`store copy`): its row, every turn and its
    /// recorded files, in one transaction; an existing id is [`StoreError::SessionExists`].
    pub async fn import_session(
        &self,
        rec: SessionRecord,
        turns: Vec<StoredTurn>,
        files: Vec<SessionFile>,
    ) -> Result<(), StoreError> {
        self.backend.import_session(rec, turns, files).await
    }

    /// The session's uploads and delivered files ([`files`]), by turn.
    pub async fn files(&self, id: &str) -> Result<Vec<SessionFile>, StoreError> {
        self.backend.files(id.to_owned()).await
    }

    /// Claims `session` for `holder` for `ttl_ms` (see [`lease`]).
    pub async fn acquire_lease(
        &self,
        session: &str,
        holder: &Holder,
        ttl_ms: i64,
    ) -> Result<Fence, StoreError> {
        let request = lease::Request::new(session, holder, ttl_ms);
        self.backend.acquire_lease(request).await
    }

    /// Claims `session` even though its lease is unexpired, provided it is still held by
    /// `from` (a process of this host that has ended).
    pub async fn steal_lease(
        &self,
        session: &str,
        holder: &Holder,
        ttl_ms: i64,
        from: &str,
    ) -> Result<Fence, StoreError> {
        let mut request = lease::Request::new(session, holder, ttl_ms);
        request.steal_from = Some(from.to_owned());
        self.backend.acquire_lease(request).await
    }

    /// Extends the leases in `fences` by `ttl_ms`; answers those no longer held.
    pub async fn renew_leases(
        &self,
        fences: Vec<Fence>,
        ttl_ms: i64,
    ) -> Result<Vec<Fence>, StoreError> {
        self.backend.renew_leases(fences, ttl_ms).await
    }

    /// Who holds `session`'s lease now (expired or not), if anyone.
    pub async fn lease_holder(&self, session: &str) -> Result<Option<String>, StoreError> {
        self.backend.lease_holder(session.to_owned()).await
    }

    /// Gives the lease up (a no-op when it was taken over).
    pub async fn release_lease(&self, fence: Fence) -> Result<(), StoreError> {
        self.backend.release_lease(fence).await
    }
}

/// One turn to append: its entries, how it ended, the files it wrote or delivered, and the
/// lease it is written under.
#[derive(Debug, Clone)]
pub struct NewTurn {
    pub session: String,
    pub entries: Vec<StoredEntry>,
    pub stop_reason: Option<String>,
    pub files: Vec<SessionFile>,
    pub fence: Option<Fence>,
}

impl NewTurn {
    pub fn new(session: &str, entries: Vec<StoredEntry>) -> NewTurn {
        NewTurn {
            session: session.to_owned(),
            entries,
            stop_reason: None,
            files: Vec::new(),
            fence: None,
        }
    }
}

/// Awaits a write, observing its latency (waiting for a connection or the store thread, and
/// the commit) as `zeroclaw_store_write_seconds`, whichever the backend.
async fn timed_write<T>(
    write: impl Future<Output = Result<T, StoreError>>,
) -> Result<T, StoreError> {
    let started = std::time::Instant::now();
    let result = write.await;
    crate::metrics::get().store_write(started.elapsed());
    result
}

/// The current time as Unix milliseconds.
pub fn now_ms() -> i64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    since.map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
