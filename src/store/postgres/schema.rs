//! Versioned migrations of the PostgreSQL schema, run once by whichever daemon starts first.
//!
//! The versions match the SQLite backend's: version N here has the tables version N has there.

use tokio_postgres_rustls::MakeRustlsConnect;

use super::pg_error;
use crate::store::StoreError;

/// An arbitrary key of PostgreSQL's advisory lock space, held while migrating.
const MIGRATION_LOCK: i64 = 0x7a65_726f_636c_6177;

/// Each entry migrates from version `index` to `index + 1`.
const MIGRATIONS: &[&str] = &[
    // 0 -> 1: sessions and their per-turn history.
    "CREATE TABLE sessions (
        id            TEXT PRIMARY KEY,
        agent_alias   TEXT NOT NULL,
        workspace_dir TEXT NOT NULL,
        mcp_servers   TEXT NOT NULL,
        owner         TEXT,
        created_at    BIGINT NOT NULL,
        last_activity BIGINT NOT NULL
    );
    CREATE TABLE messages (
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        turn       BIGINT NOT NULL,
        seq        BIGINT NOT NULL,
        kind       TEXT NOT NULL,
        payload    TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        PRIMARY KEY (session_id, turn, seq)
    );",
    // 1 -> 2: how each turn ended.
    "CREATE TABLE turns (
        session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        turn        BIGINT NOT NULL,
        stop_reason TEXT NOT NULL,
        PRIMARY KEY (session_id, turn)
    );",
    // 2 -> 3: which daemon runs each session's turns.
    "CREATE TABLE session_leases (
        session_id TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
        holder     TEXT NOT NULL,
        token      BIGINT NOT NULL,
        expires_at BIGINT NOT NULL
    );",
    // 3 -> 4: what a client set on a session: its title and its autonomy mode.
    "ALTER TABLE sessions ADD COLUMN title TEXT;
    ALTER TABLE sessions ADD COLUMN mode TEXT;",
    // 4 -> 5: the values a client chose for a session's config options (model, thought level).
    "CREATE TABLE session_options (
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        option_id  TEXT NOT NULL,
        value      TEXT NOT NULL,
        PRIMARY KEY (session_id, option_id)
    );",
    // 5 -> 6: the hash-chained audit log (`crate::audit`), shared by every daemon on the
    // database; appends are serialised by an advisory lock, and `seq` keeps it one chain.
    "CREATE TABLE audit_records (
        seq       BIGINT PRIMARY KEY,
        time_ms   BIGINT NOT NULL,
        body      TEXT NOT NULL,
        prev_hash TEXT NOT NULL,
        hash      TEXT NOT NULL
    );",
    // 6 -> 7: the digests of a session's uploads and delivered files (`store::files`).
    "CREATE TABLE session_files (
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        turn       BIGINT NOT NULL,
        seq        BIGINT NOT NULL,
        kind       TEXT NOT NULL,
        path       TEXT NOT NULL,
        sha256     TEXT NOT NULL,
        size       BIGINT NOT NULL,
        created_at BIGINT NOT NULL,
        PRIMARY KEY (session_id, turn, seq)
    );",
    // 7 -> 8: "Always allow" answers kept per agent, not per session.
    "CREATE TABLE agent_approvals (
        agent_alias TEXT NOT NULL,
        approval    TEXT NOT NULL,
        created_at  BIGINT NOT NULL,
        PRIMARY KEY (agent_alias, approval)
    );",
    // 8 -> 9: the audit log's signed checkpoints (`crate::audit::checkpoint`), beside its
    // records; every daemon on the database signs heads of the one tree.
    "CREATE TABLE audit_checkpoints (
        id        BIGSERIAL PRIMARY KEY,
        tree_size BIGINT NOT NULL,
        time_ms   BIGINT NOT NULL,
        note      TEXT NOT NULL,
        frontier  TEXT NOT NULL
    );",
];

/// Brings the database to the newest version over one connection; refuses a newer one.
pub async fn migrate(
    config: &tokio_postgres::Config,
    tls: MakeRustlsConnect,
) -> Result<(), StoreError> {
    let mut client = connect(config, tls).await?;
    let tx = client.transaction().await.map_err(pg_error)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await
        .map_err(pg_error)?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS zeroclaw_schema (version BIGINT NOT NULL);
         INSERT INTO zeroclaw_schema SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM zeroclaw_schema);",
    )
    .await
    .map_err(pg_error)?;
    let found: i64 = tx
        .query_one("SELECT version FROM zeroclaw_schema", &[])
        .await
        .map_err(pg_error)?
        .get(0);
    let supported = MIGRATIONS.len() as i64;
    if found > supported {
        return Err(StoreError::TooNew {
            path: "postgres".into(),
            found,
            supported,
        });
    }
    for sql in &MIGRATIONS[found as usize..] {
        tx.batch_execute(sql).await.map_err(pg_error)?;
    }
    tx.execute("UPDATE zeroclaw_schema SET version = $1", &[&supported])
        .await
        .map_err(pg_error)?;
    tx.commit().await.map_err(pg_error)
}

async fn connect(
    config: &tokio_postgres::Config,
    tls: MakeRustlsConnect,
) -> Result<tokio_postgres::Client, StoreError> {
    let (client, connection) = config.connect(tls).await.map_err(pg_error)?;
    tokio::spawn(connection);
    Ok(client)
}
