//! The `session/update` sink of a turn: each update becomes one notification on the
//! connection that sent the prompt, queued in order before the prompt's response.

use serde::Serialize;
use serde_json::Value;

use crate::rpc::Peer;
use crate::tools::{BoxFuture, UpdateSink};

pub struct PeerSink {
    pub peer: Peer,
    pub session_id: String,
}

/// The params of a `session/update`, serialized as they are (see [`Peer::notify_with`]).
#[derive(Serialize)]
struct SessionUpdate<'a> {
    #[serde(rename = "sessionId")]
    session_id: &'a str,
    update: &'a Value,
}

impl UpdateSink for PeerSink {
    fn send(&self, update: Value) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let params = SessionUpdate {
                session_id: &self.session_id,
                update: &update,
            };
            self.peer.notify_with("session/update", &params).await;
        })
    }
}
