//! Tool definitions and the registry the agent dispatches through.
//!
//! A [`Tool`] describes itself to the model (name, description, JSON schema) and to the client
//! (ACP kind, a title for its arguments), and executes with a [`ToolContext`]: the session's
//! working directory, a sink for streaming `session/update`s, and the turn's cancellation token.
//! Every tool that touches the system runs in a child confined by the sandbox crate
//! ([`confine`]): `shell` execs `sh -c` there, the file and search tools run as in-process
//! operations ([`ops`], registered at the top of `main`). The policy ([`ToolEnv::policy`])
//! checks and asks first ([`approve`]); output is capped ([`output`]).

pub mod approve;
pub mod args;
pub mod ask_user;
pub mod buffers;
pub mod confine;
pub mod content_search;
pub mod deliver_file;
pub mod escalate;
pub mod file_edit;
pub mod file_read;
pub mod file_write;
pub mod glob_search;
pub mod network_approval;
pub mod network_audit;
pub mod ops;
pub mod output;
pub mod shell;
pub mod todo_write;

use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::policy::{Approvals, Policy};

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
    /// The id of the call being executed (empty outside a call).
    pub call_id: String,
    /// The session's policy, approvals and the way to ask the client.
    pub env: Arc<ToolEnv>,
}

/// Asks the client a `session/request_permission` question; `params` lacks `sessionId`.
/// Answers the `result` object, or an error text (no answer in time, connection gone).
pub trait Asker: Send + Sync {
    fn ask(&self, params: Value) -> BoxFuture<'_, Result<Value, String>>;
}

/// Turns a validated [`deliver_file::Delivery`] into the call's embedded resource (a
/// `content` item), owned by the client-facing layer; `Err` fails the call and attaches
/// nothing.
pub trait Embedder: Send + Sync {
    fn embed<'a>(
        &'a self,
        ctx: &'a ToolContext,
        delivery: &'a deliver_file::Delivery,
    ) -> BoxFuture<'a, Result<Value, ToolError>>;

    /// Writes a blob a tool received (an MCP server's embedded resource) under the session's
    /// `uploads/`, as prompt attachments are; answers its path.
    fn store_blob<'a>(
        &'a self,
        _cwd: &'a std::path::Path,
        _bytes: &'a [u8],
        _uri: &'a str,
        _mime: Option<&'a str>,
    ) -> BoxFuture<'a, Result<PathBuf, ToolError>> {
        Box::pin(async { Err(ToolError("there is no client to store the blob for".into())) })
    }
}

/// What tools of one session share: the policy, its remembered approvals, the asker, and
/// what embeds delivered files.
pub struct ToolEnv {
    pub policy: Policy,
    pub approvals: Approvals,
    /// The "Always allow" answers of the session's agent (network hosts), shared by all its
    /// sessions.
    pub agent_approvals: Arc<dyn network_approval::AgentApprovals>,
    pub asker: Arc<dyn Asker>,
    pub embedder: Arc<dyn Embedder>,
    /// Who the session's calls are recorded for in the audit log.
    pub audit: crate::audit::tool::Scope,
    /// The client's editor buffers, where it offered them; [`buffers::Disk`] otherwise.
    pub files: Arc<dyn buffers::ClientFiles>,
    /// Where the policy of the session's next call comes from (its mode may change during a
    /// turn); `None`: [`ToolEnv::policy`] for the whole turn.
    pub levels: Option<Arc<dyn PolicySource>>,
    /// The session's credentials: its placeholders and CA (`network = proxy`).
    pub credentials: crate::egress::credentials::session::Slot,
}

/// The session's policy as of now (the client may lower its mode at any time).
pub trait PolicySource: Send + Sync {
    fn current(&self) -> Policy;
}

impl ToolEnv {
    /// The same environment with `embedder` embedding delivered files.
    pub fn with_embedder(&self, embedder: Arc<dyn Embedder>) -> Arc<ToolEnv> {
        Arc::new(ToolEnv {
            policy: self.policy.clone(),
            approvals: self.approvals.clone(),
            agent_approvals: self.agent_approvals.clone(),
            asker: self.asker.clone(),
            embedder,
            audit: self.audit.clone(),
            files: self.files.clone(),
            levels: self.levels.clone(),
            credentials: self.credentials.clone(),
        })
    }

    /// The environment of the session's next tool call: the same, with the policy as of now
    /// when the session's mode changed since this one was built.
    pub fn for_next_call(self: &Arc<Self>) -> Arc<ToolEnv> {
        let Some(levels) = &self.levels else {
            return self.clone();
        };
        let policy = levels.current();
        if policy.level == self.policy.level {
            return self.clone();
        }
        Arc::new(ToolEnv {
            policy,
            approvals: self.approvals.clone(),
            agent_approvals: self.agent_approvals.clone(),
            asker: self.asker.clone(),
            embedder: self.embedder.clone(),
            audit: self.audit.clone(),
            files: self.files.clone(),
            levels: self.levels.clone(),
            credentials: self.credentials.clone(),
        })
    }
}

/// An asker and embedder for contexts without a client: every question and delivery fails.
pub struct NoClient;

impl Asker for NoClient {
    fn ask(&self, _params: Value) -> BoxFuture<'_, Result<Value, String>> {
        Box::pin(async { Err("there is no client to ask".to_owned()) })
    }
}

impl Embedder for NoClient {
    fn embed<'a>(
        &'a self,
        _ctx: &'a ToolContext,
        _delivery: &'a deliver_file::Delivery,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async {
            Err(ToolError(
                "there is no client to deliver the file to".into(),
            ))
        })
    }
}

impl Default for ToolEnv {
    /// The default policy, nobody to ask (tests and tools that never ask).
    fn default() -> Self {
        ToolEnv {
            policy: Policy::default(),
            approvals: Approvals::default(),
            agent_approvals: Arc::new(network_approval::Remembered::default()),
            asker: Arc::new(NoClient),
            embedder: Arc::new(NoClient),
            audit: Default::default(),
            files: Arc::new(buffers::Disk),
            levels: None,
            credentials: Default::default(),
        }
    }
}

/// A successful tool result: `text` goes back to the model and to the client; `extra` (an
/// object or null) is merged into the final `tool_call_update` — its `content` items are
/// appended after the text, its other keys (`locations`, `title`, `rawOutput`) set. A
/// `delivery` (from `deliver_file`) is embedded by the session's [`Embedder`] before the call
/// completes; if it cannot be, the call fails.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    pub text: String,
    pub extra: Value,
    pub delivery: Option<deliver_file::Delivery>,
}

impl ToolOutput {
    /// A plain text result.
    pub fn text(text: impl Into<String>) -> ToolOutput {
        ToolOutput {
            text: text.into(),
            extra: Value::Null,
            delivery: None,
        }
    }
}

/// A failed tool call; the message is written for the model to act on.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct ToolError(pub String);

impl From<String> for ToolError {
    fn from(message: String) -> Self {
        ToolError(message)
    }
}

/// One tool the model can call.
pub trait Tool: Send + Sync {
    fn name(&self) -> &str;
    fn description(&self) -> &str;
    /// JSON schema of the arguments object.
    fn parameters(&self) -> Value;
    /// The schema as offered to a session with `policy` (its limits may show in it).
    fn parameters_for(&self, _policy: &Policy) -> Value {
        self.parameters()
    }
    fn kind(&self) -> ToolKind;
    /// A short human title for one call, shown by the client.
    fn title(&self, args: &Value) -> String;
    /// The ACP `locations` (`[{path, line?}]`) a call touches, announced with it; null if none.
    fn locations(&self, _args: &Value, _cwd: &std::path::Path) -> Value {
        Value::Null
    }
    fn execute<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>>;
}

/// `[{path, line?}]` for a `path` argument resolved against `cwd` (and `line` from `line_key`).
pub fn path_location(args: &Value, cwd: &std::path::Path, line_key: Option<&str>) -> Value {
    let Some(raw) = args["path"].as_str() else {
        return Value::Null;
    };
    let path = crate::policy::resolve::normalize(&cwd.join(crate::policy::resolve::expand_home(
        std::path::Path::new(raw),
    )));
    let mut location = serde_json::json!({"path": path});
    if let Some(line) = line_key.and_then(|k| args[k].as_u64()) {
        location["line"] = line.into();
    }
    serde_json::json!([location])
}

/// The `tool` label of a call's metrics: a built-in tool's name; `mcp` for every MCP tool
/// (`mcp__<server>__<tool>`: clients name them, so their names would make the label set
/// unbounded); `other` for anything else.
pub fn metric_label(name: &str) -> &str {
    static BUILTIN: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    let builtin = BUILTIN.get_or_init(|| {
        ToolRegistry::builtin()
            .iter()
            .map(|t| t.name().to_owned())
            .collect()
    });
    if builtin.iter().any(|b| b == name) {
        name
    } else if name.starts_with("mcp__") {
        "mcp"
    } else {
        "other"
    }
}

/// The tools of one agent, by name.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: BTreeMap<String, Arc<dyn Tool>>,
    fallbacks: Vec<(String, Arc<dyn Tool>)>,
}

impl ToolRegistry {
    /// The tools every agent gets.
    pub fn builtin() -> Self {
        let mut registry = Self::default();
        registry.register(Arc::new(todo_write::TodoWrite));
        registry.register(Arc::new(shell::Shell));
        registry.register(Arc::new(file_read::FileRead));
        registry.register(Arc::new(file_write::FileWrite));
        registry.register(Arc::new(file_edit::FileEdit));
        registry.register(Arc::new(glob_search::GlobSearch));
        registry.register(Arc::new(content_search::ContentSearch));
        registry.register(Arc::new(deliver_file::DeliverFile));
        registry.register(Arc::new(ask_user::AskUser));
        registry.register(Arc::new(escalate::Escalate));
        registry
    }

    pub fn register(&mut self, tool: Arc<dyn Tool>) {
        self.tools.insert(tool.name().to_owned(), tool);
    }

    /// The tool `name`, else the fallback of the longest registered prefix of it.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.get(name).or_else(|| {
            self.fallbacks
                .iter()
                .filter(|(prefix, _)| name.starts_with(prefix.as_str()))
                .max_by_key(|(prefix, _)| prefix.len())
                .map(|(_, tool)| tool)
        })
    }

    /// Answers every name starting with `prefix` that no tool has (an MCP server that did
    /// not start: its calls fail with the reason); fallbacks are not offered to the model.
    pub fn register_fallback(&mut self, prefix: String, tool: Arc<dyn Tool>) {
        self.fallbacks.push((prefix, tool));
    }

    pub fn iter(&self) -> impl Iterator<Item = &Arc<dyn Tool>> {
        self.tools.values()
    }
}
