//! The SQL of the `session_options` table: one value per session and config option id.

use std::collections::BTreeMap;

use rusqlite::{Connection, params};

use crate::store::StoreError;

pub fn set(conn: &mut Connection, id: &str, option: &str, value: &str) -> Result<(), StoreError> {
    let changed = conn.execute(
        "INSERT INTO session_options (session_id, option_id, value)
         SELECT ?1, ?2, ?3 WHERE EXISTS (SELECT 1 FROM sessions WHERE id = ?1)
         ON CONFLICT (session_id, option_id) DO UPDATE SET value = excluded.value",
        params![id, option, value],
    )?;
    match changed {
        0 => Err(StoreError::SessionNotFound(id.to_owned())),
        _ => Ok(()),
    }
}

pub fn get(conn: &mut Connection, id: &str) -> Result<BTreeMap<String, String>, StoreError> {
    let mut stmt =
        conn.prepare_cached("SELECT option_id, value FROM session_options WHERE session_id = ?1")?;
    let rows = stmt.query_map([id], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<Result<_, _>>()?)
}
