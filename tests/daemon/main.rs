//! The daemon suite: `zeroclaw daemon` over WebSocket (TCP and Unix socket) — authentication,
//! frames, health and metrics, lifecycle and drain, reloads, socket activation, the cluster on a
//! shared store, the audit log's retries on PostgreSQL and the load test. One test binary; each former file is a module
//! (`daemon_auth::…`).

#[path = "../support/mod.rs"]
mod support;

mod audit_pg_retry;
mod daemon_agent;
mod daemon_auth;
mod daemon_bridge;
mod daemon_cluster;
mod daemon_frames;
mod daemon_health;
mod daemon_lifecycle;
mod daemon_load;
mod daemon_metrics;
mod daemon_packaged;
mod daemon_reload;
mod daemon_socket;
mod daemon_systemd;
mod gateway_reload;
