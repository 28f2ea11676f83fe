//! The `session/update` sink of a turn: each update becomes one notification on the
//! connection that sent the prompt, queued in order before the prompt's response.

use serde_json::{Value, json};

use crate::rpc::Peer;
use crate::tools::{BoxFuture, UpdateSink};

pub struct PeerSink {
    pub peer: Peer,
    pub session_id: String,
}

impl UpdateSink for PeerSink {
    fn send(&self, update: Value) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let params = json!({"sessionId": self.session_id, "update": update});
            self.peer.notify("session/update", params).await;
        })
    }
}
