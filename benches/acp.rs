//! Benchmarks of `zeroclaw acp` (run: `cargo bench --bench acp`), each printed next to a
//! baseline measured in the same run:
//! - cold start: spawn to the `initialize` response (median of 25), vs spawning `/bin/true`;
//! - one turn round trip over 500 turns, vs the same requests sent straight to the model server,
//!   once with the OpenAI-compatible provider and once with the Anthropic one (each against
//!   the loopback server replaying its API's stream);
//! - `session/load` of the OpenAI-compatible 500-turn session in a fresh process (full replay);
//! - added latency per streamed chunk, model server to client, over 1,000 chunks, vs a direct
//!   SSE reader of the same server.
//!
//! Goals (reported, not asserted): cold start ≤ 5 ms, turn ratio ≤ 10×, the Anthropic turn
//! ratio ≤ 1.5×, load ≤ 50 ms.

#[path = "../tests/support/anthropic_stream.rs"]
mod anthropic_stream;
#[allow(dead_code)]
mod common;
#[allow(dead_code)]
#[path = "../tests/support/model_server.rs"]
mod model_server;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{Acp, CHUNKS, PacedSse, median, ms};
use model_server::{ModelServer, Reply};
use serde_json::{Value, json};

const COLD_RUNS: usize = 25;
const TURNS: usize = 500;
const LOAD_RUNS: usize = 5;

fn main() {
    let config = tempfile::tempdir().expect("config dir");
    let work = tempfile::tempdir().expect("workspace");
    println!(
        "zeroclaw acp benchmarks ({})",
        common::binary().to_string_lossy()
    );
    cold_start(config.path());
    let session = turns_and_load(config.path(), work.path());
    println!("  (session {session})");
    let anthropic_config = tempfile::tempdir().expect("config dir");
    turns(anthropic_config.path(), work.path(), Api::Anthropic);
    chunk_latency(work.path());
}

/// The model API a turn benchmark goes through.
#[derive(Clone, Copy, PartialEq)]
enum Api {
    OpenAi,
    Anthropic,
}

impl Api {
    fn name(self) -> &'static str {
        match self {
            Api::OpenAi => "OpenAI-compatible",
            Api::Anthropic => "Anthropic",
        }
    }

    /// The provider settings on top of [`Acp::spawn`]'s.
    fn env(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Api::OpenAi => &[],
            Api::Anthropic => &[
                ("ZEROCLAW_providers__local__kind", "anthropic"),
                ("ZEROCLAW_agents__coder__model", "claude-bench"),
            ],
        }
    }

    fn reply(self, text: &str) -> Reply {
        match self {
            Api::OpenAi => model_server::text_reply(text),
            Api::Anthropic => anthropic_stream::text_reply(text),
        }
    }

    /// The request path under the base URL.
    fn path(self) -> &'static str {
        match self {
            Api::OpenAi => "chat/completions",
            Api::Anthropic => "messages",
        }
    }

    /// A one-message request of this API.
    fn bare(self, text: String) -> Value {
        let messages = match self {
            Api::OpenAi => json!([{"role": "user", "content": text}]),
            Api::Anthropic => {
                json!([{"role": "user", "content": [{"type": "text", "text": text}]}])
            }
        };
        json!({"model": "m", "max_tokens": 1024, "stream": true, "messages": messages})
    }
}

fn cold_start(config_dir: &Path) {
    // One warm-up run creates the store and pulls the binary into the page cache.
    Acp::spawn(config_dir, "http://127.0.0.1:9/v1", &[]).finish();
    let mut zeroclaw = Vec::new();
    let mut baseline = Vec::new();
    let mut version = Vec::new();
    for _ in 0..COLD_RUNS {
        let start = Instant::now();
        let mut acp = Acp::spawn(config_dir, "http://127.0.0.1:9/v1", &[]);
        acp.call("initialize", json!({"protocolVersion": 1}));
        zeroclaw.push(start.elapsed());
        acp.finish();

        let start = Instant::now();
        Command::new("/bin/true").status().expect("/bin/true");
        baseline.push(start.elapsed());

        let start = Instant::now();
        Command::new(common::binary())
            .arg("--version")
            .stdout(Stdio::null())
            .status()
            .expect("zeroclaw --version");
        version.push(start.elapsed());
    }
    let (z, b) = (median(&mut zeroclaw), median(&mut baseline));
    println!(
        "cold start (spawn -> initialize response), median of {COLD_RUNS}: {:.2} ms \
         | baseline spawn+exit of /bin/true: {:.2} ms | ratio {:.1}x \
         | (zeroclaw --version: {:.2} ms) | goal <= 5 ms",
        ms(z),
        ms(b),
        z.as_secs_f64() / b.as_secs_f64(),
        ms(median(&mut version))
    );
}

/// 500 one-turn round trips through zeroclaw vs the identical requests (same bodies, same
/// scripted replies) sent straight to the model server, then `session/load` of the resulting
/// session in fresh processes.
fn turns_and_load(config_dir: &Path, work: &Path) -> String {
    let (session, model) = turns(config_dir, work, Api::OpenAi);
    let mut loads = Vec::new();
    let mut replayed = 0usize;
    for _ in 0..LOAD_RUNS {
        let mut fresh = Acp::spawn(config_dir, &model.base_url(), &[]);
        fresh.call("initialize", json!({"protocolVersion": 1}));
        let start = Instant::now();
        let id = fresh.send("session/load", json!({"sessionId": session}));
        replayed = 0;
        fresh.response(id, |_| replayed += 1);
        loads.push(start.elapsed());
        fresh.finish();
    }
    println!(
        "session/load of the {TURNS}-turn session in a fresh process, median of {LOAD_RUNS}: {:.2} ms \
         ({replayed} updates replayed) | goal <= 50 ms",
        ms(median(&mut loads))
    );
    session
}

/// [`TURNS`] one-turn round trips through zeroclaw with `api`'s provider vs the identical
/// requests sent straight to the loopback server; returns the session and the server.
fn turns(config_dir: &Path, work: &Path, api: Api) -> (String, ModelServer) {
    let reply = "The quick brown fox jumps over the lazy dog.";
    let script = (0..3 * TURNS).map(|_| api.reply(reply)).collect();
    let model = ModelServer::start_blocking(script);

    let mut acp = Acp::spawn(config_dir, &model.base_url(), api.env());
    acp.call("initialize", json!({"protocolVersion": 1}));
    let created = acp.call("session/new", json!({"cwd": work, "mcpServers": []}));
    let session = created["sessionId"].as_str().unwrap().to_string();
    let mut turns = Vec::new();
    for n in 0..TURNS {
        let params = json!({"sessionId": session, "prompt": [{"type": "text", "text": format!("turn {n}")}]});
        let start = Instant::now();
        let result = acp.call("session/prompt", params);
        turns.push(start.elapsed());
        assert_eq!(result["stopReason"], "end_turn");
    }
    acp.finish();

    let mut direct = Vec::new();
    let mut bare = Vec::new();
    let mut http = DirectHttp::connect(&model.base_url(), api.path());
    for (n, body) in model.requests().iter().enumerate() {
        let start = Instant::now();
        http.post_sse(body);
        direct.push(start.elapsed());
        let single = api.bare(format!("turn {n}"));
        let start = Instant::now();
        http.post_sse(&single);
        bare.push(start.elapsed());
    }
    let (mut first, mut last) = (turns[..50].to_vec(), turns[TURNS - 50..].to_vec());
    let (z, d, b) = (median(&mut turns), median(&mut direct), median(&mut bare));
    let goal = match api {
        Api::OpenAi => "10x",
        Api::Anthropic => "1.5x",
    };
    println!(
        "turn round trip, {} provider, median of {TURNS}: {:.3} ms | model server alone, same \
         requests: {:.3} ms | ratio {:.2}x (overhead {:.3} ms per turn) | goal <= {goal} \
         (turns 1-50: {:.3} ms, 451-500: {:.3} ms; history grows to {} messages)",
        api.name(),
        ms(z),
        ms(d),
        z.as_secs_f64() / d.as_secs_f64(),
        ms(z.saturating_sub(d)),
        ms(median(&mut first)),
        ms(median(&mut last)),
        2 * TURNS - 1
    );
    println!(
        "  vs a one-message request (no history) to the model server: {:.3} ms | ratio {:.1}x",
        ms(b),
        z.as_secs_f64() / b.as_secs_f64()
    );
    (session, model)
}

/// A keep-alive HTTP/1.1 client for the loopback model server (chunked SSE responses).
struct DirectHttp {
    stream: TcpStream,
    path: String,
    host: String,
}

impl DirectHttp {
    fn connect(base_url: &str, path: &str) -> DirectHttp {
        let rest = base_url.strip_prefix("http://").unwrap();
        let (host, prefix) = rest.split_once('/').unwrap();
        let stream = TcpStream::connect(host).expect("connect model server");
        stream.set_nodelay(true).unwrap();
        DirectHttp {
            stream,
            path: format!("/{prefix}/{path}"),
            host: host.to_string(),
        }
    }

    /// Posts `body` and reads the whole SSE response (up to the final empty chunk).
    fn post_sse(&mut self, body: &Value) {
        let body = serde_json::to_vec(body).unwrap();
        let head = format!(
            "POST {} HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\n\
             authorization: Bearer bench\r\nx-api-key: bench\r\ncontent-length: {}\r\n\r\n",
            self.path,
            self.host,
            body.len()
        );
        self.stream.write_all(head.as_bytes()).unwrap();
        self.stream.write_all(&body).unwrap();
        let mut received = Vec::new();
        let mut piece = [0u8; 16 * 1024];
        while !received.ends_with(b"0\r\n\r\n") {
            let n = self.stream.read(&mut piece).expect("read model server");
            assert!(n > 0, "model server closed the connection");
            received.extend_from_slice(&piece[..n]);
        }
    }
}

/// Added latency per chunk: a paced SSE server stamps each chunk's send time; zeroclaw's
/// `agent_message_chunk` arrival is compared with it, and so is a direct SSE reader's.
fn chunk_latency(work: &Path) {
    let epoch = Instant::now();
    let direct = {
        let server = PacedSse::start(epoch);
        let mut stream = TcpStream::connect(&server.addr).unwrap();
        stream
            .write_all(b"POST /v1/chat/completions HTTP/1.1\r\ncontent-length: 2\r\n\r\n{}")
            .unwrap();
        let mut arrivals = vec![Duration::ZERO; CHUNKS];
        let reader = BufReader::new(stream);
        for line in reader.lines() {
            let line = line.unwrap();
            if let Some(i) = line
                .strip_prefix("data: ")
                .and_then(|d| serde_json::from_str::<Value>(d).ok())
                .and_then(|v| chunk_index(&v["choices"][0]["delta"]["content"]))
            {
                arrivals[i] = epoch.elapsed();
            }
        }
        latencies(&server.finish(), &arrivals)
    };

    let config = tempfile::tempdir().unwrap();
    let server = PacedSse::start(epoch);
    let mut acp = Acp::spawn(config.path(), &server.base_url(), &[]);
    acp.call("initialize", json!({"protocolVersion": 1}));
    let created = acp.call("session/new", json!({"cwd": work, "mcpServers": []}));
    let session = created["sessionId"].as_str().unwrap().to_string();
    let id = acp.send(
        "session/prompt",
        json!({"sessionId": session, "prompt": "stream"}),
    );
    let mut arrivals = vec![Duration::ZERO; CHUNKS];
    acp.response(id, |m| {
        let text = &m["params"]["update"]["content"]["text"];
        for piece in text.as_str().unwrap_or_default().split(',') {
            if let Ok(i) = piece.trim().parse::<usize>() {
                arrivals[i.min(CHUNKS - 1)] = epoch.elapsed();
            }
        }
    });
    acp.finish();
    let through = latencies(&server.finish(), &arrivals);
    let (mut d, mut z) = (direct, through);
    let (dm, zm) = (median(&mut d), median(&mut z));
    let p99 = z[z.len() * 99 / 100];
    println!(
        "streamed chunk latency over {CHUNKS} chunks: via zeroclaw median {:.1} us (p99 {:.1} us) \
         | direct SSE reader {:.1} us | added per chunk {:.1} us",
        dm_us(zm),
        dm_us(p99),
        dm_us(dm),
        dm_us(zm.saturating_sub(dm))
    );
}

fn dm_us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn chunk_index(content: &Value) -> Option<usize> {
    content.as_str()?.trim_end_matches(',').parse().ok()
}

fn latencies(sent: &[Duration], arrived: &[Duration]) -> Vec<Duration> {
    sent.iter()
        .zip(arrived)
        .map(|(s, a)| a.saturating_sub(*s))
        .collect()
}
