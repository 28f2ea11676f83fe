//! `session/request_permission` over the connection that sent the prompt, and the tool
//! environment (policy, approvals, asker, embedder, client files) of one turn. An unanswered request is
//! denied after `session_timeout_secs`; a cancelled turn drops the request and the tool never
//! runs.
//!
//! [`PeerAsker`] is the ACP transport of the approval gate's questions: `crate::approval`
//! decides what to ask and what an answer means ([`Asker`] is its contract); this sends the
//! request on the connection's peer and hands the answer back.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::Connection;
use super::client_fs::PeerFiles;
use super::embed::ConfinedEmbedder;
use super::session::Session;
use crate::approval::gate::Asker;
use crate::policy::Policy;
use crate::rpc::Peer;
use crate::tools::{BoxFuture, PolicySource, ToolEnv};

/// Asks the client of one connection.
pub struct PeerAsker {
    pub peer: Peer,
    pub session_id: String,
    pub timeout: Duration,
}

impl Asker for PeerAsker {
    fn ask(&self, mut params: Value) -> BoxFuture<'_, Result<Value, String>> {
        Box::pin(async move {
            params["sessionId"] = json!(self.session_id);
            self.peer
                .request("session/request_permission", params, self.timeout)
                .await
                .map_err(|e| e.message)
        })
    }
}

/// The tool environment of a turn of `session` on `conn`: the files through the client where
/// it offered them, and the policy re-read for each call (a mode the client chooses during
/// the turn applies from its next call; the turn's config stays).
pub fn tool_env(conn: &Connection, session: &Arc<Session>, peer: Peer) -> Arc<ToolEnv> {
    let config = conn.server.config();
    let timeout = Duration::from_secs(config.acp.session_timeout_secs);
    let mode = session.chosen_mode();
    let others = other_workspaces(conn, session);
    let policy = Policy::for_session(&config, &session.agent_alias, mode)
        .with_other_workspaces(others.clone());
    Arc::new(ToolEnv {
        policy: policy.clone(),
        approvals: session.approvals.clone(),
        agent_approvals: conn
            .server
            .approvals
            .for_agent(conn.server.store.clone(), &session.agent_alias),
        asker: Arc::new(PeerAsker {
            peer: peer.clone(),
            session_id: session.id.clone(),
            timeout,
        }),
        embedder: Arc::new(ConfinedEmbedder),
        audit: crate::audit::tool::Scope {
            principal: session.owner.clone(),
            agent: session.agent_alias.clone(),
        },
        files: Arc::new(PeerFiles {
            peer,
            session_id: session.id.clone(),
            timeout,
            read: conn.fs.reads(),
            write: conn.fs.writes(),
        }),
        levels: Some(Arc::new(SessionPolicy {
            config,
            session: session.clone(),
            others,
            last: std::sync::Mutex::new((mode, policy)),
        })),
        credentials: session.credentials.clone(),
    })
}

/// The workspaces of the daemon's other live sessions, as of the turn's start: never
/// writable from this session's tools (see `crate::policy::never_writable`).
fn other_workspaces(conn: &Connection, session: &Session) -> Vec<std::path::PathBuf> {
    let mut others: Vec<_> = conn
        .server
        .sessions
        .all()
        .into_iter()
        .filter(|s| s.id != session.id)
        .map(|s| s.cwd.clone())
        .collect();
    others.sort();
    others.dedup();
    others
}

/// A session's policy under the turn's config and the mode chosen now.
struct SessionPolicy {
    config: Arc<crate::config::Config>,
    session: Arc<Session>,
    /// The other sessions' workspaces of the turn's policy.
    others: Vec<std::path::PathBuf>,
    /// The policy last built and the mode it was built for: built again only when the client
    /// has chosen another mode (building resolves every forbidden path on the host, a few
    /// hundred microseconds per tool call otherwise).
    last: std::sync::Mutex<(Option<crate::config::AutonomyLevel>, Policy)>,
}

impl PolicySource for SessionPolicy {
    fn current(&self) -> Policy {
        let session = &self.session;
        let mode = session.chosen_mode();
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        if last.0 != mode {
            *last = (
                mode,
                Policy::for_session(&self.config, &session.agent_alias, mode)
                    .with_other_workspaces(self.others.clone()),
            );
        }
        last.1.clone()
    }
}
