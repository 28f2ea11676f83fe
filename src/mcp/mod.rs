//! The client's MCP servers, run confined, and their tools offered to the model.
//!
//! - [`spec`]: the `mcpServers` entries of `session/new|load|resume`, validated, and the
//!   operator's `[mcp]` servers of an agent (`crate::config::mcp`, optionally `trusted`).
//! - [`server`]: one stdio server started inside the sandbox with the session's profile (its
//!   cwd, network policy and limits; the environment only the sandbox's allowlist plus the
//!   entry's `env`), spoken to over its stdio with the official Rust SDK (`rmcp`).
//! - [`install`]: where a stdio server's executable and script are on the host; their
//!   directories are made readable to it, and `session/new` tells the user of one that
//!   cannot start.
//! - [`http`]: an http server's streamable-HTTP transport (zeroclaw's own connection), and
//!   [`route`]: whether and how the session's network mode lets zeroclaw reach the server
//!   (`allow` directly, `proxy` only at addresses the egress policy admits, `deny` never).
//! - [`tool`]: one server tool as a [`crate::tools::Tool`] named `mcp__<server>__<tool>`,
//!   gated by the policy like a medium-risk command, its result mapped to ACP content.
//! - [`set`]: the servers of one session, started lazily at its first prompt (the model must
//!   see their tools) and stopped when the session ends or its connection closes.

pub mod http;
pub mod install;
pub mod route;
pub mod server;
pub mod set;
pub mod spec;
pub mod tool;

pub use set::McpSet;
pub use spec::ServerSpec;
