//! What the benchmarks share: a `zeroclaw acp` process driven line by line, a paced SSE model
//! server for per-chunk latency, and the median/millisecond helpers. Included by each bench
//! with `mod common;` (`benches/common/` is not a bench target of its own).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Text deltas a [`PacedSse`] server streams.
pub const CHUNKS: usize = 1_000;
/// The pause before each of them.
pub const CHUNK_GAP: Duration = Duration::from_micros(500);

pub fn median(samples: &mut [Duration]) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// A `zeroclaw acp` process (provider `local` at `base_url`, agent `coder`) driven line by
/// line from this thread.
pub struct Acp {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

/// The `zeroclaw` binary measured: this build's, or `ZEROCLAW_BIN` (to measure another
/// build, e.g. an older commit's, with the same bench code).
pub fn binary() -> std::ffi::OsString {
    std::env::var_os("ZEROCLAW_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_zeroclaw").into())
}

impl Acp {
    /// Spawns it with `config_dir` as config directory and cwd, plus `env` overrides.
    pub fn spawn(config_dir: &Path, base_url: &str, env: &[(&str, &str)]) -> Acp {
        let mut child = Command::new(binary())
            .arg("acp")
            .env("ZEROCLAW_CONFIG_DIR", config_dir)
            .env("ZEROCLAW_providers__local__kind", "openai")
            .env("ZEROCLAW_providers__local__base_url", base_url)
            .env("ZEROCLAW_providers__local__api_key", "bench")
            .env("ZEROCLAW_agents__coder__provider", "local")
            .env("ZEROCLAW_agents__coder__model", "m")
            .envs(env.iter().copied())
            .env_remove("ZEROCLAW_LOG")
            // zeroclaw reads ZEROCLAW_* variables as configuration, and has no `bin` key.
            .env_remove("ZEROCLAW_BIN")
            .current_dir(config_dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn zeroclaw acp");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        Acp {
            child,
            stdin,
            stdout,
            next_id: 1,
        }
    }

    /// The id the next request will carry.
    pub fn next_id(&self) -> u64 {
        self.next_id
    }

    pub fn send(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let mut line = serde_json::to_vec(&msg).expect("serialize");
        line.push(b'\n');
        self.stdin.write_all(&line).expect("write request");
        self.stdin.flush().expect("flush");
        id
    }

    /// Reads until the response to `id`; calls `on_update` for every notification before it.
    pub fn response(&mut self, id: u64, mut on_update: impl FnMut(&Value)) -> Value {
        loop {
            let mut line = String::new();
            let n = self.stdout.read_line(&mut line).expect("read stdout");
            assert!(n > 0, "zeroclaw acp closed stdout");
            let msg: Value = serde_json::from_str(&line).expect("JSON line");
            if msg.get("method").is_some() {
                on_update(&msg);
            } else if msg["id"] == id {
                assert!(msg.get("error").is_none(), "request failed: {msg}");
                return msg["result"].clone();
            }
        }
    }

    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.send(method, params);
        self.response(id, |_| {})
    }

    pub fn finish(mut self) {
        drop(self.stdin);
        let _ = self.child.wait();
    }
}

/// A one-shot SSE server sending [`CHUNKS`] text deltas `"<i>,"`, [`CHUNK_GAP`] apart,
/// recording each send time as an offset from the shared epoch.
pub struct PacedSse {
    pub addr: String,
    thread: std::thread::JoinHandle<Vec<Duration>>,
}

impl PacedSse {
    pub fn start(epoch: Instant) -> PacedSse {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let thread = std::thread::spawn(move || {
            let (mut socket, _) = listener.accept().unwrap();
            socket.set_nodelay(true).unwrap();
            read_request(&mut socket);
            let head =
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
            socket.write_all(head.as_bytes()).unwrap();
            let mut sent = Vec::with_capacity(CHUNKS);
            for i in 0..CHUNKS {
                std::thread::sleep(CHUNK_GAP);
                let delta = json!({"content": format!("{i},")});
                let chunk =
                    json!({"choices": [{"index": 0, "delta": delta, "finish_reason": null}]});
                socket
                    .write_all(format!("data: {chunk}\n\n").as_bytes())
                    .unwrap();
                sent.push(epoch.elapsed());
            }
            let done = json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]});
            let _ = socket.write_all(format!("data: {done}\n\ndata: [DONE]\n\n").as_bytes());
            sent
        });
        PacedSse { addr, thread }
    }

    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn finish(self) -> Vec<Duration> {
        self.thread.join().expect("paced SSE server")
    }
}

/// Reads an HTTP request head and its `content-length` body.
pub fn read_request(socket: &mut TcpStream) {
    let mut data = Vec::new();
    let mut piece = [0u8; 8192];
    while let Ok(n) = socket.read(&mut piece) {
        if n == 0 {
            return;
        }
        data.extend_from_slice(&piece[..n]);
        let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&data[..end]).to_lowercase();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        if data.len() >= end + 4 + length {
            return;
        }
    }
}
