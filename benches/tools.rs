//! Tool-call overhead through the whole path (run: `cargo bench --bench tools`): a
//! `zeroclaw acp` turn whose model step calls `file_read` on a small file, and one calling
//! `shell` with `true` (in a plain directory, and in a git repository, whose `.git` each call
//! stages), each confined by the sandbox, against doing the same directly in this process
//! (`std::fs::read`; spawning `/bin/true`) in the same run. To isolate the tool part,
//! the same turn shape with `todo_write` (a tool that runs no child) and a turn with no tool
//! call are measured too. Medians; ratios printed, nothing asserted. `ZEROCLAW_BIN` measures
//! another build of `zeroclaw` (e.g. an older commit's) with this bench's code.

#[allow(dead_code)]
mod common;
#[allow(dead_code)]
#[path = "../tests/support/model_server.rs"]
mod model_server;
#[path = "common/turns.rs"]
mod turns;

use std::process::Command;
use std::time::{Duration, Instant};

use common::{median, ms};
use model_server::ModelServer;
use serde_json::json;
use turns::{Kind, spawn_full};

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
    let repo = tempfile::tempdir().expect("repository");
    let git = |args: &[&str]| {
        let status = Command::new("git")
            .arg("-C")
            .arg(repo.path())
            .args(["-c", "user.name=bench", "-c", "user.email=bench@localhost"])
            .args(args)
            .status()
            .expect("git");
        assert!(status.success(), "git {args:?}");
    };
    std::fs::write(repo.path().join("README"), "a repository\n").expect("README");
    git(&["init", "-q"]);
    git(&["add", "README"]);
    git(&["commit", "-q", "-m", "first"]);
    let model = ModelServer::start_blocking(Vec::new());
    let mut acp = spawn_full(config.path(), &model.base_url(), 8);
    println!(
        "tool-call overhead ({}), medians of {RUNS}",
        common::binary().to_string_lossy()
    );

    let kinds = [
        Kind::NoTool,
        Kind::Tool("todo_write", json!({"todos": []})),
        Kind::Tool("file_read", json!({"path": SMALL_FILE})),
        Kind::Tool("shell", json!({"command": "true"})),
        Kind::Tool("shell", json!({"command": "true"})),
    ];
    // The last kind runs in the repository.
    let sessions: Vec<String> = (0..kinds.len())
        .map(|k| {
            let cwd = if k == kinds.len() - 1 {
                repo.path()
            } else {
                work.path()
            };
            acp.new_session(cwd)
        })
        .collect();
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
    let [none, todo, file_read, shell, in_repo] = [0, 1, 2, 3, 4].map(|k| median(&mut samples[k]));
    report("file_read", file_read, read, "std::fs::read", none, todo);
    report(
        "shell `true`",
        shell,
        spawn,
        "spawning /bin/true",
        none,
        todo,
    );
    report(
        "shell `true` in a git repository",
        in_repo,
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
