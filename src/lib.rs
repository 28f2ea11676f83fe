//! zeroclaw: a hardened agent host driven over the Agent Client Protocol.
//!
//! Dependencies point one way: `gateway` -> `acp`; `rpc` <- `acp` -> `agent` -> {`provider`,
//! `tools`}; {`acp`, `agent`, `mcp`, `tools`} -> `approval` -> `policy` (approval imports none
//! of its users); `store` and `config` are used from above; every tool execution goes through
//! the `zeroclaw-sandbox` crate.

#![forbid(unsafe_code)]

pub mod acp;
pub mod agent;
pub mod approval;
pub mod audit;
pub mod caches;
pub mod cli;
pub mod config;
pub mod egress;
pub mod gateway;
pub mod mcp;
pub mod metrics;
pub mod policy;
pub mod provider;
pub mod rpc;
pub mod store;
pub mod telemetry;
pub mod time;
pub mod tools;
