//! The WebSocket side of the test ACP client: opens `GET /acp` on a daemon over TCP or its Unix
//! socket (with `tokio-tungstenite` on a private runtime thread), turns each outgoing NDJSON
//! line into one text frame (binary when not UTF-8), and feeds each incoming frame to the same
//! checking inbox as stdout lines. Also raw upgrade attempts for the authentication tests.
#![allow(dead_code)]

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;

use futures::{SinkExt, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::{Request, Response};

use super::acp_inbox::{Shared, handle_line};

/// The subprotocol the daemon echoes when offered.
pub const ACP_SUBPROTOCOL: &str = "zeroclaw.acp.v1";

/// Where a WebSocket connects.
#[derive(Clone, Debug)]
pub enum Endpoint {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

/// How a client presents its bearer token.
#[derive(Clone, Debug, PartialEq)]
pub enum TokenAt {
    Header,
    Subprotocol,
    Query,
}

/// A `GET /acp` upgrade request: query parameters, token placement, extra headers.
#[derive(Clone, Debug)]
pub struct Upgrade {
    pub endpoint: Endpoint,
    pub token: Option<(TokenAt, String)>,
    pub query: Vec<(String, String)>,
    pub protocols: Vec<String>,
}

impl Upgrade {
    pub fn new(endpoint: Endpoint) -> Upgrade {
        Upgrade {
            endpoint,
            token: None,
            query: Vec::new(),
            protocols: Vec::new(),
        }
    }

    pub fn token(mut self, at: TokenAt, token: &str) -> Upgrade {
        self.token = Some((at, token.to_string()));
        self
    }

    pub fn query(mut self, key: &str, value: &str) -> Upgrade {
        self.query.push((key.into(), value.into()));
        self
    }

    pub fn protocol(mut self, p: &str) -> Upgrade {
        self.protocols.push(p.into());
        self
    }

    /// The client request (host `localhost`).
    pub fn request(&self) -> Request<()> {
        let mut query = self.query.clone();
        let mut protocols = self.protocols.clone();
        let mut bearer = None;
        match &self.token {
            Some((TokenAt::Query, t)) => query.push(("token".into(), t.clone())),
            Some((TokenAt::Subprotocol, t)) => {
                // As a browser would: the ACP subprotocol (the one echoed) plus the bearer entry.
                if !protocols.iter().any(|p| p == ACP_SUBPROTOCOL) {
                    protocols.push(ACP_SUBPROTOCOL.into());
                }
                protocols.push(format!("bearer.{t}"));
            }
            Some((TokenAt::Header, t)) => bearer = Some(format!("Bearer {t}")),
            None => {}
        }
        let qs: Vec<String> = query.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let url = match qs.is_empty() {
            true => "ws://localhost/acp".to_string(),
            false => format!("ws://localhost/acp?{}", qs.join("&")),
        };
        let mut req = url.into_client_request().expect("request");
        let headers = req.headers_mut();
        if let Some(b) = bearer {
            headers.insert("authorization", b.parse().expect("header"));
        }
        if !protocols.is_empty() {
            let value = protocols.join(", ").parse().expect("header");
            headers.insert("sec-websocket-protocol", value);
        }
        req
    }
}

/// An open test connection: frames go out through `sink`, come in through the inbox.
pub struct Link {
    pub sink: FrameSink,
    pub thread: JoinHandle<()>,
    pub response: Response<Option<Vec<u8>>>,
}

/// Performs the upgrade on a fresh runtime thread; on success the thread keeps pumping frames
/// between `shared` and the socket until either side closes. Err carries the HTTP response of a
/// refused upgrade (or a transport error as text).
pub fn open(upgrade: &Upgrade, shared: Arc<Shared>) -> Result<Link, String> {
    let (tx, rx) = mpsc::unbounded_channel::<Message>();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let upgrade = upgrade.clone();
    let thread = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(run(upgrade, shared, rx, ready_tx));
    });
    match ready_rx.recv() {
        Ok(Ok(response)) => Ok(Link {
            sink: FrameSink::new(tx),
            thread,
            response,
        }),
        Ok(Err(e)) => {
            let _ = thread.join();
            Err(e)
        }
        Err(_) => Err("connection thread died".into()),
    }
}

type Ready = std::sync::mpsc::Sender<Result<Response<Option<Vec<u8>>>, String>>;

async fn run(
    upgrade: Upgrade,
    shared: Arc<Shared>,
    rx: mpsc::UnboundedReceiver<Message>,
    ready: Ready,
) {
    let request = upgrade.request();
    match &upgrade.endpoint {
        Endpoint::Tcp(addr) => match tokio::net::TcpStream::connect(addr).await {
            Ok(s) => pump(request, s, Arc::clone(&shared), rx, ready).await,
            Err(e) => drop(ready.send(Err(format!("connect {addr}: {e}")))),
        },
        Endpoint::Unix(path) => match tokio::net::UnixStream::connect(path).await {
            Ok(s) => pump(request, s, Arc::clone(&shared), rx, ready).await,
            Err(e) => drop(ready.send(Err(format!("connect {}: {e}", path.display())))),
        },
    }
    shared.lock().eof = true;
    shared.changed.notify_all();
}

async fn pump<S>(
    request: Request<()>,
    stream: S,
    shared: Arc<Shared>,
    mut rx: mpsc::UnboundedReceiver<Message>,
    ready: Ready,
) where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let ws = match tokio_tungstenite::client_async(request, stream).await {
        Ok((ws, response)) => {
            let _ = ready.send(Ok(response));
            ws
        }
        Err(e) => {
            let _ = ready.send(Err(describe(e)));
            return;
        }
    };
    let (mut write, mut read) = ws.split();
    let mut sending = true;
    loop {
        tokio::select! {
            out = rx.recv(), if sending => match out {
                Some(msg) => if write.send(msg).await.is_err() { sending = false },
                None => {
                    sending = false;
                    let _ = write.send(Message::Close(None)).await;
                }
            },
            incoming = read.next() => match incoming {
                Some(Ok(Message::Text(t))) => handle_line(&shared, t.as_bytes()),
                Some(Ok(Message::Binary(b))) => handle_line(&shared, &b),
                Some(Ok(_)) => {}
                Some(Err(_)) | None => break,
            },
        }
    }
}

/// A refused upgrade as `HTTP <status>`, anything else as its text.
fn describe(e: tokio_tungstenite::tungstenite::Error) -> String {
    match e {
        tokio_tungstenite::tungstenite::Error::Http(resp) => {
            format!("HTTP {}", resp.status().as_u16())
        }
        other => other.to_string(),
    }
}

/// Attempts an upgrade and closes right away: Ok(the 101 response) or Err(`HTTP 401` ...).
pub fn try_upgrade(upgrade: &Upgrade) -> Result<Response<Option<Vec<u8>>>, String> {
    let shared = Arc::new(Shared::new(None));
    let link = open(upgrade, shared)?;
    let Link {
        sink,
        thread,
        response,
    } = link;
    drop(sink);
    let _ = thread.join();
    Ok(response)
}

/// `std::io::Write` over the connection: every complete non-blank line is one frame.
pub struct FrameSink {
    tx: Option<mpsc::UnboundedSender<Message>>,
    partial: Vec<u8>,
}

impl FrameSink {
    fn new(tx: mpsc::UnboundedSender<Message>) -> FrameSink {
        FrameSink {
            tx: Some(tx),
            partial: Vec::new(),
        }
    }

    fn send_line(&self, line: &[u8]) -> std::io::Result<()> {
        if line.iter().all(u8::is_ascii_whitespace) {
            return Ok(());
        }
        let msg = match std::str::from_utf8(line) {
            Ok(text) => Message::text(text.to_string()),
            Err(_) => Message::binary(line.to_vec()),
        };
        let tx = self.tx.as_ref().ok_or(std::io::ErrorKind::BrokenPipe)?;
        tx.send(msg)
            .map_err(|_| std::io::ErrorKind::BrokenPipe.into())
    }
}

impl Write for FrameSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.partial.extend_from_slice(buf);
        while let Some(end) = self.partial.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.partial.drain(..=end).collect();
            self.send_line(&line[..end])?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A plain HTTP/1.1 `GET` (an upgrade request when `upgrade` is set) over any stream; returns
/// the raw response head and body as text. The status line is what a refusal is judged by.
pub fn raw_get(
    mut stream: impl std::io::Read + Write,
    target: &str,
    headers: &[(&str, &str)],
    upgrade: bool,
) -> String {
    let mut req = format!("GET {target} HTTP/1.1\r\nHost: localhost\r\n");
    if upgrade {
        req.push_str("Upgrade: websocket\r\nConnection: Upgrade\r\n");
        req.push_str(
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n",
        );
    } else {
        req.push_str("Connection: close\r\n");
    }
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    stream.write_all(req.as_bytes()).expect("send request");
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    // Read until the peer closes, or until a complete head (plus any body for a refusal) came.
    while let Ok(n) = stream.read(&mut chunk) {
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
        if head_complete(&buf) {
            break;
        }
    }
    String::from_utf8_lossy(&buf).into_owned()
}

/// Whether the buffer holds a whole response head and the `Content-Length` body after it.
fn head_complete(buf: &[u8]) -> bool {
    let text = String::from_utf8_lossy(buf);
    let Some((head, body)) = text.split_once("\r\n\r\n") else {
        return false;
    };
    let length = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    head.starts_with("HTTP/1.1 101") || body.len() >= length
}

/// The status code of a raw response.
pub fn status_of(raw: &str) -> u16 {
    raw.split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP response: {raw:?}"))
}
