//! What a tool call may use: its [`ToolContext`] (session, working directory, update sink,
//! cancellation, call id) and the [`ToolEnv`] the tools of one session share (policy,
//! approvals, the client's asker and embedder, the audit scope, the editor buffers), and the
//! [`ToolError`] and [`BoxFuture`] a call's traits answer with. The approval gate
//! (`crate::approval::gate`) sees a call through its [`Call`] view of the [`ToolContext`].

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{buffers, deliver_file};
use crate::approval::Approvals;
use crate::approval::agent::{AgentApprovals, Remembered};
use crate::approval::gate::{Asker, Call, Refused};
use crate::policy::Policy;

/// A boxed future, as object-safe traits return them.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A failed tool call; the message is written for the model to act on.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct ToolError(pub String);

impl From<String> for ToolError {
    fn from(message: String) -> Self {
        ToolError(message)
    }
}

/// The approval gate's refusal fails the call with its reason.
impl From<Refused> for ToolError {
    fn from(refused: Refused) -> Self {
        ToolError(refused.0)
    }
}

/// Where `session/update` payloads (the `update` object) go while a turn runs.
pub trait UpdateSink: Send + Sync {
    fn send(&self, update: Value) -> BoxFuture<'_, ()>;
}

/// What a tool execution may use.
#[derive(Clone)]
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

/// What the approval gate sees of a call: the call's ids, cwd and cancellation, and its
/// session's policy, approvals, asker and audit scope.
impl Call for ToolContext {
    fn session_id(&self) -> &str {
        &self.session_id
    }

    fn call_id(&self) -> &str {
        &self.call_id
    }

    fn cwd(&self) -> &std::path::Path {
        &self.cwd
    }

    fn policy(&self) -> &Policy {
        &self.env.policy
    }

    fn approvals(&self) -> &Approvals {
        &self.env.approvals
    }

    fn agent_approvals(&self) -> &dyn AgentApprovals {
        &*self.env.agent_approvals
    }

    fn asker(&self) -> &dyn Asker {
        &*self.env.asker
    }

    fn audit_scope(&self) -> &crate::audit::tool::Scope {
        &self.env.audit
    }

    fn cancel(&self) -> &CancellationToken {
        &self.cancel
    }
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
    pub agent_approvals: Arc<dyn AgentApprovals>,
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
            agent_approvals: Arc::new(Remembered::default()),
            asker: Arc::new(NoClient),
            embedder: Arc::new(NoClient),
            audit: Default::default(),
            files: Arc::new(buffers::Disk),
            levels: None,
            credentials: Default::default(),
        }
    }
}
