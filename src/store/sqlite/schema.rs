//! Opening the database file: pragmas and `user_version` migrations.

use std::path::Path;
use std::time::Duration;

use rusqlite::Connection;

use crate::store::StoreError;

/// Each entry migrates from version `index` to `index + 1`.
const MIGRATIONS: &[&str] = &[
    // 0 -> 1: sessions and their per-turn history.
    "CREATE TABLE sessions (
        id            TEXT PRIMARY KEY NOT NULL,
        agent_alias   TEXT NOT NULL,
        workspace_dir TEXT NOT NULL,
        mcp_servers   TEXT NOT NULL,
        owner         TEXT,
        created_at    INTEGER NOT NULL,
        last_activity INTEGER NOT NULL
    );
    CREATE TABLE messages (
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        turn       INTEGER NOT NULL,
        seq        INTEGER NOT NULL,
        kind       TEXT NOT NULL,
        payload    TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (session_id, turn, seq)
    ) WITHOUT ROWID;",
    // 1 -> 2: how each turn ended (its ACP stopReason); turns stored before have no row.
    "CREATE TABLE turns (
        session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        turn        INTEGER NOT NULL,
        stop_reason TEXT NOT NULL,
        PRIMARY KEY (session_id, turn)
    ) WITHOUT ROWID;",
    // 2 -> 3: which process runs each session's turns (`store::lease`).
    "CREATE TABLE session_leases (
        session_id TEXT PRIMARY KEY NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        holder     TEXT NOT NULL,
        token      INTEGER NOT NULL,
        expires_at INTEGER NOT NULL
    ) WITHOUT ROWID;",
    // 3 -> 4: what a client set on a session: its title and its autonomy mode.
    "ALTER TABLE sessions ADD COLUMN title TEXT;
    ALTER TABLE sessions ADD COLUMN mode TEXT;",
    // 4 -> 5: the values a client chose for a session's config options (model, thought level).
    "CREATE TABLE session_options (
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        option_id  TEXT NOT NULL,
        value      TEXT NOT NULL,
        PRIMARY KEY (session_id, option_id)
    ) WITHOUT ROWID;",
    // 5 -> 6: nothing here. PostgreSQL's version 6 adds the audit log's table; on SQLite the
    // audit log keeps its own file (`audit.db`, `crate::audit::store`), so the versions stay
    // equal and mean the same schema on both backends.
    "",
    // 6 -> 7: the digests of a session's uploads and delivered files (`store::files`).
    "CREATE TABLE session_files (
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        turn       INTEGER NOT NULL,
        seq        INTEGER NOT NULL,
        kind       TEXT NOT NULL,
        path       TEXT NOT NULL,
        sha256     TEXT NOT NULL,
        size       INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (session_id, turn, seq)
    ) WITHOUT ROWID;",
    // 7 -> 8: "Always allow" answers kept per agent, not per session.
    "CREATE TABLE agent_approvals (
        agent_alias TEXT NOT NULL,
        approval    TEXT NOT NULL,
        created_at  INTEGER NOT NULL,
        PRIMARY KEY (agent_alias, approval)
    ) WITHOUT ROWID;",
    // 8 -> 9: nothing here. PostgreSQL's version 9 adds the audit log's checkpoints; on
    // SQLite they are in `audit.db` (its `user_version` 2), so the versions stay equal.
    "",
];

/// Opens (creating parent directories) and migrates the database at `path`.
pub fn open(path: &Path) -> Result<Connection, StoreError> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|source| StoreError::CreateDir {
            path: parent.to_owned(),
            source,
        })?;
    }
    let open_err = |source| StoreError::Open {
        path: path.to_owned(),
        source,
    };
    let mut conn = Connection::open(path).map_err(open_err)?;
    configure(&conn).map_err(open_err)?;
    migrate(&mut conn, path)?;
    Ok(conn)
}

/// WAL (readers never block the writer), a busy timeout, and enforced foreign keys.
fn configure(conn: &Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(Duration::from_secs(5))?;
    // In WAL mode NORMAL loses no committed turn when the process dies (only on power loss),
    // and saves an fsync per turn.
    conn.execute_batch("PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;")?;
    let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        tracing::warn!(mode, "session store is not in WAL mode");
    }
    Ok(())
}

fn migrate(conn: &mut Connection, path: &Path) -> Result<(), StoreError> {
    let supported = MIGRATIONS.len() as i64;
    let open_err = |source| StoreError::Open {
        path: path.to_owned(),
        source,
    };
    let found: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(open_err)?;
    if found > supported {
        return Err(StoreError::TooNew {
            path: path.to_owned(),
            found,
            supported,
        });
    }
    for (version, sql) in MIGRATIONS.iter().enumerate().skip(found as usize) {
        let tx = conn.transaction().map_err(open_err)?;
        tx.execute_batch(sql).map_err(open_err)?;
        tx.pragma_update(None, "user_version", version as i64 + 1)
            .map_err(open_err)?;
        tx.commit().map_err(open_err)?;
    }
    Ok(())
}
