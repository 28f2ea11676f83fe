//! The outbound half of a connection: every message goes through one queue to the single
//! writer, so messages queued in order are written in order. Outbound requests get string ids
//! `zc-out-<n>` and wait in a pending map for the client's response or a timeout. The clone
//! handed to one request's handler also carries that request's `$/cancel_request` signal.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::RpcError;

/// Prefix of the ids of requests we send; disjoint from any id a client uses for its own.
pub const OUTBOUND_ID_PREFIX: &str = "zc-out-";

type Pending = Arc<Mutex<HashMap<String, oneshot::Sender<Result<Value, RpcError>>>>>;

/// Values a request handler wants kept alive until its response is queued.
type Deferred = Arc<Mutex<Vec<Box<dyn Send>>>>;

/// A cheap-to-clone handle for sending to the other side of one connection.
#[derive(Clone)]
pub struct Peer {
    out: mpsc::Sender<String>,
    pending: Pending,
    next_id: Arc<AtomicU64>,
    /// Set on the clone handed to one request's handler (see [`Peer::for_request`]).
    deferred: Option<Deferred>,
    /// Set on that clone too: the request's `$/cancel_request` (see [`Peer::take_cancellation`]).
    cancel: Option<RequestCancel>,
}

/// The `$/cancel_request` signal of one running request, and whether its handler answers it
/// itself instead of being aborted.
#[derive(Clone, Default)]
pub struct RequestCancel {
    token: CancellationToken,
    taken: Arc<AtomicBool>,
}

impl RequestCancel {
    /// Fires the signal (the server calls this on `$/cancel_request`).
    pub fn cancel(&self) {
        self.token.cancel();
    }

    /// Resolves once the request is cancelled.
    pub async fn cancelled(&self) {
        self.token.cancelled().await;
    }

    /// Whether the handler took the cancellation over, so it must not be aborted.
    pub fn is_taken(&self) -> bool {
        self.taken.load(Ordering::SeqCst)
    }
}

impl Peer {
    /// A peer whose messages go to `out` (drained by the transport's writer).
    pub fn new(out: mpsc::Sender<String>) -> Self {
        Self {
            out,
            pending: Arc::default(),
            next_id: Arc::default(),
            deferred: None,
            cancel: None,
        }
    }

    /// The clone given to the handler of one request: what it hands to
    /// [`Peer::release_after_response`] lives until that request's response is queued, and
    /// `cancel` is that request's `$/cancel_request` signal.
    pub fn for_request(&self, cancel: RequestCancel) -> Self {
        Self {
            deferred: Some(Deferred::default()),
            cancel: Some(cancel),
            ..self.clone()
        }
    }

    /// Makes this request answer its own `$/cancel_request`: from now on the server no longer
    /// aborts it with -32800 but fires the returned token and waits for the handler's answer.
    /// Outside a request handler the token never fires.
    pub fn take_cancellation(&self) -> CancellationToken {
        match &self.cancel {
            Some(cancel) => {
                cancel.taken.store(true, Ordering::SeqCst);
                cancel.token.clone()
            }
            None => CancellationToken::new(),
        }
    }

    /// Keeps `value` alive until this request's response is queued, then drops it — so that
    /// whatever waits for its drop (e.g. `session/stop` waiting for a turn) answers after this
    /// request. Outside a request handler it is dropped at once.
    pub fn release_after_response(&self, value: impl Send + 'static) {
        if let Some(deferred) = &self.deferred {
            deferred
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(Box::new(value));
        }
    }

    /// Sends a notification; waits for room in the queue, never for the client.
    pub async fn notify(&self, method: &str, params: Value) {
        self.notify_with(method, &params).await;
    }

    /// [`Peer::notify`] with any serializable params, written straight into the line (no
    /// `Value` tree is built around them: a `session/load` sends one per replayed entry).
    pub async fn notify_with(&self, method: &str, params: &impl Serialize) {
        if let Some(line) = notification(method, params) {
            // A closed queue means the writer is gone (client hung up): nothing left to tell it.
            let _ = self.out.send(line).await;
        }
    }

    /// Queues a notification now, without waiting (for code that cannot await, such as a
    /// value released after a response): when the queue is full it is sent from a task.
    pub fn notify_now(&self, method: &str, params: Value) {
        let Some(message) = notification(method, &params) else {
            return;
        };
        if let Err(mpsc::error::TrySendError::Full(message)) = self.out.try_send(message) {
            let out = self.out.clone();
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(async move {
                    let _ = out.send(message).await;
                });
            }
        }
    }

    /// Answers a request.
    pub async fn respond(&self, id: Value, result: Result<Value, RpcError>) {
        let message = match result {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error.to_json()}),
        };
        self.send(message).await;
        if let Some(deferred) = &self.deferred {
            let released = std::mem::take(&mut *deferred.lock().unwrap_or_else(|e| e.into_inner()));
            drop(released);
        }
    }

    /// Sends a request to the client and waits for its answer, at most `timeout`.
    pub async fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, RpcError> {
        let id = format!(
            "{OUTBOUND_ID_PREFIX}{}",
            self.next_id.fetch_add(1, Ordering::Relaxed)
        );
        let (tx, rx) = oneshot::channel();
        self.lock_pending().insert(id.clone(), tx);
        let _forget = ForgetOnDrop {
            pending: &self.pending,
            id: &id,
        };
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => Err(RpcError::internal("connection closed")),
            Err(_) => Err(RpcError::internal(format!(
                "the client did not answer {method} within {}s",
                timeout.as_secs()
            ))),
        }
    }

    /// Routes a response to the pending request with that id; unknown ids are ignored.
    pub fn deliver(&self, id: &Value, result: Result<Value, RpcError>) -> bool {
        let Some(key) = id.as_str() else {
            return false;
        };
        match self.lock_pending().remove(key) {
            Some(waiter) => waiter.send(result).is_ok(),
            None => false,
        }
    }

    async fn send(&self, message: Value) {
        // A closed queue means the writer is gone (client hung up): nothing left to tell it.
        let _ = self.out.send(message.to_string()).await;
    }

    fn lock_pending(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<String, oneshot::Sender<Result<Value, RpcError>>>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The line of a notification: `{"jsonrpc":"2.0","method":…,"params":…}`; `None` (logged) for
/// params that do not serialize (a map with keys that are not strings: a bug).
fn notification(method: &str, params: &impl Serialize) -> Option<String> {
    #[derive(Serialize)]
    struct Notification<'a, P> {
        jsonrpc: &'static str,
        method: &'a str,
        params: &'a P,
    }
    let message = Notification {
        jsonrpc: "2.0",
        method,
        params,
    };
    serde_json::to_string(&message)
        .inspect_err(|error| tracing::error!(%error, method, "notification not serialized"))
        .ok()
}

/// Removes a pending entry when its request future ends, however it ends.
struct ForgetOnDrop<'a> {
    pending: &'a Pending,
    id: &'a str,
}

impl Drop for ForgetOnDrop<'_> {
    fn drop(&mut self) {
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn outbound_request_is_answered_by_its_response_only() {
        let (tx, mut rx) = mpsc::channel(8);
        let peer = Peer::new(tx);
        let waiter = {
            let peer = peer.clone();
            tokio::spawn(async move {
                peer.request("x/ask", json!({}), Duration::from_secs(60))
                    .await
            })
        };
        let sent: Value = serde_json::from_str(&rx.recv().await.unwrap()).unwrap();
        assert_eq!(sent["id"], "zc-out-0");
        assert!(!peer.deliver(&json!("zc-out-99"), Ok(json!(1))));
        assert!(!peer.deliver(&Value::Null, Ok(json!(1))));
        assert!(peer.deliver(&json!("zc-out-0"), Ok(json!({"ok": true}))));
        assert_eq!(waiter.await.unwrap(), Ok(json!({"ok": true})));
    }

    #[tokio::test]
    async fn a_notification_is_one_json_rpc_line() {
        let (tx, mut rx) = mpsc::channel(8);
        let peer = Peer::new(tx);
        peer.notify("x/said", json!({"a": [true], "b": 1})).await;
        peer.notify_now("x/now", json!({}));
        assert_eq!(
            rx.recv().await.unwrap(),
            r#"{"jsonrpc":"2.0","method":"x/said","params":{"a":[true],"b":1}}"#
        );
        assert_eq!(
            rx.recv().await.unwrap(),
            r#"{"jsonrpc":"2.0","method":"x/now","params":{}}"#
        );
    }

    #[tokio::test]
    async fn outbound_request_times_out() {
        let (tx, _rx) = mpsc::channel(8);
        let peer = Peer::new(tx);
        let answer = peer
            .request("x/ask", json!({}), Duration::from_millis(1))
            .await;
        assert!(answer.unwrap_err().message.contains("did not answer"));
        assert!(peer.lock_pending().is_empty());
    }
}
