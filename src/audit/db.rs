//! Where the audit log is kept: its own SQLite file beside the session store
//! (`<workspace_dir>/sessions/audit.db`, [`super::store`]), or, when `[store] url` is a
//! PostgreSQL database, that database's `audit_records` table ([`super::postgres`]), shared
//! by every daemon on it. [`Db`] answers the same operations on both; pruning
//! ([`super::prune`]) is written once over them.

use std::path::PathBuf;

use rusqlite::Connection;
use serde_json::Value;

use super::chain::Row;
use super::checkpoint::Stored;
use super::postgres::PgLog;
use super::{AuditError, store};
use crate::config::Config;
use crate::store::Location;

/// Which audit log a configuration names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A SQLite file of its own.
    Sqlite(PathBuf),
    /// The `audit_records` table of the PostgreSQL session store at this URL.
    Postgres(String),
}

impl Target {
    /// The session store's database when it is PostgreSQL, else `audit.db`.
    pub fn of(config: &Config) -> Target {
        match config.store_location() {
            Location::Postgres(url) => Target::Postgres(url),
            Location::Sqlite(_) => Target::Sqlite(config.audit_path()),
        }
    }

    /// The log that goes with the session store at `location`: its database when it is
    /// PostgreSQL, else the `audit.db` beside the SQLite file (`store copy`).
    pub fn beside(location: &Location) -> Target {
        match location {
            Location::Postgres(url) => Target::Postgres(url.clone()),
            Location::Sqlite(path) => Target::Sqlite(path.with_file_name("audit.db")),
        }
    }

    /// Whether there is a log to read (a SQLite file exists; a database always has the table).
    pub fn exists(&self) -> bool {
        match self {
            Target::Sqlite(path) => path.is_file(),
            Target::Postgres(_) => true,
        }
    }

    /// Where the log is, for messages (a password is never shown).
    pub fn describe(&self) -> String {
        match self {
            Target::Sqlite(path) => path.display().to_string(),
            Target::Postgres(url) => format!("{} (audit_records)", Location::Postgres(url.clone())),
        }
    }
}

/// An open audit log.
pub enum Db {
    Sqlite(Connection),
    Postgres(PgLog),
}

impl Db {
    /// Opens the log for appending (creating the SQLite file, migrating the database).
    pub fn open(target: &Target) -> Result<Db, AuditError> {
        match target {
            Target::Sqlite(path) => store::open(path).map(Db::Sqlite),
            Target::Postgres(url) => PgLog::open(url)
                .map(Db::Postgres)
                .map_err(|e| AuditError::open(target.describe(), e)),
        }
    }

    /// Opens an existing log for reading (a SQLite file must exist).
    pub fn open_read(target: &Target) -> Result<Db, AuditError> {
        match target {
            Target::Sqlite(path) => store::open_read(path).map(Db::Sqlite),
            Target::Postgres(_) => Db::open(target),
        }
    }

    /// Appends `body` (an object without `seq`, `alg`) as the next record; returns its seq
    /// and hash.
    pub fn append(&mut self, body: Value, key: Option<&[u8]>) -> Result<(i64, String), String> {
        match self {
            Db::Sqlite(conn) => store::append(conn, body, key),
            Db::Postgres(log) => log.append(body, key),
        }
    }

    /// Appends `body` like [`Db::append`], then `rows` unchanged at the next seqs, in one
    /// transaction holding the appenders' lock (an imported segment, [`super::import`]).
    pub fn append_then(
        &mut self,
        body: Value,
        key: Option<&[u8]>,
        rows: &[Row],
    ) -> Result<(i64, String), String> {
        match self {
            Db::Sqlite(conn) => store::append_then(conn, body, key, rows),
            Db::Postgres(log) => log.append_then(body, key, rows),
        }
    }

    /// Every row in seq order.
    pub fn rows(&mut self) -> Result<Vec<Row>, String> {
        match self {
            Db::Sqlite(conn) => store::rows(conn),
            Db::Postgres(log) => log.rows(),
        }
    }

    /// Inserts `rows` as they are (with their hashes) in one transaction (`store copy`).
    pub fn insert_rows(&mut self, rows: &[Row]) -> Result<(), String> {
        match self {
            Db::Sqlite(conn) => store::insert_rows(conn, rows),
            Db::Postgres(log) => log.insert_rows(rows),
        }
    }

    /// The bodies of the records after `seq`, in seq order.
    pub fn bodies_after(&mut self, seq: i64) -> Result<Vec<(i64, String)>, String> {
        match self {
            Db::Sqlite(conn) => store::bodies_after(conn, seq),
            Db::Postgres(log) => log.bodies_after(seq),
        }
    }

    /// Stores a signed checkpoint beside the records.
    pub fn insert_checkpoint(&mut self, checkpoint: &Stored) -> Result<(), String> {
        match self {
            Db::Sqlite(conn) => store::insert_checkpoint(conn, checkpoint),
            Db::Postgres(log) => log.insert_checkpoint(checkpoint),
        }
    }

    /// Every stored checkpoint, by tree size.
    pub fn checkpoints(&mut self) -> Result<Vec<Stored>, String> {
        match self {
            Db::Sqlite(conn) => store::checkpoints(conn),
            Db::Postgres(log) => log.checkpoints(),
        }
    }

    pub(super) fn bounds(&mut self, before_ms: i64) -> Result<(Option<i64>, Option<i64>), String> {
        match self {
            Db::Sqlite(conn) => store::bounds(conn, before_ms),
            Db::Postgres(log) => log.bounds(before_ms),
        }
    }

    pub(super) fn hash_of(&mut self, seq: i64) -> Result<Option<String>, String> {
        match self {
            Db::Sqlite(conn) => store::hash_of(conn, seq),
            Db::Postgres(log) => log.hash_of(seq),
        }
    }

    pub(super) fn delete_through(&mut self, through: i64) -> Result<u64, String> {
        match self {
            Db::Sqlite(conn) => store::delete_through(conn, through),
            Db::Postgres(log) => log.delete_through(through),
        }
    }
}
