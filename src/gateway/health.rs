//! `GET /health`: unauthenticated liveness and a few figures (version, sandbox backend,
//! sessions, connections); it reveals nothing about who runs what.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::Json;
use axum::extract::State;
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
