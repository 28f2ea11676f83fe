//! Tool-call overhead through the whole path (run: `cargo bench --bench tools`): a
//! `zeroclaw acp` turn whose model step calls `file_read` on a small file, and one calling
//! `shell` with `true`, each confined by the sandbox, against doing the same directly in this
//! process (`std::fs::read`; spawning `/bin/true`) in the same run. To isolate the tool part,
//! the same turn shape with `todo_write` (a tool that runs no child) and a turn with no tool
//! call are measured too. Medians; ratios printed, nothing asserted.

#[allow(dead_code)]
#[path = "../tests/support/model_server.rs"]
mod model_server;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use model_server::{ModelServer, Reply, text_reply, tool_reply};
use serde_json::{Value, json};

const RUNS: usize = 100;
const WARMUP: usize = 5;
const SMALL_FILE: &str = "small.txt";

fn main() {
    let config = tempfile::tempdir().expect("config dir");
    let work = tempfile::tempdir().expect("workspace");
    std::fs::write(
        work.path().join(SMALL_FILE),
        "hello from a small file\n".repeat(8),
    )
    .expect("small file");
    let model = ModelServer::start_blocking(Vec::new());
    let mut acp = Acp::spawn(config.path(), &model.base_url());
    acp.call("initialize", json!({"protocolVersion": 1}));
    println!(
        "tool-call overhead ({}), medians of {RUNS}",
        env!("CARGO_BIN_EXE_zeroclaw")
    );

    let kinds = [
        Kind::NoTool,
        Kind::Tool("todo_write", json!({"todos": []})),
        Kind::Tool("file_read", json!({"path": SMALL_FILE})),
        Kind::Tool("shell", json!({"command": "true"})),
    ];
    let sessions: Vec<String> = kinds.iter().map(|_| acp.new_session(work.path())).collect();
    let mut samples = vec![Vec::new(); kinds.len()];
    for n in 0..WARMUP + RUNS {
        // Interleaved, so every kind sees the same machine load and history length.
        for (k, kind) in kinds.iter().enumerate() {
            let took = acp.turn(&model, &sessions[k], kind);
            if n >= WARMUP {
                samples[k].push(took);
            }
        }
    }
    acp.finish();

    let read = direct(|| {
        std::fs::read(work.path().join(SMALL_FILE)).expect("read");
    });
    let spawn = direct(|| {
        let status = Command::new("/bin/true").status().expect("spawn /bin/true");
        assert!(status.success());
    });
    let [none, todo, file_read, shell] = [0, 1, 2, 3].map(|k| median(&mut samples[k]));
    report("file_read", file_read, read, "std::fs::read", none, todo);
    report(
        "shell `true`",
        shell,
        spawn,
        "spawning /bin/true",
        none,
        todo,
    );
    println!(
        "  baselines: turn without a tool call {:.3} ms | turn calling todo_write (no child) {:.3} ms",
        ms(none),
        ms(todo)
    );
}

/// What the model does in the measured turn.
enum Kind {
    NoTool,
    Tool(&'static str, Value),
}

fn report(what: &str, turn: Duration, direct: Duration, how: &str, none: Duration, todo: Duration) {
    let tool_part = turn.saturating_sub(todo);
    println!(
        "{what}: turn {:.3} ms | {how} {:.4} ms | ratio {:.0}x | vs turn without tool {:.1}x \
         | tool part (turn - todo_write turn) {:.3} ms = {:.0}x direct",
        ms(turn),
        ms(direct),
        ratio(turn, direct),
        ratio(turn, none),
        ms(tool_part),
        ratio(tool_part, direct)
    );
}

/// Median of `RUNS` direct executions (after a warm-up).
fn direct(mut f: impl FnMut()) -> Duration {
    let mut samples = Vec::new();
    for n in 0..WARMUP + RUNS {
        let start = Instant::now();
        f();
        if n >= WARMUP {
            samples.push(start.elapsed());
        }
    }
    median(&mut samples)
}

fn median(samples: &mut [Duration]) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64().max(1e-9)
}

/// A `zeroclaw acp` process (autonomy `full`: no prompts) driven line by line.
struct Acp {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Acp {
    fn spawn(config_dir: &Path, base_url: &str) -> Acp {
        std::fs::write(
            config_dir.join("config.toml"),
            "[autonomy]\nlevel = \"full\"\n",
        )
        .expect("config.toml");
        let mut child = Command::new(env!("CARGO_BIN_EXE_zeroclaw"))
            .arg("acp")
            .env("ZEROCLAW_CONFIG_DIR", config_dir)
            .env("ZEROCLAW_providers__local__kind", "openai")
            .env("ZEROCLAW_providers__local__base_url", base_url)
            .env("ZEROCLAW_providers__local__api_key", "bench")
            .env("ZEROCLAW_agents__coder__provider", "local")
            .env("ZEROCLAW_agents__coder__model", "m")
            .env("ZEROCLAW_acp__max_sessions", "8")
            .env_remove("ZEROCLAW_LOG")
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

    fn new_session(&mut self, cwd: &Path) -> String {
        let created = self.call("session/new", json!({"cwd": cwd, "mcpServers": []}));
        created["sessionId"]
            .as_str()
            .expect("sessionId")
            .to_string()
    }

    /// One timed turn; panics unless a scripted tool call completed.
    fn turn(&mut self, model: &ModelServer, session: &str, kind: &Kind) -> Duration {
        let call_id = format!("bench-{}", self.next_id);
        for reply in script(kind, &call_id) {
            model.push(reply);
        }
        let params = json!({"sessionId": session, "prompt": [{"type": "text", "text": "go"}]});
        let start = Instant::now();
        let id = self.send("session/prompt", params);
        let mut statuses = Vec::new();
        let result = self.response(id, |m| {
            if let Some(s) = m["params"]["update"]["status"].as_str() {
                statuses.push(s.to_string());
            }
        });
        let took = start.elapsed();
        assert_eq!(result["stopReason"], "end_turn", "{result}");
        if let Kind::Tool(name, _) = kind {
            let last = statuses.last().map(String::as_str);
            assert_eq!(last, Some("completed"), "{name} ran: {statuses:?}");
        }
        took
    }

    fn send(&mut self, method: &str, params: Value) -> u64 {
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
    fn response(&mut self, id: u64, mut on_update: impl FnMut(&Value)) -> Value {
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

    fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.send(method, params);
        self.response(id, |_| {})
    }

    fn finish(mut self) {
        drop(self.stdin);
        let _ = self.child.wait();
    }
}

/// The model's replies for one turn of this kind.
fn script(kind: &Kind, call_id: &str) -> Vec<Reply> {
    match kind {
        Kind::NoTool => vec![text_reply("done")],
        Kind::Tool(name, args) => vec![tool_reply(call_id, name, args), text_reply("done")],
    }
}
