//! Subcommands of the `zeroclaw` binary (`daemon` lives in `gateway::daemon`), and the `acp`
//! entry point that wires config, runtime and the stdio transport together.

pub mod acp_cmd;
pub mod attest_cmd;
pub mod audit_cmd;
mod audit_proof;
pub mod config_cmd;
pub mod doctor;
mod doctor_caches;
mod doctor_network;
mod doctor_root_files;
pub mod sandbox;
mod sandbox_network;
pub mod sessions_cmd;
pub mod store_cmd;
pub mod terminal;
pub use crate::time;
pub mod token_cmd;
