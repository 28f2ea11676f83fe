//! Subcommands of the `zeroclaw` binary that are not the ACP server itself.

pub mod doctor;
pub mod sandbox;
