//! Benchmarks of `zeroclaw daemon` (run: `cargo bench --bench daemon`), each printed next to a
//! baseline measured in the same run:
//! - added latency per streamed chunk (1,000 paced chunks) over WebSocket vs over stdio;
//! - connections per second (upgrade + `initialize` + close) over TCP and the Unix socket, vs
//!   spawning `zeroclaw acp` + `initialize` per client;
//! - daemon RSS idle and with 100 open sessions (100 connections), vs an idle `zeroclaw acp`.

// The support modules' own `#[cfg(test)]` unit tests do not run under a harness-less bench.
#[allow(dead_code)]
mod common;
#[allow(unused_imports)]
#[path = "../tests/support/mod.rs"]
mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Stdio};
use std::time::{Duration, Instant};

use common::{CHUNKS, PacedSse};
use serde_json::{Value, json};
use support::acp_client::{memory_kib, model_env};
use support::ws_conn::{Endpoint, TokenAt, Upgrade};
use support::ws_daemon::{Daemon, zeroclaw};
use tokio_tungstenite::tungstenite::{self, Message, WebSocket};

const CONNECTS: usize = 300;
const SPAWNS: usize = 30;
const SESSIONS: usize = 100;

fn main() {
    println!(
        "zeroclaw daemon benchmarks ({})",
        env!("CARGO_BIN_EXE_zeroclaw")
    );
    let work = tempfile::tempdir().expect("workspace");
    chunk_latency(work.path());
    connections_per_second();
    resident_memory(work.path());
}

// --- one JSON-RPC peer over either transport, driven from this thread ---

trait Peer {
    fn send(&mut self, msg: &Value);
    fn next(&mut self) -> Value;

    /// Sends a request and returns its response; `each` sees every message before it.
    fn call_with(
        &mut self,
        id: u64,
        method: &str,
        params: Value,
        mut each: impl FnMut(&Value),
    ) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let msg = self.next();
            if msg["id"] == id && msg.get("method").is_none() {
                return msg;
            }
            each(&msg);
        }
    }

    fn call(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.call_with(id, method, params, |_| {})
    }
}

struct StdioPeer {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl StdioPeer {
    fn spawn(config: &Path, base_url: &str) -> StdioPeer {
        let mut child = zeroclaw(config)
            .arg("acp")
            .envs(model_env(base_url))
            .current_dir(config)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn zeroclaw acp");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        StdioPeer {
            child,
            stdin,
            stdout,
        }
    }
}

impl Peer for StdioPeer {
    fn send(&mut self, msg: &Value) {
        writeln!(self.stdin, "{msg}").unwrap();
        self.stdin.flush().unwrap();
    }
    fn next(&mut self) -> Value {
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        serde_json::from_str(&line).expect("stdout line is JSON")
    }
}

impl Drop for StdioPeer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Ws<S: Read + Write>(WebSocket<S>);

impl<S: Read + Write> Peer for Ws<S> {
    fn send(&mut self, msg: &Value) {
        self.0.send(Message::text(msg.to_string())).unwrap();
    }
    fn next(&mut self) -> Value {
        loop {
            if let Message::Text(t) = self.0.read().expect("frame") {
                return serde_json::from_str(t.as_str()).expect("frame is JSON");
            }
        }
    }
}

fn ws_tcp(daemon: &Daemon) -> Ws<TcpStream> {
    let upgrade = Upgrade::new(Endpoint::Tcp(daemon.tcp())).token(TokenAt::Header, daemon.token());
    let stream = TcpStream::connect(daemon.tcp()).unwrap();
    stream.set_nodelay(true).unwrap();
    let (ws, _) = tungstenite::client(upgrade.request(), stream).expect("upgrade");
    Ws(ws)
}

fn ws_unix(daemon: &Daemon) -> Ws<UnixStream> {
    let upgrade = Upgrade::new(Endpoint::Unix(daemon.unix().into()));
    let stream = UnixStream::connect(daemon.unix()).unwrap();
    let (ws, _) = tungstenite::client(upgrade.request(), stream).expect("upgrade");
    Ws(ws)
}

fn initialize(peer: &mut impl Peer) {
    let r = peer.call(
        1,
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    );
    assert_eq!(r["result"]["protocolVersion"], 1, "{r}");
}

fn new_session(peer: &mut impl Peer, work: &Path) -> String {
    let r = peer.call(2, "session/new", json!({"cwd": work, "mcpServers": []}));
    r["result"]["sessionId"]
        .as_str()
        .expect("sessionId")
        .to_string()
}

// --- per-chunk latency ---

fn chunk_latency(work: &Path) {
    let epoch = Instant::now();
    let config = tempfile::tempdir().unwrap();
    let server = PacedSse::start(epoch);
    let mut stdio = StdioPeer::spawn(config.path(), &server.base_url());
    let stdio_lat = stream_turn(&mut stdio, work, server, epoch);
    drop(stdio);

    let server = PacedSse::start(epoch);
    let daemon = Daemon::builder().model(server.base_url()).spawn();
    let tcp_lat = stream_turn(&mut ws_tcp(&daemon), work, server, epoch);
    drop(daemon);

    let server = PacedSse::start(epoch);
    let daemon = Daemon::builder().model(server.base_url()).spawn();
    let unix_lat = stream_turn(&mut ws_unix(&daemon), work, server, epoch);

    let s = percentiles(stdio_lat);
    println!(
        "chunk latency over {CHUNKS} chunks (model server -> client), baseline stdio: median {:.1} us p99 {:.1} us",
        us(s.0),
        us(s.1)
    );
    for (name, lat) in [("WebSocket/TCP", tcp_lat), ("WebSocket/Unix", unix_lat)] {
        let w = percentiles(lat);
        println!(
            "  {name}: median {:.1} us p99 {:.1} us | ratio to stdio {:.2}x",
            us(w.0),
            us(w.1),
            w.0.as_secs_f64() / s.0.as_secs_f64().max(1e-9)
        );
    }
}

/// Runs one paced turn; returns each chunk's delay from send by the model to arrival here.
fn stream_turn(
    peer: &mut impl Peer,
    work: &Path,
    server: PacedSse,
    epoch: Instant,
) -> Vec<Duration> {
    initialize(peer);
    let session = new_session(peer, work);
    let mut arrivals = vec![Duration::ZERO; CHUNKS];
    let params = json!({"sessionId": session, "prompt": "stream"});
    let resp = peer.call_with(3, "session/prompt", params, |m| {
        let text = m["params"]["update"]["content"]["text"]
            .as_str()
            .unwrap_or_default();
        for piece in text.split(',') {
            if let Ok(i) = piece.trim().parse::<usize>() {
                arrivals[i.min(CHUNKS - 1)] = epoch.elapsed();
            }
        }
    });
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");
    let sent = server.finish();
    sent.iter()
        .zip(&arrivals)
        .map(|(s, a)| a.saturating_sub(*s))
        .collect()
}

fn percentiles(mut v: Vec<Duration>) -> (Duration, Duration) {
    v.sort();
    (v[v.len() / 2], v[v.len() * 99 / 100])
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

// --- connections per second ---

fn connections_per_second() {
    let daemon = Daemon::builder().model("http://127.0.0.1:9/v1").spawn();
    let tcp = rate(CONNECTS, || {
        let mut ws = ws_tcp(&daemon);
        initialize(&mut ws);
        let _ = ws.0.close(None);
    });
    let unix = rate(CONNECTS, || {
        let mut ws = ws_unix(&daemon);
        initialize(&mut ws);
        let _ = ws.0.close(None);
    });
    let config = tempfile::tempdir().unwrap();
    let spawned = rate(SPAWNS, || {
        let mut acp = StdioPeer::spawn(config.path(), "http://127.0.0.1:9/v1");
        initialize(&mut acp);
    });
    println!(
        "connections per second (upgrade + initialize + close, {CONNECTS} sequential): TCP {tcp:.0}/s, \
         Unix {unix:.0}/s | baseline: spawn zeroclaw acp + initialize {spawned:.0}/s | ratio TCP/spawn {:.1}x",
        tcp / spawned
    );
}

fn rate(n: usize, mut once: impl FnMut()) -> f64 {
    let start = Instant::now();
    for _ in 0..n {
        once();
    }
    n as f64 / start.elapsed().as_secs_f64()
}

// --- resident memory ---

fn resident_memory(work: &Path) {
    let config = tempfile::tempdir().unwrap();
    let mut acp = StdioPeer::spawn(config.path(), "http://127.0.0.1:9/v1");
    initialize(&mut acp);
    let acp_rss = rss(acp.child.id());

    let daemon = Daemon::builder()
        .model("http://127.0.0.1:9/v1")
        .env("ZEROCLAW_acp__max_sessions", (SESSIONS + 10).to_string())
        .spawn();
    let mut probe = ws_unix(&daemon);
    initialize(&mut probe);
    let idle = rss(daemon.pid());
    let mut open = Vec::with_capacity(SESSIONS);
    for _ in 0..SESSIONS {
        let mut ws = ws_unix(&daemon);
        initialize(&mut ws);
        new_session(&mut ws, work);
        open.push(ws);
    }
    let busy = rss(daemon.pid());
    println!(
        "daemon RSS: idle {idle} KiB, with {SESSIONS} open sessions on {SESSIONS} connections {busy} KiB \
         (+{:.1} KiB per session) | baseline: idle zeroclaw acp {acp_rss} KiB",
        busy.saturating_sub(idle) as f64 / SESSIONS as f64
    );
}

fn rss(pid: u32) -> u64 {
    memory_kib(pid).map(|(_, rss)| rss).expect("VmRSS")
}
