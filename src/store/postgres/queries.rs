//! The SQL of each store operation on PostgreSQL; the semantics are the SQLite backend's
//! (`store::sqlite::queries`), operation for operation.

use std::path::PathBuf;

use tokio_postgres::GenericClient;
use tokio_postgres::Row;

use super::pg_error;
use crate::store::files::SessionFile;
use crate::store::lease::{Fence, LeaseError, Request};
use crate::store::{
    NewTurn, SessionRecord, SessionSummary, StoreError, StoredEntry, StoredTurn, now_ms,
};

const SESSION_COLUMNS: &str =
    "id, agent_alias, workspace_dir, mcp_servers, owner, created_at, last_activity";

pub async fn create_session(c: &impl GenericClient, rec: &SessionRecord) -> Result<(), StoreError> {
    insert_session(c, rec).await
}

async fn insert_session(c: &impl GenericClient, rec: &SessionRecord) -> Result<(), StoreError> {
    let workspace = rec
        .workspace_dir
        .to_str()
        .ok_or_else(|| StoreError::NonUtf8Path(rec.workspace_dir.clone()))?;
    let sql = format!(
        "INSERT INTO sessions ({SESSION_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT (id) DO NOTHING"
    );
    let mcp = serde_json::to_string(&rec.mcp_servers)?;
    let inserted = c
        .execute(
            &sql,
            &[
                &rec.id,
                &rec.agent_alias,
                &workspace,
                &mcp,
                &rec.owner,
                &rec.created_at,
                &rec.last_activity,
            ],
        )
        .await
        .map_err(pg_error)?;
    match inserted {
        0 => Err(StoreError::SessionExists(rec.id.clone())),
        _ => Ok(()),
    }
}

pub async fn get_session(
    c: &impl GenericClient,
    id: &str,
) -> Result<Option<SessionRecord>, StoreError> {
    let sql = format!("SELECT {SESSION_COLUMNS} FROM sessions WHERE id = $1");
    let row = c.query_opt(&sql, &[&id]).await.map_err(pg_error)?;
    row.map(|r| session_from(&r)).transpose()
}

pub async fn turns(c: &impl GenericClient, id: &str) -> Result<Vec<StoredTurn>, StoreError> {
    let rows = c
        .query(
            "SELECT m.turn, t.stop_reason, m.kind, m.payload FROM messages m
             LEFT JOIN turns t ON t.session_id = m.session_id AND t.turn = m.turn
             WHERE m.session_id = $1 ORDER BY m.turn, m.seq",
            &[&id],
        )
        .await
        .map_err(pg_error)?;
    let mut turns: Vec<StoredTurn> = Vec::new();
    for row in rows {
        let number: i64 = row.get(0);
        let payload: String = row.get(3);
        let entry = StoredEntry {
            kind: row.get(2),
            payload: serde_json::from_str(&payload)?,
        };
        match turns.last_mut() {
            Some(turn) if turn.number == number => turn.entries.push(entry),
            _ => turns.push(StoredTurn {
                number,
                stop_reason: row.get(1),
                entries: vec![entry],
            }),
        }
    }
    Ok(turns)
}

/// One transaction: the turn's entries and stop reason, under its fence. The session row is
/// locked first, so concurrent writers of one session are serialized.
pub async fn append_turn(
    client: &mut deadpool_postgres::Object,
    turn: &NewTurn,
) -> Result<(), StoreError> {
    let now = now_ms();
    let tx = client.transaction().await.map_err(pg_error)?;
    let id = turn.session.as_str();
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
    if let Some(fence) = &turn.fence {
        check_fence(&*tx, fence).await?;
    }
    let number: i64 = tx
        .query_one(
            "SELECT COALESCE(MAX(turn), 0) + 1 FROM messages WHERE session_id = $1",
            &[&id],
        )
        .await
        .map_err(pg_error)?
        .get(0);
    insert_turn(
        &*tx,
        id,
        number,
        &turn.entries,
        turn.stop_reason.as_deref(),
        now,
    )
    .await?;
    super::files::insert(&*tx, id, &turn.files, Some(number), now).await?;
    tx.commit().await.map_err(pg_error)
}

/// The entries in one statement (arrays unnested), then the stop reason.
pub(super) async fn insert_turn(
    tx: &impl GenericClient,
    id: &str,
    number: i64,
    entries: &[StoredEntry],
    stop_reason: Option<&str>,
    now: i64,
) -> Result<(), StoreError> {
    let seqs: Vec<i64> = (0..entries.len() as i64).collect();
    let kinds: Vec<&str> = entries.iter().map(|e| e.kind.as_str()).collect();
    let payloads = entries
        .iter()
        .map(|e| serde_json::to_string(&e.payload))
        .collect::<Result<Vec<String>, _>>()?;
    tx.execute(
        "INSERT INTO messages (session_id, turn, seq, kind, payload, created_at)
         SELECT $1, $2, s, k, p, $3 FROM UNNEST($4::BIGINT[], $5::TEXT[], $6::TEXT[]) AS e(s, k, p)",
        &[&id, &number, &now, &seqs, &kinds, &payloads],
    )
    .await
    .map_err(pg_error)?;
    if let Some(reason) = stop_reason {
        tx.execute(
            "INSERT INTO turns (session_id, turn, stop_reason) VALUES ($1, $2, $3)",
            &[&id, &number, &reason],
        )
        .await
        .map_err(pg_error)?;
    }
    Ok(())
}

/// The write is refused unless `fence` is still the session's lease (the row stays locked
/// until the turn commits, so a takeover waits for it).
async fn check_fence(tx: &impl GenericClient, fence: &Fence) -> Result<(), StoreError> {
    let row = tx
        .query_opt(
            "SELECT holder, token FROM session_leases WHERE session_id = $1 FOR UPDATE",
            &[&fence.session],
        )
        .await
        .map_err(pg_error)?;
    let current = row.map(|r| (r.get::<_, String>(0), r.get::<_, i64>(1)));
    match current {
        Some((holder, token)) if holder == fence.holder && token == fence.token => Ok(()),
        other => Err(LeaseError::Fenced {
            session: fence.session.clone(),
            holder: other.map_or_else(|| "nobody".to_owned(), |(holder, _)| holder),
            token: fence.token,
        }
        .into()),
    }
}

pub async fn import_session(
    client: &mut deadpool_postgres::Object,
    rec: &SessionRecord,
    turns: &[StoredTurn],
    files: &[SessionFile],
) -> Result<(), StoreError> {
    let tx = client.transaction().await.map_err(pg_error)?;
    insert_session(&*tx, rec).await?;
    for turn in turns {
        let reason = turn.stop_reason.as_deref();
        insert_turn(
            &*tx,
            &rec.id,
            turn.number,
            &turn.entries,
            reason,
            rec.last_activity,
        )
        .await?;
    }
    super::files::insert(&*tx, &rec.id, files, None, rec.last_activity).await?;
    tx.commit().await.map_err(pg_error)
}

/// Takes the lease when it is free, expired, already ours, or held by `steal_from`.
pub async fn acquire_lease(
    client: &mut deadpool_postgres::Object,
    req: &Request,
) -> Result<Fence, StoreError> {
    let now = now_ms();
    let expires_at = now.saturating_add(req.ttl_ms);
    let tx = client.transaction().await.map_err(pg_error)?;
    // A free lease becomes ours with token 1; otherwise the row is locked and judged below.
    tx.execute(
        "INSERT INTO session_leases (session_id, holder, token, expires_at)
         SELECT $1, $2, 1, $3 WHERE EXISTS (SELECT 1 FROM sessions WHERE id = $1)
         ON CONFLICT (session_id) DO NOTHING",
        &[&req.session, &req.holder, &expires_at],
    )
    .await
    .map_err(pg_error)?;
    let row = tx
        .query_opt(
            "SELECT holder, token, expires_at FROM session_leases WHERE session_id = $1 FOR UPDATE",
            &[&req.session],
        )
        .await
        .map_err(pg_error)?
        .ok_or_else(|| StoreError::SessionNotFound(req.session.clone()))?;
    let (holder, token, until): (String, i64, i64) = (row.get(0), row.get(1), row.get(2));
    let token = if holder == req.holder {
        token
    } else if until <= now || req.steal_from.as_deref() == Some(holder.as_str()) {
        token + 1
    } else {
        return Err(LeaseError::Held {
            session: req.session.clone(),
            holder,
            expires_in_ms: until - now,
        }
        .into());
    };
    tx.execute(
        "UPDATE session_leases SET holder = $2, token = $3, expires_at = $4 WHERE session_id = $1",
        &[&req.session, &req.holder, &token, &expires_at],
    )
    .await
    .map_err(pg_error)?;
    tx.commit().await.map_err(pg_error)?;
    Ok(Fence {
        session: req.session.clone(),
        holder: req.holder.clone(),
        token,
    })
}

pub async fn renew_leases(
    client: &mut deadpool_postgres::Object,
    fences: &[Fence],
    ttl_ms: i64,
) -> Result<Vec<Fence>, StoreError> {
    let expires_at = now_ms().saturating_add(ttl_ms);
    let tx = client.transaction().await.map_err(pg_error)?;
    let mut lost = Vec::new();
    for fence in fences {
        let renewed = tx
            .execute(
                "UPDATE session_leases SET expires_at = $4
                 WHERE session_id = $1 AND holder = $2 AND token = $3",
                &[&fence.session, &fence.holder, &fence.token, &expires_at],
            )
            .await
            .map_err(pg_error)?;
        if renewed == 0 {
            lost.push(fence.clone());
        }
    }
    tx.commit().await.map_err(pg_error)?;
    Ok(lost)
}

pub async fn lease_holder(
    c: &impl GenericClient,
    session: &str,
) -> Result<Option<String>, StoreError> {
    let row = c
        .query_opt(
            "SELECT holder FROM session_leases WHERE session_id = $1",
            &[&session],
        )
        .await
        .map_err(pg_error)?;
    Ok(row.map(|r| r.get(0)))
}

pub async fn release_lease(c: &impl GenericClient, fence: &Fence) -> Result<(), StoreError> {
    c.execute(
        "DELETE FROM session_leases WHERE session_id = $1 AND holder = $2 AND token = $3",
        &[&fence.session, &fence.holder, &fence.token],
    )
    .await
    .map_err(pg_error)?;
    Ok(())
}

pub async fn touch(c: &impl GenericClient, id: &str) -> Result<(), StoreError> {
    let updated = c
        .execute(
            "UPDATE sessions SET last_activity = $2 WHERE id = $1",
            &[&id, &now_ms()],
        )
        .await
        .map_err(pg_error)?;
    match updated {
        0 => Err(StoreError::SessionNotFound(id.to_owned())),
        _ => Ok(()),
    }
}

pub async fn list_summaries(c: &impl GenericClient) -> Result<Vec<SessionSummary>, StoreError> {
    let sql = format!(
        "SELECT {SESSION_COLUMNS},
            (SELECT COUNT(DISTINCT turn) FROM messages m WHERE m.session_id = s.id),
            (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id)
         FROM sessions s ORDER BY last_activity DESC, created_at DESC, id"
    );
    let rows = c.query(&sql, &[]).await.map_err(pg_error)?;
    rows.iter()
        .map(|r| {
            Ok(SessionSummary {
                record: session_from(r)?,
                turns: r.get::<_, i64>(7) as u64,
                entries: r.get::<_, i64>(8) as u64,
            })
        })
        .collect()
}

pub async fn delete_session(c: &impl GenericClient, id: &str) -> Result<bool, StoreError> {
    let deleted = c
        .execute("DELETE FROM sessions WHERE id = $1", &[&id])
        .await
        .map_err(pg_error)?;
    Ok(deleted > 0)
}

fn session_from(r: &Row) -> Result<SessionRecord, StoreError> {
    let mcp: String = r.get(3);
    let workspace: String = r.get(2);
    Ok(SessionRecord {
        id: r.get(0),
        agent_alias: r.get(1),
        workspace_dir: PathBuf::from(workspace),
        mcp_servers: serde_json::from_str(&mcp)?,
        owner: r.get(4),
        created_at: r.get(5),
        last_activity: r.get(6),
    })
}
