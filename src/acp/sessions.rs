//! The process-wide set of active sessions (shared by every connection): the `max_sessions`
//! limit, lookup, removal, and the reaper that drops sessions idle past the timeout (from
//! memory only; the store keeps them). A session is *attached* to the connection that made,
//! loaded or resumed it; when that connection closes it is detached and another connection of
//! the same principal may take it over.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use super::session::Session;
use crate::rpc::RpcError;

pub struct Sessions {
    active: Mutex<HashMap<String, Arc<Session>>>,
    /// Ids of active sessions held by an open connection (locked after `active`).
    attached: Mutex<HashSet<String>>,
    max: usize,
    idle_timeout: Duration,
}

impl Sessions {
    pub fn new(max: usize, idle_timeout: Duration) -> Self {
        Self {
            active: Mutex::default(),
            attached: Mutex::default(),
            max,
            idle_timeout,
        }
    }

    /// Adds a session, attached to the calling connection: -32602 if it is already active,
    /// -32001 when `max_sessions` are.
    pub fn insert(&self, session: Arc<Session>) -> Result<(), RpcError> {
        let mut active = self.lock();
        if active.contains_key(&session.id) {
            return Err(RpcError::invalid_params(format!(
                "session {} is already active",
                session.id
            )));
        }
        if active.len() >= self.max {
            return Err(RpcError::session_limit_reached(format!(
                "session limit reached: {} sessions are active",
                self.max
            )));
        }
        self.lock_attached().insert(session.id.clone());
        active.insert(session.id.clone(), session);
        Ok(())
    }

    /// -32001 if a new session could not be added now (checked before any work is done).
    pub fn check_room(&self) -> Result<(), RpcError> {
        if self.lock().len() >= self.max {
            return Err(RpcError::session_limit_reached(format!(
                "session limit reached: {} sessions are active",
                self.max
            )));
        }
        Ok(())
    }

    /// The active session, or -32000.
    pub fn get(&self, id: &str) -> Result<Arc<Session>, RpcError> {
        let session = self.lock().get(id).cloned();
        session.ok_or_else(|| not_found(id))
    }

    pub fn contains(&self, id: &str) -> bool {
        self.lock().contains_key(id)
    }

    pub fn remove(&self, id: &str) -> Option<Arc<Session>> {
        let mut active = self.lock();
        self.lock_attached().remove(id);
        active.remove(id)
    }

    /// Attaches an active, detached session to the calling connection; `false` if it is not
    /// active or another open connection holds it.
    pub fn attach(&self, id: &str) -> bool {
        let active = self.lock();
        active.contains_key(id) && self.lock_attached().insert(id.to_owned())
    }

    /// The holding connection closed: the session stays active, free to be attached again.
    /// Only this very session is detached: one reaped meanwhile and restored by another
    /// connection under the same id stays with that connection.
    pub fn detach(&self, session: &Arc<Session>) {
        let active = self.lock();
        if active
            .get(&session.id)
            .is_some_and(|current| Arc::ptr_eq(current, session))
        {
            self.lock_attached().remove(&session.id);
        }
    }

    /// A snapshot of every active session (shutdown cancels their turns).
    pub fn all(&self) -> Vec<Arc<Session>> {
        self.lock().values().cloned().collect()
    }

    /// How many sessions are running a turn.
    pub fn busy(&self) -> usize {
        self.lock().values().filter(|s| s.is_busy()).count()
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drops sessions idle longer than the timeout; running turns keep a session alive.
    pub fn reap_idle(&self) -> usize {
        let mut active = self.lock();
        let before = active.len();
        active.retain(|_, s| s.is_busy() || s.idle_for() < self.idle_timeout);
        self.lock_attached().retain(|id| active.contains_key(id));
        before - active.len()
    }

    /// Reaps periodically until the set is dropped.
    pub fn spawn_reaper(self: &Arc<Self>) {
        let period = (self.idle_timeout / 2).clamp(Duration::from_secs(1), Duration::from_secs(60));
        let weak: Weak<Self> = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(period);
            loop {
                ticks.tick().await;
                let Some(sessions) = weak.upgrade() else {
                    return;
                };
                let reaped = sessions.reap_idle();
                if reaped > 0 {
                    tracing::info!(reaped, "idle sessions removed from memory");
                }
            }
        });
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Arc<Session>>> {
        self.active.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn lock_attached(&self) -> MutexGuard<'_, HashSet<String>> {
        self.attached.lock().unwrap_or_else(|e| e.into_inner())
    }
}

pub fn not_found(id: &str) -> RpcError {
    RpcError::session_not_found(format!("session not found: {id}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::AgentConfig;

    fn session(id: &str) -> Arc<Session> {
        let agent = AgentConfig {
            enabled: true,
            provider: "p".into(),
            model: "m".into(),
            models: vec![],
            discover_models: false,
            system_prompt: None,
            max_tool_iterations: 1,
            autonomy: None,
            network: None,
        };
        Arc::new(Session::new(
            id.into(),
            "a".into(),
            agent,
            "/".into(),
            serde_json::Value::Null,
            None,
            Vec::new(),
        ))
    }

    #[test]
    fn the_limit_counts_active_sessions_and_ids_are_unique() {
        let sessions = Sessions::new(2, Duration::from_secs(60));
        sessions.insert(session("a")).unwrap();
        assert_eq!(sessions.insert(session("a")).unwrap_err().code, -32602);
        sessions.insert(session("b")).unwrap();
        assert_eq!(sessions.insert(session("c")).unwrap_err().code, -32001);
        assert_eq!(sessions.check_room().unwrap_err().code, -32001);
        sessions.remove("a");
        sessions.insert(session("c")).unwrap();
        assert_eq!(sessions.get("a").err().map(|e| e.code), Some(-32000));
    }

    #[test]
    fn a_detached_session_can_be_attached_once_and_removal_forgets_it() {
        let sessions = Sessions::new(10, Duration::from_secs(60));
        let first = session("s");
        sessions.insert(first.clone()).unwrap();
        assert!(
            !sessions.attach("s"),
            "held by the connection that inserted it"
        );
        sessions.detach(&first);
        assert!(
            sessions.attach("s"),
            "a closed connection's session is free"
        );
        assert!(!sessions.attach("s"), "only one connection takes it over");
        assert!(!sessions.attach("missing"));
        sessions.remove("s");
        sessions.insert(session("s")).unwrap();
        assert!(!sessions.attach("s"), "re-inserted sessions are held again");
        sessions.detach(&first);
        assert!(
            !sessions.attach("s"),
            "closing the first holder leaves the new one's session alone"
        );
    }

    #[test]
    fn reaping_spares_running_turns_and_recent_sessions() {
        let sessions = Sessions::new(10, Duration::ZERO);
        let busy = session("busy");
        let _turn = busy.start_turn().unwrap();
        sessions.insert(busy).unwrap();
        sessions.insert(session("idle")).unwrap();
        assert_eq!(sessions.reap_idle(), 1);
        assert!(sessions.contains("busy"));
        let fresh = Sessions::new(10, Duration::from_secs(3600));
        fresh.insert(session("new")).unwrap();
        assert_eq!(fresh.reap_idle(), 0);
    }
}
