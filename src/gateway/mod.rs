//! The daemon's gateway: ACP over WebSocket on Unix and TCP listeners, sharing one
//! [`acp::Server`](crate::acp::Server) (sessions, store, providers) between every connection.
//!
//! - [`listen`]: addresses, binding, activated sockets.
//! - [`socket_file`]: claiming a Unix socket path (never a live daemon's) and removing on exit
//!   only the socket this process bound.
//! - [`auth`]: principals from tokens and peer credentials, checked before the upgrade.
//! - [`origin`]: the browser `Origin` check of `/acp` on TCP (`allowed_origins`).
//! - [`tokens`]: the hashed token file behind `zeroclaw token`.
//! - [`ws`]: `GET /acp`, frames <-> the JSON-RPC loop; [`health`]: `GET /health`.
//! - [`systemd`]: socket activation, `sd_notify`, the watchdog.
//! - [`daemon`]: `zeroclaw daemon` — start-up, signals (SIGTERM drain, SIGHUP reload), idle exit.
//! - [`bridge`]: `zeroclaw-acp-bridge`, stdio ACP relayed to a daemon.

pub mod affinity;
pub mod auth;
pub mod bridge;
pub mod daemon;
pub mod health;
pub mod listen;
pub mod metrics;
pub mod origin;
pub mod socket_file;
pub mod systemd;
pub mod tokens;
pub mod ws;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::acp::Server;
use crate::config::GatewayConfig;
use auth::Policy;
use tokens::Tokens;

/// State shared by every gateway request.
pub struct Gateway {
    pub server: Arc<Server>,
    pub tokens: Tokens,
    policy: RwLock<Policy>,
    pub max_frame_bytes: usize,
    pub idle_timeout: Duration,
    pub max_connections: usize,
    /// Open WebSocket connections.
    pub connections: Arc<AtomicUsize>,
    /// Woken whenever a connection closes (the drain waits on it).
    connection_closed: Arc<tokio::sync::Notify>,
    /// Cancelled when the daemon stops: every connection stops reading.
    pub closing: CancellationToken,
    /// The sandbox backend the self-test ran with (`namespaces`, `landlock`, ...).
    pub backend: String,
}

impl Gateway {
    pub fn new(server: Arc<Server>, gateway: &GatewayConfig, backend: String) -> Gateway {
        let config_dir = server.config().config_dir.clone();
        Gateway {
            tokens: Tokens::in_dir(&config_dir),
            policy: RwLock::new(Policy::new(gateway)),
            max_frame_bytes: gateway.max_frame_bytes,
            idle_timeout: Duration::from_secs(gateway.idle_timeout_secs),
            max_connections: gateway.max_connections,
            connections: Arc::default(),
            connection_closed: Arc::default(),
            closing: CancellationToken::new(),
            backend,
            server,
        }
    }

    pub fn policy(&self) -> Policy {
        self.policy
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// A reload changes who is admitted from now on (open connections stay).
    pub fn set_policy(&self, gateway: &GatewayConfig) {
        *self.policy.write().unwrap_or_else(|e| e.into_inner()) = Policy::new(gateway);
    }

    /// A connection slot, or `None` at `max_connections`.
    pub fn claim_connection(&self) -> Option<ConnectionSlot> {
        let claimed = self
            .connections
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < self.max_connections).then_some(n + 1)
            });
        claimed.ok().map(|_| ConnectionSlot {
            connections: self.connections.clone(),
            closed: self.connection_closed.clone(),
        })
    }

    pub fn open_connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    /// Returns once no connection is open (at once when none is).
    pub async fn connections_closed(&self) {
        loop {
            let closed = self.connection_closed.notified();
            tokio::pin!(closed);
            // Registered before the count is read, so a close in between is not missed.
            closed.as_mut().enable();
            if self.open_connections() == 0 {
                return;
            }
            closed.await;
        }
    }
}

/// One open connection, counted until dropped.
pub struct ConnectionSlot {
    connections: Arc<AtomicUsize>,
    closed: Arc<tokio::sync::Notify>,
}

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        self.connections.fetch_sub(1, Ordering::SeqCst);
        self.closed.notify_waiters();
    }
}
