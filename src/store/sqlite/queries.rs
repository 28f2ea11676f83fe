//! The SQL behind each store operation, run on the store thread.

use std::path::PathBuf;

use rusqlite::{Connection, OptionalExtension, Row, Transaction, params};

use crate::store::files::SessionFile;
use crate::store::lease::{Fence, LeaseError, Request};
use crate::store::{
    NewTurn, SessionRecord, SessionSummary, StoreError, StoredEntry, StoredTurn, now_ms,
};

const SESSION_COLUMNS: &str =
    "id, agent_alias, workspace_dir, mcp_servers, owner, created_at, last_activity";

pub fn create_session(conn: &mut Connection, rec: &SessionRecord) -> Result<(), StoreError> {
    insert_session(conn, rec)
}

fn insert_session(conn: &Connection, rec: &SessionRecord) -> Result<(), StoreError> {
    if conn
        .query_row(
            "SELECT 1 FROM sessions WHERE id = ?1",
            [&rec.id],
            |_| Ok(()),
        )
        .optional()?
        .is_some()
    {
        return Err(StoreError::SessionExists(rec.id.clone()));
    }
    let workspace = rec
        .workspace_dir
        .to_str()
        .ok_or_else(|| StoreError::NonUtf8Path(rec.workspace_dir.clone()))?;
    conn.execute(
        &format!("INSERT INTO sessions ({SESSION_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"),
        params![
            rec.id,
            rec.agent_alias,
            workspace,
            serde_json::to_string(&rec.mcp_servers)?,
            rec.owner,
            rec.created_at,
            rec.last_activity,
        ],
    )?;
    Ok(())
}

pub fn get_session(conn: &mut Connection, id: &str) -> Result<Option<SessionRecord>, StoreError> {
    let sql = format!("SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?1");
    let row = conn.query_row(&sql, [id], raw_session).optional()?;
    row.map(RawSession::into_record).transpose()
}

/// Every stored entry of the session grouped by turn, each turn with its stop reason (none for
/// turns stored before stop reasons were).
pub fn turns(conn: &mut Connection, id: &str) -> Result<Vec<StoredTurn>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT m.turn, t.stop_reason, m.kind, m.payload FROM messages m
         LEFT JOIN turns t ON t.session_id = m.session_id AND t.turn = m.turn
         WHERE m.session_id = ?1 ORDER BY m.turn, m.seq",
    )?;
    let rows = stmt.query_map([id], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            r.get::<_, Option<String>>(1)?,
            r.get::<_, String>(2)?,
            r.get::<_, String>(3)?,
        ))
    })?;
    let mut turns: Vec<StoredTurn> = Vec::new();
    for row in rows {
        let (number, stop_reason, kind, payload) = row?;
        let entry = StoredEntry {
            kind,
            payload: serde_json::from_str(&payload)?,
        };
        match turns.last_mut() {
            Some(turn) if turn.number == number => turn.entries.push(entry),
            _ => turns.push(StoredTurn {
                number,
                stop_reason,
                entries: vec![entry],
            }),
        }
    }
    Ok(turns)
}

/// One transaction: the turn's entries, and its stop reason when known, under its fence.
pub fn append_turn(conn: &mut Connection, turn: &NewTurn) -> Result<(), StoreError> {
    let now = now_ms();
    let tx = conn.transaction()?;
    let id = turn.session.as_str();
    // Every statement of a turn's write is prepared once per connection (`prepare_cached`):
    // parsing the SQL again on each turn was a tenth of a turn's CPU in the store.
    if tx
        .prepare_cached("UPDATE sessions SET last_activity = ?2 WHERE id = ?1")?
        .execute(params![id, now])?
        == 0
    {
        return Err(StoreError::SessionNotFound(id.to_owned()));
    }
    if let Some(fence) = &turn.fence {
        check_fence(&tx, fence)?;
    }
    let number: i64 = tx
        .prepare_cached("SELECT COALESCE(MAX(turn), 0) + 1 FROM messages WHERE session_id = ?1")?
        .query_row([id], |r| r.get(0))?;
    insert_turn(
        &tx,
        id,
        number,
        &turn.entries,
        turn.stop_reason.as_deref(),
        now,
    )?;
    super::files::insert(&tx, id, &turn.files, Some(number), now)?;
    tx.commit()?;
    Ok(())
}

fn insert_turn(
    tx: &Transaction<'_>,
    id: &str,
    number: i64,
    entries: &[StoredEntry],
    stop_reason: Option<&str>,
    now: i64,
) -> Result<(), StoreError> {
    let mut insert = tx.prepare_cached(
        "INSERT INTO messages (session_id, turn, seq, kind, payload, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    for (seq, entry) in entries.iter().enumerate() {
        let payload = serde_json::to_string(&entry.payload)?;
        insert.execute(params![id, number, seq as i64, entry.kind, payload, now])?;
    }
    if let Some(reason) = stop_reason {
        tx.prepare_cached("INSERT INTO turns (session_id, turn, stop_reason) VALUES (?1, ?2, ?3)")?
            .execute(params![id, number, reason])?;
    }
    Ok(())
}

/// The write is refused unless `fence` is still the session's lease.
fn check_fence(tx: &Transaction<'_>, fence: &Fence) -> Result<(), StoreError> {
    let current: Option<(String, i64)> = tx
        .prepare_cached("SELECT holder, token FROM session_leases WHERE session_id = ?1")?
        .query_row([&fence.session], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
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

/// The session and all its turns as they were elsewhere, in one transaction.
pub fn import_session(
    conn: &mut Connection,
    rec: &SessionRecord,
    turns: &[StoredTurn],
    files: &[SessionFile],
) -> Result<(), StoreError> {
    let tx = conn.transaction()?;
    insert_session(&tx, rec)?;
    for turn in turns {
        let reason = turn.stop_reason.as_deref();
        insert_turn(
            &tx,
            &rec.id,
            turn.number,
            &turn.entries,
            reason,
            rec.last_activity,
        )?;
    }
    super::files::insert(&tx, &rec.id, files, None, rec.last_activity)?;
    tx.commit()?;
    Ok(())
}

/// Takes the lease when it is free, expired, already ours, or held by `steal_from`.
pub fn acquire_lease(conn: &mut Connection, req: &Request) -> Result<Fence, StoreError> {
    let now = now_ms();
    let tx = conn.transaction()?;
    let current: Option<(String, i64, i64)> = tx
        .query_row(
            "SELECT holder, token, expires_at FROM session_leases WHERE session_id = ?1",
            [&req.session],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .optional()?;
    let expires_at = now.saturating_add(req.ttl_ms);
    let token = match current {
        None => {
            tx.execute(
                "INSERT INTO session_leases (session_id, holder, token, expires_at)
                 VALUES (?1, ?2, 1, ?3)",
                params![req.session, req.holder, expires_at],
            )?;
            1
        }
        Some((holder, token, _)) if holder == req.holder => {
            tx.execute(
                "UPDATE session_leases SET expires_at = ?2 WHERE session_id = ?1",
                params![req.session, expires_at],
            )?;
            token
        }
        Some((holder, token, until))
            if until <= now || req.steal_from.as_deref() == Some(holder.as_str()) =>
        {
            tx.execute(
                "UPDATE session_leases SET holder = ?2, token = ?3, expires_at = ?4
                 WHERE session_id = ?1",
                params![req.session, req.holder, token + 1, expires_at],
            )?;
            token + 1
        }
        Some((holder, _, until)) => {
            return Err(LeaseError::Held {
                session: req.session.clone(),
                holder,
                expires_in_ms: until - now,
            }
            .into());
        }
    };
    tx.commit()?;
    Ok(Fence {
        session: req.session.clone(),
        holder: req.holder.clone(),
        token,
    })
}

/// Extends each lease still held as fenced; answers the ones that are not.
pub fn renew_leases(
    conn: &mut Connection,
    fences: &[Fence],
    ttl_ms: i64,
) -> Result<Vec<Fence>, StoreError> {
    let expires_at = now_ms().saturating_add(ttl_ms);
    let tx = conn.transaction()?;
    let mut lost = Vec::new();
    {
        let mut renew = tx.prepare_cached(
            "UPDATE session_leases SET expires_at = ?4
             WHERE session_id = ?1 AND holder = ?2 AND token = ?3",
        )?;
        for fence in fences {
            let params = params![fence.session, fence.holder, fence.token, expires_at];
            if renew.execute(params)? == 0 {
                lost.push(fence.clone());
            }
        }
    }
    tx.commit()?;
    Ok(lost)
}

pub fn lease_holder(conn: &mut Connection, session: &str) -> Result<Option<String>, StoreError> {
    let sql = "SELECT holder FROM session_leases WHERE session_id = ?1";
    Ok(conn.query_row(sql, [session], |r| r.get(0)).optional()?)
}

pub fn release_lease(conn: &mut Connection, fence: &Fence) -> Result<(), StoreError> {
    conn.execute(
        "DELETE FROM session_leases WHERE session_id = ?1 AND holder = ?2 AND token = ?3",
        params![fence.session, fence.holder, fence.token],
    )?;
    Ok(())
}

pub fn touch(conn: &mut Connection, id: &str) -> Result<(), StoreError> {
    let sql = "UPDATE sessions SET last_activity = ?2 WHERE id = ?1";
    match conn.execute(sql, params![id, now_ms()])? {
        0 => Err(StoreError::SessionNotFound(id.to_owned())),
        _ => Ok(()),
    }
}

pub fn list_summaries(conn: &mut Connection) -> Result<Vec<SessionSummary>, StoreError> {
    let sql = format!(
        "SELECT {SESSION_COLUMNS},
            (SELECT COUNT(DISTINCT turn) FROM messages m WHERE m.session_id = s.id),
            (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id)
         FROM sessions s ORDER BY last_activity DESC, created_at DESC, id"
    );
    let mut stmt = conn.prepare(&sql)?;
    let rows = stmt.query_map([], |r| {
        Ok((raw_session(r)?, r.get::<_, i64>(7)?, r.get::<_, i64>(8)?))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (raw, turns, entries) = row?;
        out.push(SessionSummary {
            record: raw.into_record()?,
            turns: turns as u64,
            entries: entries as u64,
        });
    }
    Ok(out)
}

pub fn delete_session(conn: &mut Connection, id: &str) -> Result<bool, StoreError> {
    Ok(conn.execute("DELETE FROM sessions WHERE id = ?1", [id])? > 0)
}

/// A session row before its JSON column is parsed.
struct RawSession {
    id: String,
    agent_alias: String,
    workspace_dir: String,
    mcp_servers: String,
    owner: Option<String>,
    created_at: i64,
    last_activity: i64,
}

fn raw_session(r: &Row<'_>) -> rusqlite::Result<RawSession> {
    Ok(RawSession {
        id: r.get(0)?,
        agent_alias: r.get(1)?,
        workspace_dir: r.get(2)?,
        mcp_servers: r.get(3)?,
        owner: r.get(4)?,
        created_at: r.get(5)?,
        last_activity: r.get(6)?,
    })
}

impl RawSession {
    fn into_record(self) -> Result<SessionRecord, StoreError> {
        Ok(SessionRecord {
            mcp_servers: serde_json::from_str(&self.mcp_servers)?,
            id: self.id,
            agent_alias: self.agent_alias,
            workspace_dir: PathBuf::from(self.workspace_dir),
            owner: self.owner,
            created_at: self.created_at,
            last_activity: self.last_activity,
        })
    }
}
