//! The command-line and storage suite: `zeroclaw config`, `doctor`, `sessions`, `token`, the
//! configuration reference checked against the code, the store on SQLite and PostgreSQL, and
//! the audit log. One test binary; each former file is a module (`store_backends::…`).

#[path = "../support/mod.rs"]
mod support;
#[path = "../sandbox_support/mod.rs"]
#[macro_use]
mod sandbox_support;
#[path = "../tools_support/mod.rs"]
mod tools_support;

mod audit_exec_start;
mod audit_log;
mod audit_refusals;
mod audit_reload;
mod audit_tlog;
mod cli_closed_stdout;
mod cli_config;
mod cli_doctor;
mod cli_doctor_caches;
mod cli_doctor_gaps;
mod cli_doctor_network;
mod cli_doctor_policy;
mod cli_sessions;
mod cli_token;
mod config_docs;
mod session_attest;
mod store;
mod store_backends;
mod store_copy_cli;
