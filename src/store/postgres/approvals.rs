//! The PostgreSQL side of the `agent_approvals` table: the "Always allow" answers of one
//! agent's sessions, shared by every daemon on the database.

use tokio_postgres::GenericClient;

use super::pg_error;
use crate::store::{StoreError, now_ms};

pub async fn add(c: &impl GenericClient, agent: &str, approval: &str) -> Result<(), StoreError> {
    c.execute(
        "INSERT INTO agent_approvals (agent_alias, approval, created_at) VALUES ($1, $2, $3)
         ON CONFLICT (agent_alias, approval) DO NOTHING",
        &[&agent, &approval, &now_ms()],
    )
    .await
    .map_err(pg_error)?;
    Ok(())
}

pub async fn list(c: &impl GenericClient, agent: &str) -> Result<Vec<String>, StoreError> {
    let rows = c
        .query(
            "SELECT approval FROM agent_approvals WHERE agent_alias = $1 ORDER BY approval",
            &[&agent],
        )
        .await
        .map_err(pg_error)?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

pub async fn all(c: &impl GenericClient) -> Result<Vec<(String, String)>, StoreError> {
    let rows = c
        .query(
            "SELECT agent_alias, approval FROM agent_approvals ORDER BY agent_alias, approval",
            &[],
        )
        .await
        .map_err(pg_error)?;
    Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
}
