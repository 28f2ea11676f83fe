//! The SQLite side of what clients set on sessions (`store::client_meta`).

use std::path::PathBuf;

use rusqlite::{Connection, OptionalExtension, params};

use crate::store::client_meta::{ClientColumn, ClientSettings, ListQuery, ListedSession};
use crate::store::{StoreError, StoredEntry};

pub fn set_column(
    conn: &mut Connection,
    id: &str,
    column: ClientColumn,
    value: &str,
) -> Result<(), StoreError> {
    let sql = format!("UPDATE sessions SET {} = ?2 WHERE id = ?1", column.name());
    match conn.execute(&sql, params![id, value])? {
        0 => Err(StoreError::SessionNotFound(id.to_owned())),
        _ => Ok(()),
    }
}

pub fn named_by_others(conn: &mut Connection, id: &str, needle: &str) -> Result<bool, StoreError> {
    let sql = "SELECT EXISTS (SELECT 1 FROM messages
               WHERE session_id <> ?1 AND instr(payload, ?2) > 0)";
    Ok(conn.query_row(sql, params![id, needle], |r| r.get::<_, bool>(0))?)
}

pub fn list_owned(conn: &mut Connection, q: &ListQuery) -> Result<Vec<ListedSession>, StoreError> {
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

pub fn replace_history(
    conn: &mut Connection,
    id: &str,
    entries: &[StoredEntry],
) -> Result<(), StoreError> {
    let now = crate::store::now_ms();
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

pub fn client_settings(
    conn: &mut Connection,
    id: &str,
) -> Result<Option<ClientSettings>, StoreError> {
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
