//! `session/load` (replays the stored history as `session/update`s, a prompt's stored images
//! as image blocks again, then answers `{}`) and
//! `session/resume` (no replay). Both need the store (-32000 without it), refuse a session
//! that an open connection holds (-32602), take over one left active by a closed connection of
//! the same principal, and re-resolve the agent if the stored one is gone. A session keeps its
//! directory: a `cwd` naming another directory than the stored one is -32602 (a session is
//! never moved), and so is a stored directory the policy denies now (config changed, or a
//! record written before the check existed). Both answers declare the session's sandbox
//! (`_meta.zeroclaw.sandbox`, [`super::sandbox_decl`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};

use super::session::Session;
use super::sessions::not_found;
use super::updates::PeerSink;
use super::{Connection, agents, config_options, new_session, params};
use crate::agent::{Entry, history};
use crate::audit;
use crate::rpc::{Peer, RpcError};
use crate::store::Store;
use crate::tools::UpdateSink;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Load,
    Resume,
}

pub async fn handle(
    conn: &Connection,
    peer: Peer,
    params: &Value,
    mode: Mode,
) -> Result<Value, RpcError> {
    let id = params::session_id(params)?;
    let requested = params::opt_str(params, &["cwd", "workspaceDir", "workspace_dir"])?;
    // The client's servers of now; a request without `mcpServers` keeps the stored ones.
    let mcp_servers = match params::object(params)?.get("mcpServers") {
        None | Some(Value::Null) => None,
        Some(_) => Some(new_session::mcp_servers(params)?),
    };
    let Some(store) = &conn.server.store else {
        return Err(RpcError::session_not_found(
            "sessions cannot be restored: the session store could not be opened",
        ));
    };
    let session = if conn.server.sessions.contains(id) {
        take_over(conn, id, requested)?
    } else {
        let session = restore(conn, store, id, requested, mcp_servers).await?;
        super::modes::restore_choice(store, &session).await?;
        config_options::restore(conn, &session).await;
        conn.server.sessions.insert(session.clone())?;
        session
    };
    conn.hold(&session);
    let kind = match mode {
        Mode::Load => "session.load",
        Mode::Resume => "session.resume",
    };
    audit::note(audit::session_event(kind, id, Some(conn.owner.as_str()))).await;
    if mode == Mode::Load {
        replay(&session, peer).await;
    }
    let mut answer = json!({"configOptions": config_options::list(conn, &session).await});
    let config = conn.server.config();
    super::modes::extend_answer(&mut answer, &config, &session);
    let policy =
        crate::policy::Policy::for_session(&config, &session.agent_alias, session.chosen_mode());
    let declared = super::sandbox_decl::declaration(&policy, Some(&session.cwd));
    super::sandbox_decl::extend_answer(&mut answer, declared);
    Ok(answer)
}

/// An active session: another principal's is not found; one detached from a closed connection
/// of this principal is attached here; one held by an open connection is -32602.
fn take_over(
    conn: &Connection,
    id: &str,
    requested: Option<&str>,
) -> Result<Arc<Session>, RpcError> {
    let session = conn.session(id)?;
    check_cwd(conn, id, &session.agent_alias, &session.cwd, requested)?;
    if !conn.server.sessions.attach(id) {
        return Err(RpcError::invalid_params(format!(
            "session {id} is already active"
        )));
    }
    session.touch();
    Ok(session)
}

async fn restore(
    conn: &Connection,
    store: &Store,
    id: &str,
    requested: Option<&str>,
    mcp_servers: Option<Value>,
) -> Result<Arc<Session>, RpcError> {
    let internal = |e: crate::store::StoreError| RpcError::internal(format!("session store: {e}"));
    let record = store.get_session(id).await.map_err(internal)?;
    if let Some(r) = record
        .as_ref()
        .filter(|r| !owned_by(conn, r.owner.as_deref()))
    {
        let event = audit::session_event("auth.mismatch", id, Some(conn.owner.as_str()))
            .with("owner", r.owner.clone());
        audit::note(event).await;
    }
    let Some(record) = record.filter(|r| owned_by(conn, r.owner.as_deref())) else {
        return Err(not_found(id));
    };
    conn.server.sessions.check_room()?;
    let config = conn.server.config();
    let alias = agents::resolve_for_restore(&config, &record.agent_alias)?;
    let agent = agents::dispatchable(&config, &alias)?.clone();
    check_cwd(conn, id, &alias, &record.workspace_dir, requested)?;
    let entries: Vec<Entry> = store
        .history(id)
        .await
        .map_err(internal)?
        .into_iter()
        .filter_map(Entry::from_stored_owned)
        .collect();
    store.touch(id).await.map_err(internal)?;
    super::lease::on_open(&conn.server.leases, conn.server.store.as_ref(), id).await?;
    Ok(Arc::new(Session::new(
        record.id,
        alias,
        agent,
        record.workspace_dir,
        mcp_servers.unwrap_or(record.mcp_servers),
        record.owner,
        entries,
    )))
}

/// The stored directory must be the requested one (when a `cwd` is given; the same directory
/// however spelled) and still allowed by the policy of the session's agent.
fn check_cwd(
    conn: &Connection,
    id: &str,
    alias: &str,
    stored: &Path,
    requested: Option<&str>,
) -> Result<(), RpcError> {
    if let Some(raw) = requested {
        let same = Path::new(raw)
            .canonicalize()
            .is_ok_and(|dir| dir == canonical(stored));
        if !same {
            return Err(RpcError::invalid_params(format!(
                "session {id} belongs to {}, not {raw}: load it with that cwd or omit cwd \
                 (a session is never moved to another directory)",
                stored.display()
            )));
        }
    }
    new_session::check_cwd(&conn.server.config(), alias, &canonical(stored))
}

fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

/// Whether the session belongs to this connection's principal.
fn owned_by(conn: &Connection, owner: Option<&str>) -> bool {
    conn.owns(owner)
}

async fn replay(session: &Session, peer: Peer) {
    let sink = PeerSink {
        peer,
        session_id: session.id.clone(),
    };
    let history = session.history();
    let images = super::images::load(&session.cwd, &history).await;
    for update in history
        .iter()
        .flat_map(|entry| history::to_replay_updates(entry, &images))
    {
        sink.send(update).await;
    }
}
