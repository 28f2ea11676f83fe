//! The SQL of the `agent_approvals` table: the "Always allow" answers of one agent's sessions.

use rusqlite::{Connection, params};

use crate::store::{StoreError, now_ms};

pub fn add(conn: &mut Connection, agent: &str, approval: &str) -> Result<(), StoreError> {
    conn.execute(
        "INSERT INTO agent_approvals (agent_alias, approval, created_at) VALUES (?1, ?2, ?3)
         ON CONFLICT (agent_alias, approval) DO NOTHING",
        params![agent, approval, now_ms()],
    )?;
    Ok(())
}

pub fn list(conn: &mut Connection, agent: &str) -> Result<Vec<String>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT approval FROM agent_approvals WHERE agent_alias = ?1 ORDER BY approval",
    )?;
    let rows = stmt.query_map([agent], |r| r.get(0))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

pub fn all(conn: &mut Connection) -> Result<Vec<(String, String)>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT agent_alias, approval FROM agent_approvals ORDER BY agent_alias, approval",
    )?;
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<Result<_, _>>()?)
}
