//! What a client sets on a stored session — its title and its autonomy mode — and the
//! per-principal listing behind `session/list`: keyset pages, most recent activity first,
//! optionally only one working directory. Also whether any other session's history contains
//! a given text (which uploads deleting a session may remove).

use std::path::PathBuf;

use rusqlite::{Connection, OptionalExtension, params};

use super::{Store, StoreError, StoredEntry};

/// One row of a listing.
#[derive(Debug, Clone, PartialEq)]
pub struct ListedSession {
    pub id: String,
    pub workspace_dir: PathBuf,
    pub title: Option<String>,
    /// Unix time in milliseconds.
    pub last_activity: i64,
}

/// Which sessions a listing returns.
#[derive(Debug, Clone)]
pub struct ListQuery {
    /// Sessions stored with this owner...
    pub owner: String,
    /// ...and, when set, those stored without one.
    pub include_unowned: bool,
    /// Only sessions of this working directory (compared as stored: canonical).
    pub cwd: Option<PathBuf>,
    /// Only sessions after this `(last_activity, id)` in the listing order.
    pub after: Option<(i64, String)>,
    pub limit: usize,
}

/// A session's client-set values.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClientSettings {
    pub title: Option<String>,
    pub mode: Option<String>,
}

impl Store {
    /// A page of the sessions `query` selects, most recently active first (ties by id).
    pub async fn list_owned(&self, query: ListQuery) -> Result<Vec<ListedSession>, StoreError> {
        self.worker.run(move |c| list_owned(c, &query)).await
    }

    /// The session's title and mode; `None` when the session is not stored.
    pub async fn client_settings(&self, id: &str) -> Result<Option<ClientSettings>, StoreError> {
        let id = id.to_owned();
        self.worker.run(move |c| client_settings(c, &id)).await
    }

    /// Sets the session's title; a missing session is [`StoreError::SessionNotFound`].
    pub async fn set_title(&self, id: &str, title: &str) -> Result<(), StoreError> {
        self.set_column(id, "title", title.to_owned()).await
    }

    /// Sets the session's autonomy mode; a missing session is [`StoreError::SessionNotFound`].
    pub async fn set_mode(&self, id: &str, mode: &str) -> Result<(), StoreError> {
        self.set_column(id, "mode", mode.to_owned()).await
    }

    async fn set_column(
        &self,
        id: &str,
        column: &'static str,
        value: String,
    ) -> Result<(), StoreError> {
        let id = id.to_owned();
        self.worker
            .run(move |c| {
                let sql = format!("UPDATE sessions SET {column} = ?2 WHERE id = ?1");
                match c.execute(&sql, params![id, value])? {
                    0 => Err(StoreError::SessionNotFound(id)),
                    _ => Ok(()),
                }
            })
            .await
    }

    /// One transaction: the session's whole history becomes `entries`, as its only turn
    /// (a compacted history); `last_activity` is updated.
    pub async fn replace_history(
        &self,
        id: &str,
        entries: Vec<StoredEntry>,
    ) -> Result<(), StoreError> {
        let id = id.to_owned();
        self.worker
            .run(move |c| replace_history(c, &id, &entries))
            .await
    }

    /// Whether the stored history of any session but `id` contains `needle` (exactly, as a
    /// substring of an entry's JSON).
    pub async fn named_by_others(&self, id: &str, needle: &str) -> Result<bool, StoreError> {
        let (id, needle) = (id.to_owned(), needle.to_owned());
        self.worker
            .run(move |c| {
                let sql = "SELECT EXISTS (SELECT 1 FROM messages
                           WHERE session_id <> ?1 AND instr(payload, ?2) > 0)";
                Ok(c.query_row(sql, params![id, needle], |r| r.get::<_, bool>(0))?)
            })
            .await
    }
}

fn list_owned(conn: &mut Connection, q: &ListQuery) -> Result<Vec<ListedSession>, StoreError> {
    let cwd = match &q.cwd {
        Some(dir) => Some(
            dir.to_str()
                .ok_or_else(|| StoreError::NonUtf8Path(dir.clone()))?
                .to_owned(),
        ),
        None => None,
    };
    let (after_ms, after_id) = match &q.after {
        Some((ms, id)) => (Some(*ms), Some(id.as_str())),
        None => (None, None),
    };
    let mut stmt = conn.prepare_cached(
        "SELECT id, workspace_dir, title, last_activity FROM sessions
         WHERE (owner = ?1 OR (owner IS NULL AND ?2))
           AND (?3 IS NULL OR workspace_dir = ?3)
           AND (?4 IS NULL OR last_activity < ?4 OR (last_activity = ?4 AND id < ?5))
         ORDER BY last_activity DESC, id DESC
         LIMIT ?6",
    )?;
    let limit = i64::try_from(q.limit).unwrap_or(i64::MAX);
    let rows = stmt.query_map(
        params![q.owner, q.include_unowned, cwd, after_ms, after_id, limit],
        |r| {
            Ok(ListedSession {
                id: r.get(0)?,
                workspace_dir: PathBuf::from(r.get::<_, String>(1)?),
                title: r.get(2)?,
                last_activity: r.get(3)?,
            })
        },
    )?;
    Ok(rows.collect::<Result<_, _>>()?)
}

fn replace_history(
    conn: &mut Connection,
    id: &str,
    entries: &[StoredEntry],
) -> Result<(), StoreError> {
    let now = super::now_ms();
    let tx = conn.transaction()?;
    let sql = "UPDATE sessions SET last_activity = ?2 WHERE id = ?1";
    if tx.execute(sql, params![id, now])? == 0 {
        return Err(StoreError::SessionNotFound(id.to_owned()));
    }
    tx.execute("DELETE FROM turns WHERE session_id = ?1", [id])?;
    tx.execute("DELETE FROM messages WHERE session_id = ?1", [id])?;
    for (seq, entry) in entries.iter().enumerate() {
        let payload = serde_json::to_string(&entry.payload)?;
        tx.execute(
            "INSERT INTO messages (session_id, turn, seq, kind, payload, created_at)
             VALUES (?1, 1, ?2, ?3, ?4, ?5)",
            params![id, seq as i64, entry.kind, payload, now],
        )?;
    }
    tx.execute(
        "INSERT INTO turns (session_id, turn, stop_reason) VALUES (?1, 1, 'end_turn')",
        [id],
    )?;
    tx.commit()?;
    Ok(())
}

fn client_settings(conn: &mut Connection, id: &str) -> Result<Option<ClientSettings>, StoreError> {
    let sql = "SELECT title, mode FROM sessions WHERE id = ?1";
    let row = conn
        .query_row(sql, [id], |r| {
            Ok(ClientSettings {
                title: r.get(0)?,
                mode: r.get(1)?,
            })
        })
        .optional()?;
    Ok(row)
}
