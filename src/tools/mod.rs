//! Tool definitions and the registry the agent dispatches through.
//!
//! A [`Tool`] describes itself to the model (name, description, JSON schema) and to the client
//! (ACP kind, a title for its arguments), and executes with a [`ToolContext`]: the session's
//! working directory, a sink for streaming `session/update`s, and the turn's cancellation token.
//! Tools that touch the system (shell, files) will run through the sandbox crate behind this
//! same seam; today the one real tool is [`todo_write`].

pub mod todo_write;

use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// A boxed future, as object-safe traits return them.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The ACP tool kinds (`kind` of `tool_call`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolKind {
    Read,
    Edit,
    Delete,
    Move,
    Search,
    Execute,
    Think,
    Fetch,
    Other,
}

impl ToolKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ToolKind::Read => "read",
            ToolKind::Edit => "edit",
            ToolKind::Delete => "delete",
            ToolKind::Move => "move",
            ToolKind::Search => "search",
            ToolKind::Execute => "execute",
            ToolKind::Think => "think",
            ToolKind::Fetch => "fetch",
            ToolKind::Other => "other",
        }
    }
}

/// Where `session/update` payloads (the `update` object) go while a turn runs.
pub trait UpdateSink: Send + Sync {
    fn send(&self, update: Value) -> BoxFuture<'_, ()>;
}

/// What a tool execution may use.
pub struct ToolContext {
    pub session_id: String,
    /// The session's canonical working directory (its file-access boundary).
    pub cwd: PathBuf,
    pub updates: Arc<dyn UpdateSink>,
    /// Cancelled when the turn is; a long tool must stop promptly.
    pub cancel: CancellationToken,
}

/// A successful tool result: `text` goes back to the model and to the client.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    pub text: String,
}

/// A failed tool call; the message is written for the model to act on.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct ToolError(pub String);

/// One tool the model can call.
pub trait Tool: Send + Sync {
    fn name(&self) -> &str;
    fn description(&self) -> &str;
    /// JSON schema of the arguments object.
    fn parameters(&self) -> Value;
    fn kind(&self) -> ToolKind;
    /// A short human title for one call, shown by the client.
    fn title(&self, args: &Value) -> String;
    fn execute<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>>;
}

/// The tools of one agent, by name.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: BTreeMap<String, Arc<dyn Tool>>,
}

impl ToolRegistry {
    /// The tools every agent gets today.
    pub fn builtin() -> Self {
        let mut registry = Self::default();
        registry.register(Arc::new(todo_write::TodoWrite));
        registry
    }

    pub fn register(&mut self, tool: Arc<dyn Tool>) {
        self.tools.insert(tool.name().to_owned(), tool);
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.get(name)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Arc<dyn Tool>> {
        self.tools.values()
    }
}
