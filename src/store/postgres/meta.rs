//! The PostgreSQL side of what clients set on sessions (`store::client_meta`): config option
//! values, title and mode, the per-principal listing, compaction and the uploads check.

use std::collections::BTreeMap;
use std::path::PathBuf;

use tokio_postgres::GenericClient;

use super::pg_error;
use crate::store::client_meta::{ClientColumn, ClientSettings, ListQuery, ListedSession};
use crate::store::{StoreError, StoredEntry, now_ms};

pub async fn list_owned(
    c: &impl GenericClient,
    q: &ListQuery,
) -> Result<Vec<ListedSession>, StoreError> {
    let cwd = match &q.cwd {
        Some(dir) => Some(
            dir.to_str()
                .ok_or_else(|| StoreError::NonUtf8Path(dir.clone()))?
                .to_owned(),
        ),
        None => None,
    };
    let (after_ms, after_id) = match &q.after {
        Some((ms, id)) => (Some(*ms), Some(id.clone())),
        None => (None, None),
    };
    let limit = i64::try_from(q.limit).unwrap_or(i64::MAX);
    let rows = c
        .query(
            "SELECT id, workspace_dir, title, last_activity FROM sessions
             WHERE (owner = $1 OR (owner IS NULL AND $2))
               AND ($3::TEXT IS NULL OR workspace_dir = $3)
               AND ($4::BIGINT IS NULL OR last_activity < $4 OR (last_activity = $4 AND id < $5))
             ORDER BY last_activity DESC, id DESC
             LIMIT $6",
            &[
                &q.owner,
                &q.include_unowned,
                &cwd,
                &after_ms,
                &after_id,
                &limit,
            ],
        )
        .await
        .map_err(pg_error)?;
    Ok(rows
        .iter()
        .map(|r| ListedSession {
            id: r.get(0),
            workspace_dir: PathBuf::from(r.get::<_, String>(1)),
            title: r.get(2),
            last_activity: r.get(3),
        })
        .collect())
}

pub async fn client_settings(
    c: &impl GenericClient,
    id: &str,
) -> Result<Option<ClientSettings>, StoreError> {
    let row = c
        .query_opt("SELECT title, mode FROM sessions WHERE id = $1", &[&id])
        .await
        .map_err(pg_error)?;
    Ok(row.map(|r| ClientSettings {
        title: r.get(0),
        mode: r.get(1),
    }))
}

pub async fn set_column(
    c: &impl GenericClient,
    id: &str,
    column: ClientColumn,
    value: &str,
) -> Result<(), StoreError> {
    let sql = format!("UPDATE sessions SET {} = $2 WHERE id = $1", column.name());
    match c.execute(&sql, &[&id, &value]).await.map_err(pg_error)? {
        0 => Err(StoreError::SessionNotFound(id.to_owned())),
        _ => Ok(()),
    }
}

pub async fn replace_history(
    client: &mut deadpool_postgres::Object,
    id: &str,
    entries: &[StoredEntry],
) -> Result<(), StoreError> {
    let now = now_ms();
    let tx = client.transaction().await.map_err(pg_error)?;
    let updated = tx
        .execute(
            "UPDATE sessions SET last_activity = $2 WHERE id = $1",
            &[&id, &now],
        )
        .await
        .map_err(pg_error)?;
    if updated == 0 {
        return Err(StoreError::SessionNotFound(id.to_owned()));
    }
    tx.execute("DELETE FROM turns WHERE session_id = $1", &[&id])
        .await
        .map_err(pg_error)?;
    tx.execute("DELETE FROM messages WHERE session_id = $1", &[&id])
        .await
        .map_err(pg_error)?;
    super::queries::insert_turn(&*tx, id, 1, entries, Some("end_turn"), now).await?;
    tx.commit().await.map_err(pg_error)
}

pub async fn named_by_others(
    c: &impl GenericClient,
    id: &str,
    needle: &str,
) -> Result<bool, StoreError> {
    let row = c
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM messages WHERE session_id <> $1 AND strpos(payload, $2) > 0)",
            &[&id, &needle],
        )
        .await
        .map_err(pg_error)?;
    Ok(row.get(0))
}

pub async fn set_option(
    c: &impl GenericClient,
    id: &str,
    option: &str,
    value: &str,
) -> Result<(), StoreError> {
    let changed = c
        .execute(
            "INSERT INTO session_options (session_id, option_id, value)
             SELECT $1, $2, $3 WHERE EXISTS (SELECT 1 FROM sessions WHERE id = $1)
             ON CONFLICT (session_id, option_id) DO UPDATE SET value = EXCLUDED.value",
            &[&id, &option, &value],
        )
        .await
        .map_err(pg_error)?;
    match changed {
        0 => Err(StoreError::SessionNotFound(id.to_owned())),
        _ => Ok(()),
    }
}

pub async fn options(
    c: &impl GenericClient,
    id: &str,
) -> Result<BTreeMap<String, String>, StoreError> {
    let rows = c
        .query(
            "SELECT option_id, value FROM session_options WHERE session_id = $1",
            &[&id],
        )
        .await
        .map_err(pg_error)?;
    Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
}
