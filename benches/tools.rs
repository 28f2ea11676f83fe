//! Tool-call overhead through the whole path (run: `cargo bench --bench tools`): a
//! `zeroclaw acp` turn whose model step calls `file_read` on a small file, and one calling
//! `shell` with `true`, each confined by the sandbox, against doing the same directly in this
//! process (`std::fs::read`; spawning `/bin/true`) in the same run. To isolate the tool part,
//! the same turn shape with `todo_write` (a tool that runs no child) and a turn with no tool
//! call are measured too. Medians; ratios printed, nothing asserted. `ZEROCLAW_BIN` measures
//! another build of `zeroclaw` (e.g. an older commit's) with this bench's code.

#[allow(dead_code)]
mod common;
#[allow(dead_code)]
#[path = "../tests/support/model_server.rs"]
mod model_server;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{Acp, median, ms};
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
    let mut acp = spawn_full(config.path(), &model.base_url());
    acp.call("initialize", json!({"protocolVersion": 1}));
    println!(
        "tool-call overhead ({}), medians of {RUNS}",
        common::binary().to_string_lossy()
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

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64().max(1e-9)
}

/// `zeroclaw acp` with autonomy `full` (no prompts).
fn spawn_full(config_dir: &Path, base_url: &str) -> Acp {
    std::fs::write(
        config_dir.join("config.toml"),
        "[autonomy]\nlevel = \"full\"\n",
    )
    .expect("config.toml");
    Acp::spawn(config_dir, base_url, &[("ZEROCLAW_acp__max_sessions", "8")])
}

/// Session and turn helpers of this bench.
trait ToolTurns {
    fn new_session(&mut self, cwd: &Path) -> String;
    fn turn(&mut self, model: &ModelServer, session: &str, kind: &Kind) -> Duration;
}

impl ToolTurns for Acp {
    fn new_session(&mut self, cwd: &Path) -> String {
        let created = self.call("session/new", json!({"cwd": cwd, "mcpServers": []}));
        created["sessionId"]
            .as_str()
            .expect("sessionId")
            .to_string()
    }

    /// One timed turn; panics unless a scripted tool call completed.
    fn turn(&mut self, model: &ModelServer, session: &str, kind: &Kind) -> Duration {
        let call_id = format!("bench-{}", self.next_id());
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
}

/// The model's replies for one turn of this kind.
fn script(kind: &Kind, call_id: &str) -> Vec<Reply> {
    match kind {
        Kind::NoTool => vec![text_reply("done")],
        Kind::Tool(name, args) => vec![tool_reply(call_id, name, args), text_reply("done")],
    }
}
