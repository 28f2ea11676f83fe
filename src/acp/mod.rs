//! ACP v1 methods (plus the ZeroClaw extensions): dispatch, sessions, prompt materialization, updates.
//!
//! - [`server`]: state shared by every connection (config, store, sessions, providers).
//! - [`connection`]: one client connection; the `initialize` gate and method dispatch.
//! - [`initialize`], [`new_session`], [`prompt`] (`session/prompt`), [`restore`]
//!   (`session/load`, `session/resume`), [`lifecycle`] (`session/cancel|stop|close`),
//!   [`listing`] (`session/list`), [`delete`] (`session/delete`), [`modes`]
//!   (`session/set_mode`, the mode config option): one file per method family; [`titles`]
//!   (a session's title after its first turn) and [`commands`] (the slash commands).
//! - [`sessions`] / [`session`]: the process-wide active set and one active session's state.
//! - [`materialize`]: prompt content blocks to text (writing base64 blobs under `uploads/`);
//!   [`images`]: which images a prompt may carry, and reading stored ones back; [`embed`]: `deliver_file` results re-read, re-hashed and embedded as resources.
//! - [`config_options`]: the session's `configOptions` (model, thought level) and
//!   `session/set_config_option`.
//! - [`params`], [`agents`], [`updates`]: parameter aliases, agent alias resolution, and the
//!   `session/update` sink; [`permission`]: `session/request_permission` and a turn's tool env;
//!   [`client_fs`]: the client's `fs` capabilities and the `fs/*` requests.
//! - [`sandbox_decl`]: the sandbox declared in `initialize` and the session results
//!   (`_meta.zeroclaw.sandbox`), and a client's `requireSandbox` checked at `session/new`.

pub mod agents;
pub mod client_fs;
pub mod commands;
pub mod config_options;
pub mod connection;
pub mod delete;
pub mod embed;
pub mod images;
pub mod initialize;
pub mod lease;
pub mod lifecycle;
pub mod listing;
pub mod materialize;
pub mod modes;
pub mod new_session;
pub mod params;
pub mod permission;
pub mod prompt;
pub mod restore;
pub mod sandbox_decl;
pub mod server;
pub mod session;
pub mod sessions;
pub mod titles;
pub mod updates;

pub use connection::Connection;
pub use server::Server;
