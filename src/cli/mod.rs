//! Subcommands of the `zeroclaw` binary that are not the ACP server itself, and the `acp`
//! entry point that wires config, runtime and the stdio transport together.

pub mod acp_cmd;
pub mod config_cmd;
pub mod sessions_cmd;
