//! One client connection: refuses requests before `initialize` (-32600), dispatches each
//! method to its file, and accepts the inbound ZeroClaw notifications.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};

use serde_json::{Value, json};

use super::Server;
use super::session::Session;
use super::sessions::not_found;
use super::{
    client_fs, config_options, delete, initialize, lifecycle, listing, modes, new_session, prompt,
    restore,
};
use crate::rpc::{Handler, Peer, RpcError};

pub struct Connection {
    pub server: Arc<Server>,
    /// The principal: the daemon's authenticated one (`uid:<n>`, `token:<name>`, `local`), or
    /// for stdio `uid:<euid>` of this process, so the daemon's Unix-socket principal of the
    /// same user owns the same sessions.
    pub owner: String,
    /// A connection-scoped default agent (the gateway's `?agent=`); `None` for stdio.
    pub default_agent: Option<String>,
    initialized: AtomicBool,
    /// The client's `fs` capabilities, from its `initialize`.
    pub fs: client_fs::FsCapabilities,
    /// Sessions this connection made, loaded or resumed; detached when it closes.
    held: Mutex<Vec<Weak<Session>>>,
}

impl Connection {
    /// `owner` is the daemon's principal; `None` for stdio (the uid running this process).
    pub fn new(server: Arc<Server>, owner: Option<String>, default_agent: Option<String>) -> Self {
        Self {
            server,
            owner: owner.unwrap_or_else(local_principal),
            default_agent,
            initialized: AtomicBool::new(false),
            fs: Default::default(),
            held: Mutex::default(),
        }
    }

    /// Records that this connection holds `session` (it was attached to it).
    pub fn hold(&self, session: &Arc<Session>) {
        let mut held = self.lock_held();
        held.retain(|s| s.strong_count() > 0);
        held.push(Arc::downgrade(session));
    }

    fn lock_held(&self) -> std::sync::MutexGuard<'_, Vec<Weak<Session>>> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether a session owned by `owner` belongs to this connection's principal. A session
    /// stored without an owner (made over stdio before owners were recorded for it) belongs to
    /// the uid running this process: stdio and the daemon's own-uid Unix-socket peers, never a
    /// token.
    pub fn owns(&self, owner: Option<&str>) -> bool {
        match owner {
            Some(owner) => owner == self.owner,
            None => self.owner == local_principal(),
        }
    }

    /// The active session `id` if it belongs to this connection's principal; -32000 otherwise,
    /// exactly as if it did not exist.
    pub fn session(&self, id: &str) -> Result<Arc<Session>, RpcError> {
        let session = self.server.sessions.get(id)?;
        if self.owns(session.owner.as_deref()) {
            Ok(session)
        } else {
            Err(not_found(id))
        }
    }

    async fn dispatch(&self, peer: Peer, method: &str, params: Value) -> Result<Value, RpcError> {
        match method {
            "session/new" => new_session::handle(self, peer, &params).await,
            "session/prompt" => prompt::handle(self, peer, &params).await,
            "session/cancel" => lifecycle::cancel_request(self, &params),
            "session/stop" => lifecycle::stop(self, &params).await,
            "session/close" => lifecycle::close(self, &params).await,
            "session/load" => restore::handle(self, peer, &params, restore::Mode::Load).await,
            "session/resume" => restore::handle(self, peer, &params, restore::Mode::Resume).await,
            "session/list" => listing::handle(self, &params).await,
            "session/delete" => delete::handle(self, &params).await,
            "session/set_mode" => modes::set_mode(self, peer, &params).await,
            "session/set_config_option" if params["configId"] == "mode" => {
                modes::set_config_option(self, peer, &params).await
            }
            "session/set_config_option" => config_options::set(self, peer, &params).await,
            "session/update" | "session/event" => {
                log_inbound_event(method, &params);
                Ok(json!({}))
            }
            _ => Err(RpcError::method_not_found(method)),
        }
    }
}

/// `uid:<euid>`: the principal of stdio connections, the same string the daemon gives a Unix
/// socket peer of that uid.
pub fn local_principal() -> String {
    format!("uid:{}", nix::unistd::geteuid().as_raw())
}

impl Connection {
    /// Whether this connection's principal is this process's own user (stdio, or the daemon's
    /// Unix-socket peer of the same uid): it also owns sessions stored without an owner.
    pub fn is_local_principal(&self) -> bool {
        self.owner == local_principal()
    }
}

impl Drop for Connection {
    /// The client is gone: its sessions stay active (running turns finish and are stored) and
    /// may be loaded from another connection of the same principal.
    fn drop(&mut self) {
        for session in self.lock_held().drain(..).filter_map(|s| s.upgrade()) {
            // Its MCP servers end with the connection; the next prompt starts them again.
            session.mcp.stop();
            self.server.sessions.detach(&session);
        }
    }
}

impl Handler for Connection {
    async fn request(&self, peer: Peer, method: String, params: Value) -> Result<Value, RpcError> {
        if method == "initialize" {
            let result = initialize::handle(self, &params);
            if result.is_ok() {
                self.initialized.store(true, Ordering::SeqCst);
            }
            return result;
        }
        if !self.initialized.load(Ordering::SeqCst) {
            return Err(RpcError::invalid_request(format!(
                "{method} before initialize: send initialize first"
            )));
        }
        self.dispatch(peer, &method, params).await
    }

    async fn notification(&self, _peer: Peer, method: String, params: Value) {
        if !self.initialized.load(Ordering::SeqCst) {
            tracing::debug!(%method, "notification before initialize ignored");
            return;
        }
        match method.as_str() {
            "session/cancel" => lifecycle::cancel_notification(self, &params),
            "session/update" | "session/event" => log_inbound_event(&method, &params),
            _ => tracing::debug!(%method, "unknown notification ignored"),
        }
    }
}

fn log_inbound_event(method: &str, params: &Value) {
    let session = params
        .get("sessionId")
        .or_else(|| params.get("session_id"))
        .and_then(Value::as_str)
        .unwrap_or("-");
    tracing::info!(%method, session, "inbound client event");
}
