//! The agent's tools: what a tool is ([`tool`]: the [`Tool`] trait, kinds, results), what a
//! call may use ([`context`]), the registry the agent dispatches through ([`registry`]), and
//! one module per tool.
//!
//! A [`Tool`] describes itself to the model (name, description, JSON schema) and to the client
//! (ACP kind, a title for its arguments), and executes with a [`ToolContext`]: the session's
//! working directory, a sink for streaming `session/update`s, and the turn's cancellation token.
//! Every tool that touches the system runs in a child confined by the sandbox crate
//! ([`confine`]): `shell` execs `sh -c` there, the file and search tools run as in-process
//! operations ([`ops`], registered at the top of `main`). The policy ([`ToolEnv::policy`])
//! checks and asks first (the approval gate, `crate::approval::gate`, which sees a call
//! through the [`ToolContext`]); output is capped ([`output`]).

pub mod args;
pub mod ask_user;
pub mod buffers;
pub mod confine;
pub mod content_search;
pub mod context;
pub mod deliver_file;
pub mod escalate;
pub mod file_edit;
pub mod file_read;
pub mod file_write;
pub mod glob_search;
pub mod network_audit;
pub mod ops;
pub mod output;
pub mod registry;
pub mod shell;
pub mod todo_write;
pub mod tool;

pub use context::{
    BoxFuture, Embedder, NoClient, PolicySource, ToolContext, ToolEnv, ToolError, UpdateSink,
};
pub use registry::{ToolRegistry, metric_label};
pub use tool::{Tool, ToolKind, ToolOutput, path_location};
