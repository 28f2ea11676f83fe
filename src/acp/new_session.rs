//! `session/new`: resolves the agent alias and the working directory (refused with -32602 when
//! the policy denies it: [`crate::policy::cwd`]), refuses a `requireSandbox` this host cannot
//! meet ([`super::sandbox_decl`]), registers the session (in memory, and in the store when
//! there is one), answers `{sessionId, workspaceDir}` with the sandbox declared under
//! `_meta.zeroclaw.sandbox`; an MCP server that cannot
//! start there is told to the user right after, as an agent message
//! ([`crate::mcp::install::preflight`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};

use super::session::Session;
use super::{Connection, agents, config_options, params};
use crate::audit;
use crate::config::Config;
use crate::policy::Policy;
use crate::rpc::{Peer, RpcError};
use crate::store::{SessionRecord, now_ms};

pub async fn handle(conn: &Connection, peer: Peer, params: &Value) -> Result<Value, RpcError> {
    let server = &conn.server;
    let config = server.config();
    let explicit = params::opt_str(params, &["agentAlias", "agent_alias", "agent"])?;
    let alias = agents::resolve_for_new(&config, explicit, conn.default_agent.as_deref())?;
    let agent = agents::dispatchable(&config, &alias)?.clone();
    let cwd = match params::opt_str(params, &["cwd", "workspaceDir", "workspace_dir"])? {
        Some(dir) => canonical_dir(Path::new(dir))?,
        None => server.launch_dir.clone(),
    };
    check_cwd(&config, &alias, &cwd)?;
    super::sandbox_decl::check_required(params, &Policy::for_agent(&config, &alias))?;
    let mcp_servers = mcp_servers(params)?;
    let specs = crate::mcp::spec::parse_list(&mcp_servers).map_err(RpcError::invalid_params)?;
    crate::mcp::spec::check_against_operator(&config, &alias, &specs)
        .map_err(RpcError::invalid_params)?;
    crate::mcp::route::check(&Policy::for_agent(&config, &alias), &specs)
        .map_err(RpcError::invalid_params)?;
    server.sessions.check_room()?;
    let id = new_session_id()?;
    let session = Session::new(
        id.clone(),
        alias.clone(),
        agent,
        cwd.clone(),
        mcp_servers.clone(),
        Some(conn.owner.clone()),
        Vec::new(),
    );
    let session = Arc::new(session);
    server.sessions.insert(session.clone())?;
    conn.hold(&session);
    if let Some(store) = &server.store {
        let now = now_ms();
        let record = SessionRecord {
            id: id.clone(),
            agent_alias: alias,
            workspace_dir: cwd.clone(),
            mcp_servers,
            owner: Some(conn.owner.clone()),
            created_at: now,
            last_activity: now,
        };
        if let Err(error) = store.create_session(record).await {
            server.sessions.remove(&id);
            tracing::error!(%error, "storing a new session failed");
            return Err(RpcError::internal(format!(
                "cannot store the session: {error}"
            )));
        }
    }
    super::lease::on_open(&server.leases, server.store.as_ref(), &id).await?;
    let event = audit::session_event("session.create", &id, Some(conn.owner.as_str()))
        .with("agent", session.agent_alias.as_str())
        .with("cwd", cwd.to_string_lossy().into_owned());
    audit::note(event).await;
    crate::metrics::get().session_created();
    let options = config_options::list(conn, &session).await;
    let mut answer = json!({"sessionId": id, "workspaceDir": cwd, "configOptions": options});
    super::modes::extend_answer(&mut answer, &config, &session);
    super::commands::announce_after_response(&peer, &id);
    let mut servers = crate::mcp::spec::operator_servers(&config, &session.agent_alias);
    servers.extend(specs);
    let policy = Policy::for_agent(&config, &session.agent_alias);
    let declared = super::sandbox_decl::declaration(&policy, Some(&cwd));
    super::sandbox_decl::extend_answer(&mut answer, declared);
    // The session's credentials (placeholders, CA) are made with it; a loaded session's at its
    // first proxied call.
    if let Some(egress) = &policy.egress
        && let Err(e) = session
            .credentials
            .get(egress.credentials(), egress.extra_cas())
    {
        tracing::warn!(session = %id, error = %e, "session credentials");
    }
    let notes = crate::mcp::install::preflight(&servers, &policy, &cwd);
    if !notes.is_empty() {
        tracing::warn!(session = %id, problems = ?notes, "MCP servers that cannot start");
        peer.release_after_response(Notice {
            peer: peer.clone(),
            session_id: id.clone(),
            text: notes.join("\n"),
        });
    }
    Ok(answer)
}

/// A message the user sees (an `agent_message_chunk`), sent right after the answer.
struct Notice {
    peer: Peer,
    session_id: String,
    text: String,
}

impl Drop for Notice {
    fn drop(&mut self) {
        let content = json!({"type": "text", "text": self.text});
        let update = json!({"sessionUpdate": "agent_message_chunk", "content": content});
        let params = json!({"sessionId": self.session_id, "update": update});
        self.peer.notify_now("session/update", params);
    }
}

/// The canonical form of `dir`, which must exist and be a directory.
fn canonical_dir(dir: &Path) -> Result<PathBuf, RpcError> {
    let canonical = dir.canonicalize().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => {
            RpcError::invalid_params(format!("cwd {} does not exist", dir.display()))
        }
        _ => RpcError::invalid_params(format!("cwd {} cannot be used: {e}", dir.display())),
    })?;
    if !canonical.is_dir() {
        return Err(RpcError::invalid_params(format!(
            "cwd {} is not a directory",
            dir.display()
        )));
    }
    Ok(canonical)
}

/// -32602 when the session policy of agent `alias` refuses `cwd` as a working directory.
pub fn check_cwd(config: &Config, alias: &str, cwd: &Path) -> Result<(), RpcError> {
    Policy::for_agent(config, alias)
        .check_cwd(cwd)
        .map_err(RpcError::invalid_params)
}

/// `mcpServers`: validated ([`crate::mcp::spec`]) and kept with the session (absent means
/// none); the servers start at the session's first prompt.
pub fn mcp_servers(params: &Value) -> Result<Value, RpcError> {
    match params::object(params)?.get("mcpServers") {
        None | Some(Value::Null) => Ok(json!([])),
        Some(list) => {
            crate::mcp::spec::parse_list(list).map_err(RpcError::invalid_params)?;
            Ok(list.clone())
        }
    }
}

/// `s-` followed by 128 random bits in hex.
pub fn new_session_id() -> Result<String, RpcError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)
        .map_err(|e| RpcError::internal(format!("no randomness for a session id: {e}")))?;
    Ok(format!("s-{}", hex::encode(bytes)))
}
