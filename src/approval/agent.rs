//! The "Always allow" answers kept per agent rather than per session (today: supervised
//! network approvals, `network:HOST`): an answer given in one session of agent X admits that
//! host in every session of X — later ones, those of other connections, and after a restart
//! (in the store's `agent_approvals` table, shared by every daemon on a PostgreSQL store) —
//! and never in a session of another agent. Without a store they last as long as the process.
//!
//! [`AgentApprovals`] is what a tool call asks them through; [`ApprovalBook`] keeps them for
//! the sessions of a process (the ACP server holds one and hands each turn its agent's
//! [`AgentBook`]); [`Remembered`] keeps them in memory only (a tool environment without a
//! client).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;

use crate::store::Store;

/// The "Always allow" answers of one agent, shared by its sessions (kept by the client-facing
/// layer, in the store when there is one).
pub trait AgentApprovals: Send + Sync {
    fn contains<'a>(&'a self, key: &'a str) -> BoxFuture<'a, bool>;
    fn insert<'a>(&'a self, key: &'a str) -> BoxFuture<'a, ()>;
}

/// Answers kept in memory only (a tool environment without a client).
#[derive(Default)]
pub struct Remembered(Mutex<BTreeSet<String>>);

impl AgentApprovals for Remembered {
    fn contains<'a>(&'a self, key: &'a str) -> BoxFuture<'a, bool> {
        let found = self
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(key);
        Box::pin(std::future::ready(found))
    }

    fn insert<'a>(&'a self, key: &'a str) -> BoxFuture<'a, ()> {
        let mut keys = self.0.lock().unwrap_or_else(|e| e.into_inner());
        keys.insert(key.to_owned());
        Box::pin(std::future::ready(()))
    }
}

/// The answers this process has seen, by agent alias (the store holds them across restarts).
#[derive(Default)]
pub struct ApprovalBook {
    known: Mutex<BTreeMap<String, BTreeSet<String>>>,
}

impl ApprovalBook {
    /// The answers of `agent`, kept here and in `store`.
    pub fn for_agent(self: &Arc<Self>, store: Option<Store>, agent: &str) -> Arc<AgentBook> {
        Arc::new(AgentBook {
            book: self.clone(),
            store,
            agent: agent.to_owned(),
        })
    }

    fn knows(&self, agent: &str, key: &str) -> bool {
        self.lock()
            .get(agent)
            .is_some_and(|keys| keys.contains(key))
    }

    fn learn(&self, agent: &str, keys: impl IntoIterator<Item = String>) {
        self.lock()
            .entry(agent.to_owned())
            .or_default()
            .extend(keys);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, BTreeSet<String>>> {
        self.known.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// One agent's answers, for the tool environment of its sessions' turns.
pub struct AgentBook {
    book: Arc<ApprovalBook>,
    store: Option<Store>,
    agent: String,
}

impl AgentApprovals for AgentBook {
    fn contains<'a>(&'a self, key: &'a str) -> BoxFuture<'a, bool> {
        Box::pin(async move {
            if self.book.knows(&self.agent, key) {
                return true;
            }
            let Some(store) = &self.store else {
                return false;
            };
            match store.agent_approvals(&self.agent).await {
                Ok(keys) => {
                    let found = keys.iter().any(|k| k == key);
                    self.book.learn(&self.agent, keys);
                    found
                }
                Err(error) => {
                    tracing::warn!(%error, agent = %self.agent, "reading the agent's approvals failed");
                    false
                }
            }
        })
    }

    fn insert<'a>(&'a self, key: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            self.book.learn(&self.agent, [key.to_owned()]);
            if let Some(store) = &self.store
                && let Err(error) = store.add_agent_approval(&self.agent, key).await
            {
                tracing::warn!(%error, agent = %self.agent, "storing an agent's approval failed; it lasts until the process ends");
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn without_a_store_answers_last_for_the_process_and_stay_with_their_agent() {
        let book = Arc::new(ApprovalBook::default());
        let coder = book.for_agent(None, "coder");
        assert!(!coder.contains("network:pkg.example").await);
        coder.insert("network:pkg.example").await;
        assert!(coder.contains("network:pkg.example").await);
        assert!(
            book.for_agent(None, "coder")
                .contains("network:pkg.example")
                .await
        );
        assert!(
            !book
                .for_agent(None, "other")
                .contains("network:pkg.example")
                .await
        );
    }

    #[tokio::test]
    async fn a_store_keeps_them_for_a_new_process() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("s.db")).unwrap();
        let first = Arc::new(ApprovalBook::default());
        first
            .for_agent(Some(store.clone()), "coder")
            .insert("network:pkg.example")
            .await;
        let second = Arc::new(ApprovalBook::default());
        let coder = second.for_agent(Some(store.clone()), "coder");
        assert!(coder.contains("network:pkg.example").await);
        let other = second.for_agent(Some(store), "other");
        assert!(!other.contains("network:pkg.example").await);
    }
}
