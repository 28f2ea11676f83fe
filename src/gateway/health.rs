//! `GET /health` (alias `GET /livez`): unauthenticated liveness and a few figures (version,
//! sandbox backend, sessions, connections); it reveals nothing about who runs what.
//! `GET /readyz`: 200 while the daemon takes new work — the sandbox self-test passed (nothing
//! is served before it), the session store is open, the audit log opened and its last write
//! committed, and no drain has begun — else 503; the body names each check.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde_json::{Value, json};

use super::Gateway;

pub async fn health(State(gateway): State<Arc<Gateway>>) -> Json<Value> {
    Json(snapshot(&gateway))
}

pub fn snapshot(gateway: &Gateway) -> Value {
    let sessions = &gateway.server.sessions;
    json!({
        "status": "ok",
        "version": env!("CARGO_PKG_VERSION"),
        "sandbox": {"backend": gateway.backend},
        "sessions": {"active": sessions.len(), "busy": sessions.busy()},
        "connections": gateway.connections.load(Ordering::SeqCst),
    })
}

pub async fn readyz(State(gateway): State<Arc<Gateway>>) -> (StatusCode, Json<Value>) {
    let store = gateway.server.store.is_some();
    let audit = crate::audit::global().is_some_and(|log| log.writable());
    let draining = gateway.closing.is_cancelled();
    let ready = store && audit && !draining;
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let body = json!({
        "ready": ready,
        "checks": {"sandbox": true, "store": store, "audit": audit, "draining": draining},
    });
    (status, Json(body))
}
