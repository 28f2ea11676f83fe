//! Helpers shared by the integration tests; each test binary uses only some of them.
#![allow(dead_code)]

pub mod acp_client;
pub mod acp_fixture;
pub mod acp_fs;
pub mod acp_inbox;
pub mod acp_schema;
pub mod anthropic_stream;
pub mod model_server;
pub mod postgres;
pub mod read_only_dir;
mod require_feature;
pub mod store_under_test;
pub mod ws_conn;
pub mod ws_daemon;
pub mod ws_transport;

pub use require_feature::require_feature;
// Only the binaries with tools that need a program use it.
#[allow(unused_imports)]
pub use require_feature::have_program;
