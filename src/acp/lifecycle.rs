//! `session/cancel` (notification or request), `session/stop` (waits for the running turn,
//! then removes the session from memory) and `session/close` (cancels, then removes). None of
//! them deletes the stored record.

use serde_json::{Value, json};

use super::{Connection, params};
use crate::audit;
use crate::rpc::RpcError;

/// `session/cancel` as a notification: never answers, ignores unknown sessions.
pub fn cancel_notification(conn: &Connection, params: &Value) {
    let Ok(id) = params::session_id(params) else {
        return;
    };
    if let Ok(session) = conn.session(id) {
        session.cancel_turn();
    }
}

/// `session/cancel` as a request: `{}`; a no-op when the session is idle.
pub fn cancel_request(conn: &Connection, params: &Value) -> Result<Value, RpcError> {
    let id = params::session_id(params)?;
    conn.session(id)?.cancel_turn();
    Ok(json!({}))
}

/// `session/stop`: lets the running turn finish, then deactivates the session.
pub async fn stop(conn: &Connection, params: &Value) -> Result<Value, RpcError> {
    let id = params::session_id(params)?;
    let session = conn.session(id)?;
    session.wait_idle().await;
    conn.server.sessions.remove(id);
    let event = audit::session_event("session.close", id, Some(conn.owner.as_str()));
    audit::note(event.with("how", "stop")).await;
    Ok(json!({"sessionId": id, "stopped": true}))
}

/// `session/close`: cancels the running turn and deactivates the session.
pub async fn close(conn: &Connection, params: &Value) -> Result<Value, RpcError> {
    let id = params::session_id(params)?;
    if conn.server.store.is_none() {
        return Err(RpcError::session_not_found(
            "session/close is unavailable: the session store could not be opened",
        ));
    }
    let session = conn.session(id)?;
    session.cancel_turn();
    session.wait_idle().await;
    conn.server.sessions.remove(id);
    let event = audit::session_event("session.close", id, Some(conn.owner.as_str()));
    audit::note(event.with("how", "close")).await;
    Ok(json!({}))
}
