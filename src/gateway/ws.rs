//! `GET /acp`: a browser `Origin` check on TCP (403), authentication before the upgrade (401;
//! a token in the URL is refused, saying where it goes), the connection limit (503), then
//! one JSON-RPC message per WebSocket text frame (binary frames accepted when UTF-8) served by
//! the same [`rpc::serve`] loop as stdio. Frames over `max_frame_bytes` get a JSON-RPC error;
//! the daemon pings every half `idle_timeout_secs` and drops a peer silent for the whole of it.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ws::{
    Message, WebSocket, WebSocketUpgrade, rejection::WebSocketUpgradeRejection,
};
use axum::extract::{ConnectInfo, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::stream::{SplitSink, SplitStream};
use futures::{SinkExt, Stream, StreamExt};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::auth::{self, PeerInfo, SUBPROTOCOL};
use super::{ConnectionSlot, Gateway};
use crate::acp::Connection;
use crate::rpc::codec::FrameError;
use crate::rpc::{self, Peer};

/// Outgoing messages waiting for the socket writer; senders wait when it is full.
const OUTGOING_QUEUE: usize = 1024;

pub async fn acp(
    State(gateway): State<Arc<Gateway>>,
    ConnectInfo(peer): ConnectInfo<PeerInfo>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Response {
    let policy = gateway.policy();
    if let Err(origin) = super::origin::check(&peer, &headers, &policy.allowed_origins) {
        tracing::info!(?peer, %origin, "connection refused: Origin not in [gateway] allowed_origins");
        refused(&peer, "origin not allowed", Some(origin.clone())).await;
        let body = format!(
            "origin {origin} is not allowed: list it in [gateway] allowed_origins to let its pages connect\n"
        );
        return (StatusCode::FORBIDDEN, body).into_response();
    }
    if let Some(body) = auth::url_token_refusal(query.contains_key("token"), &peer) {
        tracing::info!(?peer, "connection refused: token in the URL");
        refused(&peer, "token in the URL", None).await;
        return unauthorized(body);
    }
    let Some(principal) = auth::admit(&peer, &headers, &policy, &gateway.tokens) else {
        tracing::info!(?peer, "connection refused: not authenticated");
        let presented = matches!(peer, PeerInfo::Tcp { .. }) && auth::presents_token(&headers);
        let reason = if presented {
            "invalid or revoked token"
        } else {
            "no credentials admitted this peer"
        };
        refused(&peer, reason, None).await;
        let body = match peer {
            PeerInfo::Unix {
                cred: Some((uid, _)),
            } => format!(
                "unauthorized: uid {uid} is not admitted on this socket (add it to [gateway] allowed_uids)\n"
            ),
            _ => "unauthorized\n".to_owned(),
        };
        return unauthorized(body);
    };
    let upgrade = match upgrade {
        Ok(upgrade) => upgrade,
        Err(rejection) => return rejection.into_response(),
    };
    if gateway.closing.is_cancelled() {
        return (StatusCode::SERVICE_UNAVAILABLE, "draining\n").into_response();
    }
    let Some(slot) = gateway.claim_connection() else {
        tracing::warn!(?peer, "connection refused: max_connections reached");
        return (StatusCode::SERVICE_UNAVAILABLE, "too many connections\n").into_response();
    };
    let agent = query
        .get("agent")
        .map(|a| a.trim())
        .filter(|a| !a.is_empty())
        .map(str::to_owned);
    let limit = gateway.max_frame_bytes;
    // The socket accepts somewhat more than the limit so an oversize frame is answered.
    let socket_limit = limit.saturating_mul(2).max(limit.saturating_add(1 << 20));
    tracing::info!(?peer, %principal, "connection admitted");
    // Selects `zeroclaw.acp.v1` when offered, in any position; nothing else is ever selected,
    // so a `bearer.<token>` entry is never echoed. A browser offering only that entry fails the
    // handshake on its side (no offered protocol selected): say so in the log.
    let upgrade = upgrade.protocols([SUBPROTOCOL]);
    if upgrade.selected_protocol().is_none() && upgrade.requested_protocols().next().is_some() {
        tracing::info!(
            "subprotocols offered without {SUBPROTOCOL}: none selected (a browser will drop the connection; offer {SUBPROTOCOL} too)"
        );
    }
    let affinity = super::affinity::response_headers(&gateway.server, &headers).await;
    let mut response = upgrade
        .max_message_size(socket_limit)
        .max_frame_size(socket_limit)
        .on_upgrade(move |socket| serve_socket(gateway, socket, principal, agent, slot));
    response.headers_mut().extend(affinity);
    response
}

/// Records the refusal (`auth.failure`) and counts it.
async fn refused(peer: &PeerInfo, reason: &str, origin: Option<String>) {
    let event = crate::audit::Event::new("auth.failure")
        .with("peer", format!("{peer:?}"))
        .with("reason", reason)
        .with("origin", origin);
    crate::audit::note(event).await;
    crate::metrics::get().auth_failure();
}

fn unauthorized(body: String) -> Response {
    let mut response = (StatusCode::UNAUTHORIZED, body).into_response();
    response
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    response
}

async fn serve_socket(
    gateway: Arc<Gateway>,
    socket: WebSocket,
    principal: String,
    agent: Option<String>,
    _slot: ConnectionSlot,
) {
    let (sink, stream) = socket.split();
    let (tx, rx) = mpsc::channel(OUTGOING_QUEUE);
    let writer = tokio::spawn(write_frames(sink, rx, gateway.idle_timeout / 2));
    let incoming = read_frames(
        stream,
        gateway.max_frame_bytes,
        gateway.idle_timeout,
        gateway.closing.clone(),
    );
    let connection = Arc::new(Connection::new(
        gateway.server.clone(),
        Some(principal),
        agent,
    ));
    rpc::serve(Box::pin(incoming), Peer::new(tx), connection).await;
    let _ = writer.await;
}

struct Reader {
    stream: SplitStream<WebSocket>,
    max: usize,
    idle_timeout: Duration,
    closing: CancellationToken,
}

/// The text of each data frame, until the peer closes, goes silent, errs, or the daemon stops.
fn read_frames(
    stream: SplitStream<WebSocket>,
    max: usize,
    idle_timeout: Duration,
    closing: CancellationToken,
) -> impl Stream<Item = Result<String, FrameError>> + Send {
    let reader = Reader {
        stream,
        max,
        idle_timeout,
        closing,
    };
    futures::stream::unfold(reader, |mut reader| async move {
        let frame = reader.next_frame().await?;
        Some((frame, reader))
    })
}

impl Reader {
    async fn next_frame(&mut self) -> Option<Result<String, FrameError>> {
        loop {
            let received = tokio::select! {
                biased;
                () = self.closing.cancelled() => return None,
                received = tokio::time::timeout(self.idle_timeout, self.stream.next()) => received,
            };
            let message = match received {
                Err(_) => {
                    tracing::info!("closing a connection silent past idle_timeout_secs");
                    return None;
                }
                Ok(None) => return None,
                Ok(Some(Err(error))) => {
                    tracing::info!(%error, "connection ended by a WebSocket error");
                    return None;
                }
                Ok(Some(Ok(message))) => message,
            };
            let text = match message {
                Message::Text(text) => Ok(text.as_str().to_owned()),
                Message::Binary(bytes) => {
                    String::from_utf8(bytes.to_vec()).map_err(|_| FrameError::InvalidUtf8)
                }
                Message::Ping(_) | Message::Pong(_) => continue,
                Message::Close(_) => return None,
            };
            return Some(text.and_then(|t| self.within_limit(t)));
        }
    }

    fn within_limit(&self, text: String) -> Result<String, FrameError> {
        if text.len() > self.max {
            return Err(FrameError::TooLong {
                len: text.len(),
                max: self.max,
            });
        }
        Ok(text)
    }
}

/// Writes queued messages (flushing once per burst) and a ping every `ping_every`; sends a close
/// frame once every sender is gone.
async fn write_frames(
    mut sink: SplitSink<WebSocket, Message>,
    mut rx: mpsc::Receiver<String>,
    ping_every: Duration,
) {
    let mut ping = tokio::time::interval(ping_every.max(Duration::from_millis(100)));
    ping.tick().await;
    loop {
        let sent = tokio::select! {
            line = rx.recv() => match line {
                Some(line) => write_burst(&mut sink, line, &mut rx).await,
                None => break,
            },
            _ = ping.tick() => sink.send(Message::Ping(Default::default())).await,
        };
        if let Err(error) = sent {
            tracing::info!(%error, "writing to the client failed; dropping output");
            return;
        }
    }
    let _ = sink.send(Message::Close(None)).await;
}

async fn write_burst(
    sink: &mut SplitSink<WebSocket, Message>,
    first: String,
    rx: &mut mpsc::Receiver<String>,
) -> Result<(), axum::Error> {
    sink.feed(Message::Text(first.into())).await?;
    while let Ok(line) = rx.try_recv() {
        sink.feed(Message::Text(line.into())).await?;
    }
    sink.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acp::Server;
    use crate::config::Config;
    use tokio_tungstenite::tungstenite::{self, Message as Frame};

    const INITIALIZE: &str =
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}"#;

    /// A gateway on a loopback port: no auth on loopback, 256-byte frames, one connection.
    async fn gateway() -> (std::net::SocketAddr, tempfile::TempDir) {
        let (addr, dir, _) = gateway_with_idle(120).await;
        (addr, dir)
    }

    async fn gateway_with_idle(
        idle_timeout_secs: u64,
    ) -> (std::net::SocketAddr, tempfile::TempDir, Arc<Gateway>) {
        let dir = tempfile::tempdir().unwrap();
        let mut config = Config::load_with_env(dir.path(), Vec::new()).unwrap();
        config.gateway.require_auth = false;
        config.gateway.max_frame_bytes = 256;
        config.gateway.max_connections = 1;
        config.gateway.idle_timeout_secs = idle_timeout_secs;
        let gateway_config = config.gateway.clone();
        let server = Server::with_store(config, None);
        let gateway = Arc::new(Gateway::new(server, &gateway_config, "none".into()));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let listener = auth::NoDelayTcpListener(listener);
        let app = super::super::daemon::router(&gateway)
            .into_make_service_with_connect_info::<PeerInfo>();
        tokio::spawn(async move { axum::serve(listener, app).await });
        (addr, dir, gateway)
    }

    async fn answer<S>(ws: &mut tokio_tungstenite::WebSocketStream<S>) -> serde_json::Value
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    {
        loop {
            match ws.next().await.unwrap().unwrap() {
                Frame::Text(text) => return serde_json::from_str(text.as_str()).unwrap(),
                Frame::Ping(_) | Frame::Pong(_) => continue,
                other => panic!("unexpected frame {other:?}"),
            }
        }
    }

    #[tokio::test]
    async fn binary_bad_and_oversize_frames_get_json_rpc_answers_and_the_limit_holds() {
        let (addr, _dir) = gateway().await;
        let url = format!("ws://{addr}/acp");
        let (mut ws, _) = tokio_tungstenite::connect_async(url.as_str())
            .await
            .unwrap();

        ws.send(Frame::Binary(INITIALIZE.as_bytes().to_vec().into()))
            .await
            .unwrap();
        assert_eq!(answer(&mut ws).await["result"]["protocolVersion"], 1);

        ws.send(Frame::Binary(vec![0xff, 0xfe].into()))
            .await
            .unwrap();
        assert_eq!(answer(&mut ws).await["error"]["code"], -32700);

        ws.send(Frame::Text("x".repeat(300).into())).await.unwrap();
        let oversize = answer(&mut ws).await;
        assert_eq!(oversize["error"]["code"], -32600, "{oversize}");
        assert_eq!(oversize["error"]["data"]["reason"], "line_too_long");

        ws.send(Frame::Text("{not json".into())).await.unwrap();
        assert_eq!(answer(&mut ws).await["error"]["code"], -32700);

        match tokio_tungstenite::connect_async(url.as_str()).await {
            Err(tungstenite::Error::Http(response)) => assert_eq!(response.status(), 503),
            other => panic!("a second connection past max_connections: {other:?}"),
        }

        ws.send(Frame::Text(INITIALIZE.replace("1,", "2,").into()))
            .await
            .unwrap();
        assert_eq!(
            answer(&mut ws).await["id"],
            2,
            "the connection survived it all"
        );
    }

    #[tokio::test]
    async fn a_peer_that_never_answers_pings_is_dropped_after_the_idle_timeout() {
        let (addr, _dir, gateway) = gateway_with_idle(1).await;
        let url = format!("ws://{addr}/acp");
        // Never read: tungstenite answers pings only while reading, so no pong goes back.
        let (ws, _) = tokio_tungstenite::connect_async(url.as_str())
            .await
            .unwrap();
        assert_eq!(gateway.open_connections(), 1);
        let dropped = async {
            while gateway.open_connections() > 0 {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        };
        // A hang guard, not a timing claim: the daemon drops it after about a second.
        tokio::time::timeout(Duration::from_secs(60), dropped)
            .await
            .expect("the silent connection was never dropped");
        drop(ws);
    }
}
