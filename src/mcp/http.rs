//! The streamable HTTP transport of an http MCP server, for `rmcp`: each outgoing JSON-RPC
//! message is POSTed to the server's URL (the first, `initialize`, before any other, so its
//! `Mcp-Session-Id` goes with the rest); a JSON answer or the `data` events of an SSE answer
//! are the incoming messages. A request whose POST fails is answered with a JSON-RPC error,
//! so its caller learns why at once. The connection is zeroclaw's own, over the client
//! [`super::route`] built for the session's network policy; answers are bounded in size.

use std::sync::{Arc, Mutex};

use futures::channel::mpsc;
use futures::{SinkExt, StreamExt};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::spec::HttpEndpoint;
use crate::provider::sse::SseDecoder;

/// The largest answer read from the server.
const MAX_ANSWER: usize = 16 * 1024 * 1024;

/// The sink and stream `rmcp` serves over, and the task that moves messages until `stop`.
pub fn transport(
    endpoint: HttpEndpoint,
    http: reqwest::Client,
    stop: CancellationToken,
) -> (
    mpsc::Sender<ClientJsonRpcMessage>,
    mpsc::Receiver<ServerJsonRpcMessage>,
) {
    let (out_tx, out_rx) = mpsc::channel(16);
    let (in_tx, in_rx) = mpsc::channel(16);
    let link = Link {
        http,
        endpoint: Arc::new(endpoint),
        session: Arc::default(),
        incoming: in_tx,
    };
    tokio::spawn(pump(link, out_rx, stop));
    (out_tx, in_rx)
}

#[derive(Clone)]
struct Link {
    http: reqwest::Client,
    endpoint: Arc<HttpEndpoint>,
    session: Arc<Mutex<Option<String>>>,
    incoming: mpsc::Sender<ServerJsonRpcMessage>,
}

async fn pump(
    link: Link,
    mut outgoing: mpsc::Receiver<ClientJsonRpcMessage>,
    stop: CancellationToken,
) {
    let mut first = true;
    loop {
        let message = tokio::select! {
            message = outgoing.next() => message,
            () = stop.cancelled() => None,
        };
        let Some(message) = message else {
            return;
        };
        let Ok(message) = serde_json::to_value(&message) else {
            continue;
        };
        if first {
            first = false;
            link.clone().deliver(message).await;
        } else {
            let link = link.clone();
            let stop = stop.clone();
            tokio::spawn(async move {
                tokio::select! {
                    () = link.deliver(message) => {}
                    () = stop.cancelled() => {}
                }
            });
        }
    }
}

impl Link {
    /// POSTs `message`; a request that fails is answered with an error.
    async fn deliver(mut self, message: Value) {
        if let Err(error) = self.post(&message).await
            && let Some(id) = message.get("id")
        {
            let answer = json!({"jsonrpc": "2.0", "id": id, "error": {
                "code": -32603, "message": format!("the http MCP server failed: {error}")}});
            self.push(answer).await;
        }
    }

    async fn post(&mut self, message: &Value) -> Result<(), String> {
        let mut request = self
            .http
            .post(&self.endpoint.url)
            .header("accept", "application/json, text/event-stream")
            .json(message);
        for (name, value) in &self.endpoint.headers {
            request = request.header(name, value);
        }
        let session = self
            .session
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        let mut response = request.send().await.map_err(|e| e.to_string())?;
        if let Some(id) = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
        {
            *self.session.lock().unwrap_or_else(|e| e.into_inner()) = Some(id.to_owned());
        }
        let status = response.status();
        if !status.is_success() {
            return Err(format!("HTTP {status}"));
        }
        let sse = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| t.starts_with("text/event-stream"));
        let (mut body, mut decoder) = (Vec::new(), SseDecoder::new());
        while let Some(chunk) = response.chunk().await.map_err(|e| e.to_string())? {
            if sse {
                for event in decoder.feed(&chunk).map_err(|e| e.to_string())? {
                    self.push_text(&event).await;
                }
            } else {
                body.extend_from_slice(&chunk);
                if body.len() > MAX_ANSWER {
                    return Err(format!("the answer is larger than {MAX_ANSWER} bytes"));
                }
            }
        }
        if sse {
            if let Some(event) = decoder.finish().map_err(|e| e.to_string())? {
                self.push_text(&event).await;
            }
        } else if !body.is_empty() {
            let value: Value = serde_json::from_slice(&body).map_err(|e| e.to_string())?;
            match value {
                Value::Array(batch) => {
                    for item in batch {
                        self.push(item).await;
                    }
                }
                single => self.push(single).await,
            }
        }
        Ok(())
    }

    async fn push_text(&mut self, text: &str) {
        if let Ok(value) = serde_json::from_str::<Value>(text) {
            self.push(value).await;
        }
    }

    async fn push(&mut self, value: Value) {
        match serde_json::from_value::<ServerJsonRpcMessage>(value) {
            Ok(message) => {
                let _ = self.incoming.send(message).await;
            }
            Err(error) => tracing::debug!(%error, "unreadable message from an http MCP server"),
        }
    }
}
