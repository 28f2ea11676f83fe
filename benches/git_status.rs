//! `git status` in a 20,000-file repository (run: `cargo bench --bench git_status`): bare, as
//! `zeroclaw sandbox run -- git status`, and, where `bwrap` is installed, as a plain
//! `bwrap --ro-bind / / --bind REPO REPO --unshare-all -- git status` line, taking turns, and
//! through the shell tool of a `zeroclaw acp` session in the repository (the turn minus a
//! `todo_write` turn: what a daemon user waits for);
//! medians and ratios against the bare run of the same run, nothing asserted.
//!
//! The repository is generated once under the target directory (`CARGO_TARGET_TMPDIR`) and
//! reused by later runs. `ZEROCLAW_BIN` measures another build of `zeroclaw` with this code,
//! `GIT_STATUS_RUNS` sets the count; without `git` the bench says so and skips.

#[allow(dead_code)]
mod common;
#[allow(dead_code)]
#[path = "../tests/support/model_server.rs"]
mod model_server;
#[allow(dead_code)]
#[path = "common/turns.rs"]
mod turns;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{median, ms};

const FILES: usize = 20_000;
const PER_DIR: usize = 100;

fn main() {
    if !runs_ok(Command::new("git").arg("--version")) {
        println!("git status bench skipped: no `git` on PATH");
        return;
    }
    let repo = repository();
    let runs: usize = std::env::var("GIT_STATUS_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(15);
    // Apart from the workspace: `sandbox run` refuses a workspace inside its config dir.
    let config = tempfile::tempdir().expect("config dir");
    let bwrap = runs_ok(Command::new("bwrap").arg("--version"));

    let bare = || {
        let mut command = Command::new("git");
        command.arg("status").current_dir(&repo);
        command
    };
    let confined = || {
        let mut command = Command::new(common::binary());
        command
            .env("ZEROCLAW_CONFIG_DIR", config.path())
            // zeroclaw reads ZEROCLAW_* variables as configuration, and has no `bin` key.
            .env_remove("ZEROCLAW_BIN")
            .args(["sandbox", "run", "--workspace"])
            .arg(&repo)
            .args(["--", "git", "status"])
            .current_dir(&repo);
        command
    };
    let plain_bwrap = || {
        let mut command = Command::new("bwrap");
        command
            .args(["--ro-bind", "/", "/", "--dev", "/dev", "--bind"])
            .arg(&repo)
            .arg(&repo)
            .args(["--unshare-all", "--die-with-parent", "--chdir"])
            .arg(&repo)
            .args(["--", "git", "status"]);
        command
    };

    // One warm-up each: the index refreshed once, the binaries and the tree in the page cache.
    let mut lines = vec![
        Line::new("git status (bare)", bare),
        Line::new("zeroclaw sandbox run -- git status", confined),
    ];
    if bwrap {
        lines.push(Line::new("bwrap --unshare-all -- git status", plain_bwrap));
    }
    for line in &lines {
        assert!(runs_ok(&mut (line.command)()), "{} failed", line.what);
    }
    for _ in 0..runs {
        // Taking turns, so every line sees the same machine load.
        for line in &mut lines {
            let started = Instant::now();
            assert!(runs_ok(&mut (line.command)()), "{} failed", line.what);
            line.samples.push(started.elapsed());
        }
    }

    println!(
        "git status in a {FILES}-file repository ({}), medians of {runs}",
        common::binary().to_string_lossy()
    );
    let base = median(&mut lines[0].samples);
    for line in &mut lines {
        let m = median(&mut line.samples);
        println!(
            "{:<36} {:>8.2} ms  ratio {:>5.2}x",
            line.what,
            ms(m),
            m.as_secs_f64() / base.as_secs_f64()
        );
    }
    if !bwrap {
        println!("(no bwrap line: `bwrap` is not installed)");
    }
    let (turn, todo) = through_the_shell_tool(&repo, runs);
    let tool_part = turn.saturating_sub(todo);
    println!(
        "{:<36} {:>8.2} ms  ratio {:>5.2}x  (turn {:.2} ms - a todo_write turn {:.2} ms)",
        "the shell tool's `git status` (part)",
        ms(tool_part),
        tool_part.as_secs_f64() / base.as_secs_f64(),
        ms(turn),
        ms(todo)
    );
    println!("goal: confined <= 1.15x bare");
}

/// A `zeroclaw acp` session in the repository (autonomy `full`, the default backend, warm
/// helpers): the median turn whose model step calls `shell` with `git status`, and the median
/// turn calling `todo_write` (no child), taking turns. Their difference is what a user of the
/// daemon waits for the confined `git status`: a call ends with the helper's report, so the
/// namespace's teardown after it is not on that path (it is on `sandbox run`'s, which waits
/// for its helper's exit).
fn through_the_shell_tool(repo: &Path, runs: usize) -> (Duration, Duration) {
    use turns::Kind;
    let config = tempfile::tempdir().expect("config dir");
    let model = model_server::ModelServer::start_blocking(Vec::new());
    let mut acp = turns::spawn_full(config.path(), &model.base_url(), 2);
    let kinds = [
        Kind::Tool("shell", serde_json::json!({"command": "git status"})),
        Kind::Tool("todo_write", serde_json::json!({"todos": []})),
    ];
    let sessions: Vec<String> = kinds.iter().map(|_| acp.new_session(repo)).collect();
    let mut samples = [Vec::new(), Vec::new()];
    for n in 0..runs + 1 {
        for (k, kind) in kinds.iter().enumerate() {
            let took = acp.turn(&model, &sessions[k], kind);
            if n > 0 {
                samples[k].push(took);
            }
        }
    }
    acp.finish();
    let [shell, todo] = samples.map(|mut s| median(&mut s));
    (shell, todo)
}

/// One measured command line: how to make it, and its run times.
struct Line<'a> {
    what: &'static str,
    command: Box<dyn Fn() -> Command + 'a>,
    samples: Vec<Duration>,
}

impl<'a> Line<'a> {
    fn new(what: &'static str, command: impl Fn() -> Command + 'a) -> Line<'a> {
        Line {
            what,
            command: Box::new(command),
            samples: Vec::new(),
        }
    }
}

/// Runs `command` with its output discarded; whether it exited 0.
fn runs_ok(command: &mut Command) -> bool {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The generated repository: [`FILES`] small files in directories of [`PER_DIR`], committed.
/// Made once; a marker file says it is complete.
fn repository() -> PathBuf {
    let repo = Path::new(env!("CARGO_TARGET_TMPDIR")).join("git-status-20k");
    let done = repo.join(".git").join("zeroclaw-bench-complete");
    if done.exists() {
        return repo;
    }
    println!("generating {} ...", repo.display());
    let _ = std::fs::remove_dir_all(&repo);
    for n in 0..FILES {
        let dir = repo.join(format!("d{:03}", n / PER_DIR));
        if n % PER_DIR == 0 {
            std::fs::create_dir_all(&dir).expect("create dir");
        }
        std::fs::write(dir.join(format!("f{n:05}.txt")), format!("file {n}\n")).expect("write");
    }
    let git = |args: &[&str]| {
        let ok = runs_ok(
            Command::new("git")
                .args(["-c", "user.name=bench", "-c", "user.email=bench@localhost"])
                .args(args)
                .current_dir(&repo),
        );
        assert!(ok, "git {args:?} failed");
    };
    git(&["init", "-q"]);
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "20,000 files"]);
    std::fs::write(&done, "").expect("marker");
    repo
}
