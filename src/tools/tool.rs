//! What a tool is: the [`Tool`] trait the agent dispatches through, its ACP [`ToolKind`], its
//! result ([`ToolOutput`]), and the `locations` helper the file tools share. What a call may use is in [`super::context`]; the tools of an agent in
//! [`super::registry`].

use serde_json::Value;

use super::context::{BoxFuture, ToolContext, ToolError};
use super::deliver_file;
use crate::policy::Policy;

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
