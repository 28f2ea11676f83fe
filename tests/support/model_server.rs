//! A loopback model server: real HTTP/1.1 on `127.0.0.1:0` serving
//! `POST /v1/chat/completions` (OpenAI-compatible) and `POST /v1/messages` (Anthropic) from one
//! script of replies consumed in order, and `GET /v1/models` from a reply of its own.
//!
//! Replies stream OpenAI-style SSE chunks or Anthropic-style named events (each optionally
//! delayed) or HTTP errors. The server records every request body and its headers, counts streams that finished and
//! streams the client hung up on (that is how cancellation tests see the model stopped), and
//! answers 500 with a clear body once the script is exhausted. Use [`ModelServer::start`] from
//! async tests, [`ModelServer::start_blocking`] from plain `#[test]`s (it brings its own runtime
//! thread). Dropping the server stops it.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

/// One scripted answer.
#[derive(Debug, Clone)]
pub enum Reply {
    /// Streamed as `data: {...}\n\n` per chunk, then `data: [DONE]`.
    Sse(Vec<Chunk>),
    /// An HTTP error with this body.
    Status(u16, String),
    /// Any status with extra headers (e.g. `Retry-After`) and a body.
    Http {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// Anthropic Messages events, each `event: <type>` then its JSON as `data:`.
    Events(Vec<Chunk>),
    /// Raw body pieces sent as they are (each after its delay), for framing tests.
    Raw(Vec<(u64, Vec<u8>)>),
    /// Never answers; waits until the client gives up.
    Hang,
}

/// One SSE chunk, sent after `delay_ms`.
#[derive(Debug, Clone)]
pub struct Chunk {
    pub delay_ms: u64,
    pub json: Value,
}

impl Chunk {
    /// The same chunk, sent `ms` milliseconds after the previous one.
    pub fn delayed(mut self, ms: u64) -> Chunk {
        self.delay_ms = ms;
        self
    }
}

fn delta(delta: Value) -> Chunk {
    Chunk {
        delay_ms: 0,
        json: json!({
            "id": "chatcmpl-loopback", "object": "chat.completion.chunk", "model": "loopback",
            "choices": [{"index": 0, "delta": delta, "finish_reason": null}],
        }),
    }
}

/// A text delta.
pub fn text(s: &str) -> Chunk {
    delta(json!({"content": s}))
}

/// A reasoning (thinking) delta.
pub fn reasoning(s: &str) -> Chunk {
    delta(json!({"reasoning": s}))
}

/// The first piece of a tool call: its id and name.
pub fn tool_call_start(index: usize, id: &str, name: &str) -> Chunk {
    delta(json!({"tool_calls": [{
        "index": index, "id": id, "type": "function",
        "function": {"name": name, "arguments": ""},
    }]}))
}

/// A piece of a tool call's JSON arguments.
pub fn tool_call_args(index: usize, piece: &str) -> Chunk {
    delta(json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))
}

/// The finish reason (`stop`, `tool_calls`, `length`, `content_filter`).
pub fn finish(reason: &str) -> Chunk {
    Chunk {
        delay_ms: 0,
        json: json!({
            "id": "chatcmpl-loopback", "object": "chat.completion.chunk", "model": "loopback",
            "choices": [{"index": 0, "delta": {}, "finish_reason": reason}],
        }),
    }
}

/// The usage chunk OpenAI sends last with `stream_options.include_usage`.
pub fn usage(input_tokens: u64, output_tokens: u64) -> Chunk {
    Chunk {
        delay_ms: 0,
        json: json!({
            "id": "chatcmpl-loopback", "object": "chat.completion.chunk", "model": "loopback",
            "choices": [],
            "usage": {"prompt_tokens": input_tokens, "completion_tokens": output_tokens,
                      "total_tokens": input_tokens + output_tokens},
        }),
    }
}

/// A whole text answer: the text, then `finish("stop")`.
pub fn text_reply(s: &str) -> Reply {
    Reply::Sse(vec![text(s), finish("stop")])
}

/// A whole tool-call answer: one call with its arguments in one piece, then `tool_calls`.
pub fn tool_reply(id: &str, name: &str, arguments: &Value) -> Reply {
    Reply::Sse(vec![
        tool_call_start(0, id, name),
        tool_call_args(0, &arguments.to_string()),
        finish("tool_calls"),
    ])
}

#[derive(Default)]
struct State {
    script: VecDeque<Reply>,
    requests: Vec<Value>,
    authorizations: Vec<Option<String>>,
    headers: Vec<Vec<(String, String)>>,
    models: Option<Reply>,
    model_lists: usize,
    completed: usize,
    aborted: usize,
}

/// The running server; dropping it stops it.
pub struct ModelServer {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    stop: CancellationToken,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ModelServer {
    /// Starts on the current Tokio runtime.
    pub async fn start(script: Vec<Reply>) -> ModelServer {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        let state = Arc::new(Mutex::new(State {
            script: script.into(),
            ..State::default()
        }));
        let stop = CancellationToken::new();
        let addr = listener.local_addr().expect("local addr");
        tokio::spawn(accept_loop(listener, state.clone(), stop.clone()));
        ModelServer {
            addr,
            state,
            stop,
            thread: None,
        }
    }

    /// Starts on a runtime thread of its own, for synchronous tests.
    pub fn start_blocking(script: Vec<Reply>) -> ModelServer {
        let (tx, rx) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(async move {
                let server = ModelServer::start(script).await;
                let stop = server.stop.clone();
                tx.send(server).expect("hand over the server");
                stop.cancelled().await;
            });
        });
        let mut server = rx.recv().expect("model server thread started");
        server.thread = Some(thread);
        server
    }

    /// `http://127.0.0.1:PORT/v1`, for `base_url`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The JSON bodies received so far, in order.
    pub fn requests(&self) -> Vec<Value> {
        self.lock().requests.clone()
    }

    /// The `Authorization` header of each request, in order.
    pub fn authorizations(&self) -> Vec<Option<String>> {
        self.lock().authorizations.clone()
    }

    /// The value of header `name` (lower case) of the n-th request.
    pub fn header(&self, n: usize, name: &str) -> Option<String> {
        let s = self.lock();
        let headers = s.headers.get(n)?;
        headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    }

    /// Answers every `GET /v1/models` with `reply` (404 until set).
    pub fn set_models(&self, reply: Reply) {
        self.lock().models = Some(reply);
    }

    /// How many times `GET /v1/models` was asked.
    pub fn model_lists(&self) -> usize {
        self.lock().model_lists
    }

    /// Appends a reply to the script.
    pub fn push(&self, reply: Reply) {
        self.lock().script.push_back(reply);
    }

    /// Streams sent to the end.
    pub fn completed(&self) -> usize {
        self.lock().completed
    }

    /// Streams the client hung up on before they were fully sent.
    pub fn aborted(&self) -> usize {
        self.lock().aborted
    }

    /// Waits (up to 30 s, a deadlock guard) until `n` streams were aborted; returns whether
    /// they were. For async tests use [`ModelServer::wait_aborted_async`].
    pub fn wait_aborted(&self, n: usize) -> bool {
        for _ in 0..3000 {
            if self.aborted() >= n {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    }

    /// [`ModelServer::wait_aborted`] without blocking the runtime.
    pub async fn wait_aborted_async(&self, n: usize) -> bool {
        for _ in 0..3000 {
            if self.aborted() >= n {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        false
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        self.stop.cancel();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn accept_loop(listener: TcpListener, state: Arc<Mutex<State>>, stop: CancellationToken) {
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            accepted = listener.accept() => {
                let Ok((socket, _)) = accepted else { continue };
                // Small SSE frames must not wait for Nagle + delayed ACK (~40 ms each).
                let _ = socket.set_nodelay(true);
                let (state, stop) = (state.clone(), stop.clone());
                tokio::spawn(async move {
                    tokio::select! {
                        _ = stop.cancelled() => {}
                        _ = serve_connection(socket, state) => {}
                    }
                });
            }
        }
    }
}

/// One parsed request.
struct Request {
    path: String,
    authorization: Option<String>,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

/// Serves requests on one keep-alive connection until the client closes it.
async fn serve_connection(mut socket: TcpStream, state: Arc<Mutex<State>>) {
    let mut buffer = Vec::new();
    while let Some(request) = read_request(&mut socket, &mut buffer).await {
        let reply = take_reply(&state, &request);
        let outcome = respond(&mut socket, reply).await;
        let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
        match outcome {
            Outcome::Completed => s.completed += 1,
            Outcome::Aborted => {
                s.aborted += 1;
                return;
            }
            Outcome::Answered => {}
        }
    }
}

fn take_reply(state: &Mutex<State>, request: &Request) -> Reply {
    let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
    if request.path == "/v1/models" {
        s.model_lists += 1;
        return s
            .models
            .clone()
            .unwrap_or_else(|| Reply::Status(404, "loopback model server: no model list".into()));
    }
    if request.path != "/v1/chat/completions" && request.path != "/v1/messages" {
        return Reply::Status(
            404,
            format!("loopback model server: no route {}", request.path),
        );
    }
    let body = serde_json::from_slice(&request.body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&request.body).into_owned()));
    s.requests.push(body);
    s.authorizations.push(request.authorization.clone());
    s.headers.push(request.headers.clone());
    let n = s.requests.len();
    s.script.pop_front().unwrap_or_else(|| {
        Reply::Status(
            500,
            format!("loopback model server: script exhausted (request #{n} has no scripted reply)"),
        )
    })
}

/// Reads one request (head and `Content-Length` body); `None` at end of connection.
async fn read_request(socket: &mut TcpStream, buffer: &mut Vec<u8>) -> Option<Request> {
    let head_end = loop {
        if let Some(pos) = find(buffer, b"\r\n\r\n") {
            break pos + 4;
        }
        read_some(socket, buffer).await?;
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let path = lines.next()?.split(' ').nth(1)?.to_owned();
    let header = |name: &str| {
        head.split("\r\n").skip(1).find_map(|line| {
            let (k, v) = line.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_owned())
        })
    };
    let length: usize = header("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let authorization = header("authorization");
    let headers = head
        .split("\r\n")
        .skip(1)
        .filter_map(|line| {
            let (k, v) = line.split_once(':')?;
            Some((k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        })
        .collect();
    while buffer.len() < head_end + length {
        read_some(socket, buffer).await?;
    }
    let body = buffer[head_end..head_end + length].to_vec();
    buffer.drain(..head_end + length);
    Some(Request {
        path,
        authorization,
        headers,
        body,
    })
}

async fn read_some(socket: &mut TcpStream, buffer: &mut Vec<u8>) -> Option<()> {
    let mut piece = [0u8; 16 * 1024];
    match socket.read(&mut piece).await {
        Ok(0) | Err(_) => None,
        Ok(n) => {
            buffer.extend_from_slice(&piece[..n]);
            Some(())
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

enum Outcome {
    Answered,
    Completed,
    Aborted,
}

async fn respond(socket: &mut TcpStream, reply: Reply) -> Outcome {
    match reply {
        Reply::Status(code, body) => answered(send_status(socket, code, &[], &body).await),
        Reply::Http {
            status,
            headers,
            body,
        } => answered(send_status(socket, status, &headers, &body).await),
        Reply::Sse(chunks) => {
            let mut pieces: Vec<(u64, Vec<u8>)> = chunks
                .into_iter()
                .map(|c| (c.delay_ms, format!("data: {}\n\n", c.json).into_bytes()))
                .collect();
            pieces.push((0, b"data: [DONE]\n\n".to_vec()));
            stream(socket, pieces).await
        }
        Reply::Events(events) => {
            let pieces = events
                .into_iter()
                .map(|c| {
                    let kind = c.json["type"].as_str().unwrap_or("message").to_owned();
                    let frame = format!("event: {kind}\ndata: {}\n\n", c.json);
                    (c.delay_ms, frame.into_bytes())
                })
                .collect();
            stream(socket, pieces).await
        }
        Reply::Raw(pieces) => stream(socket, pieces).await,
        Reply::Hang => {
            let mut byte = [0u8; 1];
            let _ = socket.read(&mut byte).await;
            Outcome::Aborted
        }
    }
}

fn answered(sent: std::io::Result<()>) -> Outcome {
    match sent {
        Ok(()) => Outcome::Answered,
        Err(_) => Outcome::Aborted,
    }
}

async fn send_status(
    socket: &mut TcpStream,
    code: u16,
    headers: &[(String, String)],
    body: &str,
) -> std::io::Result<()> {
    let extra: String = headers
        .iter()
        .map(|(k, v)| format!("{k}: {v}\r\n"))
        .collect();
    let head = format!(
        "HTTP/1.1 {code} Scripted\r\ncontent-type: application/json\r\n{extra}content-length: {}\r\n\r\n",
        body.len()
    );
    socket.write_all(head.as_bytes()).await?;
    socket.write_all(body.as_bytes()).await
}

/// Sends `pieces` as a chunked SSE body, watching for the client hanging up in between.
async fn stream(socket: &mut TcpStream, pieces: Vec<(u64, Vec<u8>)>) -> Outcome {
    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n\
                transfer-encoding: chunked\r\n\r\n";
    if socket.write_all(head.as_bytes()).await.is_err() {
        return Outcome::Aborted;
    }
    for (delay_ms, piece) in pieces {
        if delay_ms > 0 && hung_up_within(socket, delay_ms).await {
            return Outcome::Aborted;
        }
        let frame = [format!("{:x}\r\n", piece.len()).as_bytes(), &piece, b"\r\n"].concat();
        if socket.write_all(&frame).await.is_err() {
            return Outcome::Aborted;
        }
    }
    match socket.write_all(b"0\r\n\r\n").await {
        Ok(()) => Outcome::Completed,
        Err(_) => Outcome::Aborted,
    }
}

/// Waits `ms`, returning early with `true` if the client closed the connection.
async fn hung_up_within(socket: &mut TcpStream, ms: u64) -> bool {
    let mut byte = [0u8; 1];
    tokio::select! {
        _ = tokio::time::sleep(Duration::from_millis(ms)) => false,
        read = socket.read(&mut byte) => matches!(read, Ok(0) | Err(_)),
    }
}
