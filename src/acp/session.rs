//! One active session: its agent, working directory, in-memory history and the slot of its
//! running turn (busy check, cancellation, waiting for the turn to end).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use serde_json::Value;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::agent::Entry;
use crate::approval::Approvals;
use crate::config::{AgentConfig, AutonomyLevel};
use crate::mcp::{McpSet, spec};

pub struct Session {
    pub id: String,
    pub agent_alias: String,
    pub agent: AgentConfig,
    /// Canonical working directory: the session's file-access boundary.
    pub cwd: PathBuf,
    pub mcp_servers: Value,
    /// The session's MCP servers, started at its first prompt.
    pub mcp: McpSet,
    pub owner: Option<String>,
    /// "Always allow" answers, restored from the history's tool results.
    pub approvals: Approvals,
    /// The session's credentials (placeholders, CA), from its first proxied call.
    pub credentials: crate::egress::credentials::session::Slot,
    /// The level the client chose (`session/set_mode`); the configured one caps it.
    chosen_mode: Mutex<Option<AutonomyLevel>>,
    /// The values the client chose for the session's config options, by option id
    /// (`super::config_options` owns their meaning).
    pub settings: Mutex<BTreeMap<String, String>>,
    history: Mutex<Arc<Vec<Entry>>>,
    turn: Mutex<Option<RunningTurn>>,
    /// The end signal of the latest turn: it fires once that turn's answer is queued, which
    /// may be a little after the session became free for the next prompt.
    last_turn: Mutex<Option<watch::Receiver<()>>>,
    last_activity: Mutex<Instant>,
}

struct RunningTurn {
    cancel: CancellationToken,
    /// Wakes when the turn's guard drops.
    done: watch::Receiver<()>,
}

/// Held while a turn runs; dropping it frees the session for the next prompt.
pub struct TurnGuard {
    session: Arc<Session>,
    pub cancel: CancellationToken,
    done: Option<TurnAnswered>,
}

/// Dropped once the turn's `session/prompt` answer is queued; [`Session::wait_idle`] waits
/// for it, so `session/stop` is always answered after the prompt it waited for.
pub struct TurnAnswered(#[allow(dead_code)] watch::Sender<()>);

/// `session/prompt` while a turn of the session runs.
#[derive(Debug)]
pub struct Busy;

impl Session {
    pub fn new(
        id: String,
        agent_alias: String,
        agent: AgentConfig,
        cwd: PathBuf,
        mcp_servers: Value,
        owner: Option<String>,
        history: Vec<Entry>,
    ) -> Self {
        let specs = spec::parse_list(&mcp_servers).unwrap_or_else(|error| {
            tracing::warn!(session = %id, %error, "stored MCP servers ignored");
            Vec::new()
        });
        Self {
            id,
            agent_alias,
            agent,
            cwd,
            mcp: McpSet::new(specs),
            mcp_servers,
            owner,
            approvals: Approvals::restored(allowed_always(&history)),
            credentials: Default::default(),
            chosen_mode: Mutex::new(None),
            settings: Mutex::new(BTreeMap::new()),
            history: Mutex::new(Arc::new(history)),
            turn: Mutex::new(None),
            last_turn: Mutex::new(None),
            last_activity: Mutex::new(Instant::now()),
        }
    }

    /// Claims the session for a turn, or [`Busy`].
    pub fn start_turn(self: &Arc<Self>) -> Result<TurnGuard, Busy> {
        let mut slot = lock(&self.turn);
        if slot.is_some() {
            return Err(Busy);
        }
        let cancel = CancellationToken::new();
        let (done_tx, done_rx) = watch::channel(());
        *lock(&self.last_turn) = Some(done_rx.clone());
        *slot = Some(RunningTurn {
            cancel: cancel.clone(),
            done: done_rx,
        });
        self.touch();
        Ok(TurnGuard {
            session: self.clone(),
            cancel,
            done: Some(TurnAnswered(done_tx)),
        })
    }

    /// Cancels the running turn, if any; a no-op when idle.
    pub fn cancel_turn(&self) {
        if let Some(turn) = lock(&self.turn).as_ref() {
            turn.cancel.cancel();
        }
    }

    pub fn is_busy(&self) -> bool {
        lock(&self.turn).is_some()
    }

    /// Returns once no turn is running and the latest one has been answered.
    pub async fn wait_idle(&self) {
        loop {
            let running = lock(&self.turn).as_ref().map(|t| t.done.clone());
            let Some(mut done) = running else {
                break;
            };
            // Errs once the sender is dropped: the turn ended.
            while done.changed().await.is_ok() {}
        }
        let latest = lock(&self.last_turn).clone();
        if let Some(mut done) = latest {
            while done.changed().await.is_ok() {}
        }
    }

    /// The level the client chose, if any.
    pub fn chosen_mode(&self) -> Option<AutonomyLevel> {
        *lock(&self.chosen_mode)
    }

    pub fn choose_mode(&self, level: Option<AutonomyLevel>) {
        *lock(&self.chosen_mode) = level;
    }

    pub fn history(&self) -> Arc<Vec<Entry>> {
        lock(&self.history).clone()
    }

    /// Replaces the whole history (`/compact`).
    pub fn replace_history(&self, entries: Vec<Entry>) {
        *lock(&self.history) = Arc::new(entries);
    }

    pub fn append_history(&self, entries: &[Entry]) {
        let mut history = lock(&self.history);
        Arc::make_mut(&mut history).extend_from_slice(entries);
    }

    pub fn touch(&self) {
        *lock(&self.last_activity) = Instant::now();
    }

    pub fn idle_for(&self) -> std::time::Duration {
        lock(&self.last_activity).elapsed()
    }
}

impl TurnGuard {
    /// Frees the session for the next prompt; the returned signal is to be dropped once the
    /// turn's answer is queued.
    pub fn release(mut self) -> TurnAnswered {
        self.done.take().expect("a turn is released once")
    }
}

impl Drop for TurnGuard {
    fn drop(&mut self) {
        self.session.touch();
        *lock(&self.session.turn) = None;
    }
}

/// The tools the user answered "Always allow" for in a stored history.
fn allowed_always(history: &[Entry]) -> Vec<String> {
    let mut tools = Vec::new();
    for entry in history {
        if let Entry::ToolResult { extra, .. } = entry
            && let Some(list) = extra["_meta"]["zeroclaw"]["allowAlways"].as_array()
        {
            tools.extend(list.iter().filter_map(|t| t.as_str().map(str::to_owned)));
        }
    }
    tools
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session() -> Arc<Session> {
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
            "s-1".into(),
            "a".into(),
            agent,
            PathBuf::from("/"),
            Value::Null,
            None,
            Vec::new(),
        ))
    }

    #[tokio::test]
    async fn one_turn_at_a_time_and_cancel_reaches_it() {
        let session = session();
        let guard = session.start_turn().unwrap();
        assert!(
            session.start_turn().is_err(),
            "a second turn must be refused"
        );
        session.cancel_turn();
        assert!(guard.cancel.is_cancelled());
        drop(guard);
        assert!(!session.is_busy());
        let again = session.start_turn().unwrap();
        assert!(
            !again.cancel.is_cancelled(),
            "a new turn gets a fresh token"
        );
    }

    #[tokio::test]
    async fn wait_idle_returns_when_the_turn_ends() {
        let session = session();
        session.wait_idle().await;
        let guard = session.start_turn().unwrap();
        let waiter = tokio::spawn({
            let session = session.clone();
            async move { session.wait_idle().await }
        });
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        drop(guard);
        waiter.await.unwrap();
    }
}
