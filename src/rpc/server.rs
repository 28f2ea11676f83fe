//! The inbound loop of one connection: classifies frames, answers malformed ones, routes
//! responses to pending outbound requests, and runs every request on its own task so a long
//! `session/prompt` never blocks `session/cancel` or anything else. `$/cancel_request`
//! (`params.requestId`, or `params.id`) aborts one running request, which then answers -32800 —
//! unless its handler took the cancellation over ([`Peer::take_cancellation`]) and answers it
//! itself.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use futures::{Stream, StreamExt};
use serde_json::{Value, json};
use tokio::task::JoinSet;

use super::codec::FrameError;
use super::error::INVALID_REQUEST;
use super::message::{Incoming, classify};
use super::peer::RequestCancel;
use super::{Peer, RpcError};

/// What a connection serves: the ACP methods, or anything else speaking JSON-RPC.
pub trait Handler: Send + Sync + 'static {
    /// Answers one request; runs on its own task.
    fn request(
        &self,
        peer: Peer,
        method: String,
        params: Value,
    ) -> impl Future<Output = Result<Value, RpcError>> + Send;

    /// Handles one notification; awaited in arrival order, so it must not wait for long.
    fn notification(
        &self,
        peer: Peer,
        method: String,
        params: Value,
    ) -> impl Future<Output = ()> + Send;
}

type InFlight = Arc<Mutex<HashMap<String, RequestCancel>>>;

/// Serves one connection until `incoming` ends, then waits for the requests still running.
pub async fn serve<H, S>(mut incoming: S, peer: Peer, handler: Arc<H>)
where
    H: Handler,
    S: Stream<Item = Result<String, FrameError>> + Unpin,
{
    let in_flight = InFlight::default();
    let mut tasks = JoinSet::new();
    while let Some(frame) = incoming.next().await {
        while tasks.try_join_next().is_some() {}
        let text = match frame {
            Ok(text) => text,
            Err(error) => {
                peer.respond(Value::Null, Err(frame_error(error))).await;
                continue;
            }
        };
        match classify(&text) {
            Err(rejected) => peer.respond(rejected.id, Err(rejected.error)).await,
            Ok(Incoming::Response { id, result }) => {
                if !peer.deliver(&id, result) {
                    tracing::debug!(%id, "ignoring a response with an unknown id");
                }
            }
            Ok(Incoming::Notification { method, params }) => {
                if method == "$/cancel_request" {
                    cancel_in_flight(&in_flight, &params);
                } else {
                    handler.notification(peer.clone(), method, params).await;
                }
            }
            Ok(Incoming::Request { id, method, params }) => {
                let task = spawn_request(&handler, &peer, &in_flight, id, method, params);
                tasks.spawn(task);
            }
        }
    }
    while tasks.join_next().await.is_some() {}
}

fn frame_error(error: FrameError) -> RpcError {
    match error {
        FrameError::TooLong { len, max } => RpcError::new(
            INVALID_REQUEST,
            format!("line of {len} bytes exceeds the limit of {max} bytes; discarded"),
        )
        .with_data(json!({"reason": "line_too_long", "maxLineBytes": max})),
        FrameError::InvalidUtf8 => RpcError::parse("parse error: the line is not valid UTF-8"),
    }
}

/// The task answering one request, registered for `$/cancel_request` while it runs.
fn spawn_request<H: Handler>(
    handler: &Arc<H>,
    peer: &Peer,
    in_flight: &InFlight,
    id: Value,
    method: String,
    params: Value,
) -> impl Future<Output = ()> + Send + 'static {
    let key = id.to_string();
    let cancel = RequestCancel::default();
    lock(in_flight).insert(key.clone(), cancel.clone());
    let (handler, peer, in_flight) = (
        handler.clone(),
        peer.for_request(cancel.clone()),
        in_flight.clone(),
    );
    async move {
        // Boxed: a handler's future is large (a prompt's turn lives in it), and kept inline it
        // made this task as large, copied whole at each move on its way into the runtime.
        let mut work = Box::pin(handler.request(peer.clone(), method, params));
        // Biased: the handler runs first, so one that takes the cancellation over does so
        // before a cancellation already received is looked at.
        let result = tokio::select! {
            biased;
            result = &mut work => result,
            () = cancel.cancelled() => {
                if cancel.is_taken() {
                    work.await
                } else {
                    Err(RpcError::request_cancelled())
                }
            }
        };
        lock(&in_flight).remove(&key);
        peer.respond(id, result).await;
    }
}

/// `$/cancel_request`: base ACP names the request `requestId`; `id` is accepted as an alias.
fn cancel_in_flight(in_flight: &InFlight, params: &Value) {
    let Some(id) = params.get("requestId").or_else(|| params.get("id")) else {
        return;
    };
    if let Some(cancel) = lock(in_flight).get(&id.to_string()) {
        cancel.cancel();
    }
}

fn lock(in_flight: &InFlight) -> std::sync::MutexGuard<'_, HashMap<String, RequestCancel>> {
    in_flight.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rpc::error::REQUEST_CANCELLED;
    use crate::rpc::stdio;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    /// `slow` never finishes on its own; `owns_cancel` takes its cancellation over and answers
    /// `"stopped"` when cancelled; `echo` answers its params; notifications are dropped.
    struct TestHandler;

    impl Handler for TestHandler {
        async fn request(
            &self,
            peer: Peer,
            method: String,
            params: Value,
        ) -> Result<Value, RpcError> {
            match method.as_str() {
                "slow" => std::future::pending().await,
                "owns_cancel" => {
                    peer.take_cancellation().cancelled().await;
                    Ok(json!("stopped"))
                }
                "echo" => Ok(params),
                _ => Err(RpcError::method_not_found(&method)),
            }
        }

        async fn notification(&self, _peer: Peer, _method: String, _params: Value) {}
    }

    #[tokio::test]
    async fn requests_run_concurrently_and_cancel_request_answers_the_slow_one() {
        let (client, server) = tokio::io::duplex(64 * 1024);
        let (server_read, server_write) = tokio::io::split(server);
        let serving = tokio::spawn(stdio::run(
            server_read,
            server_write,
            1024,
            Arc::new(TestHandler),
        ));
        let (client_read, mut client_write) = tokio::io::split(client);
        let mut lines = BufReader::new(client_read).lines();
        let input = concat!(
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"slow\"}\n",
            "{\"jsonrpc\":\"2.0\",\"method\":\"note\"}\n",
            "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"echo\",\"params\":{\"x\":1}}\n",
        );
        client_write.write_all(input.as_bytes()).await.unwrap();
        let first: Value =
            serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
        assert_eq!(
            first,
            json!({"jsonrpc": "2.0", "id": 2, "result": {"x": 1}})
        );
        client_write
            .write_all(
                b"{\"jsonrpc\":\"2.0\",\"method\":\"$/cancel_request\",\"params\":{\"id\":1}}\n",
            )
            .await
            .unwrap();
        let second: Value =
            serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
        assert_eq!(second["id"], 1);
        assert_eq!(second["error"]["code"], REQUEST_CANCELLED);
        client_write.shutdown().await.unwrap();
        serving.await.unwrap();
        assert_eq!(
            lines.next_line().await.unwrap(),
            None,
            "nothing else was written"
        );
    }

    #[tokio::test]
    async fn request_id_cancels_and_a_handler_that_took_it_over_answers_itself() {
        let (client, server) = tokio::io::duplex(64 * 1024);
        let (server_read, server_write) = tokio::io::split(server);
        let serving = tokio::spawn(stdio::run(
            server_read,
            server_write,
            1024,
            Arc::new(TestHandler),
        ));
        let (client_read, mut client_write) = tokio::io::split(client);
        let mut lines = BufReader::new(client_read).lines();
        let input = concat!(
            "{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"owns_cancel\"}\n",
            "{\"jsonrpc\":\"2.0\",\"id\":\"b\",\"method\":\"slow\"}\n",
            "{\"jsonrpc\":\"2.0\",\"method\":\"$/cancel_request\",\"params\":{\"requestId\":\"a\"}}\n",
        );
        client_write.write_all(input.as_bytes()).await.unwrap();
        let first: Value =
            serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
        assert_eq!(
            first,
            json!({"jsonrpc": "2.0", "id": "a", "result": "stopped"})
        );
        client_write
            .write_all(
                b"{\"jsonrpc\":\"2.0\",\"method\":\"$/cancel_request\",\"params\":{\"requestId\":\"b\"}}\n",
            )
            .await
            .unwrap();
        let second: Value =
            serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
        assert_eq!(second["id"], "b");
        assert_eq!(second["error"]["code"], REQUEST_CANCELLED);
        client_write.shutdown().await.unwrap();
        serving.await.unwrap();
    }
}
