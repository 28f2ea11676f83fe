//! A day's work in one `full` session (run: `cargo bench --bench days_work`): the README's
//! "Autonomous and confined" set-up (level `full`, egress through the proxy with an allowlist,
//! persistent caches) driving the steps a team's agent takes — clone a repository, branch,
//! edit, run the tests, install a package through the proxy from a registry served on
//! loopback, commit, and install it again (`npm install --offline`) from the persistent cache
//! in a fresh checkout. Each step is one scripted model turn calling one tool; the bench prints
//! each step's turn time and its tool part (the turn minus a turn calling `todo_write`, which
//! runs no child), median of `DAYS` days, the first day apart (its install fills the cache),
//! against the same shell command run directly by this process in the same run (its own
//! workspace and HOME, the registry by address). Each step's tool call must complete and print
//! its marker, or the bench panics. Nothing is asserted about time. `ZEROCLAW_BIN` measures
//! another build of `zeroclaw`.

#[allow(dead_code)]
mod common;
#[allow(dead_code)]
#[path = "../tests/support/model_server.rs"]
mod model_server;

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use common::{Acp, median, ms};
use model_server::{ModelServer, text_reply, tool_reply};
use serde_json::{Value, json};
use sha2::Digest;

/// Days measured after the first (which fills the cache).
const DAYS: usize = 5;
/// `todo_write` turns measured per day for the baseline.
const BASELINE_TURNS: usize = 5;
const MARK: &str = "STEP-OK";

fn main() {
    let config = tempfile::tempdir().expect("config dir");
    // Outside /tmp: a `full` session's children read the host, but /tmp is their own.
    let origin = tempfile::tempdir_in("/var/tmp").expect("origin dir");
    let served = tempfile::tempdir().expect("registry dir");
    let work = tempfile::tempdir().expect("workspace");
    let direct = tempfile::tempdir().expect("direct workspace and HOME");
    origin_repository(origin.path());
    let registry = Registry::start(served.path());
    write_config(config.path(), registry.port);

    let model = ModelServer::start_blocking(Vec::new());
    let mut acp = Acp::spawn(config.path(), &model.base_url(), &[]);
    acp.call("initialize", json!({"protocolVersion": 1}));
    println!(
        "a day's work in one full session ({}), proxy egress, persistent caches",
        common::binary().to_string_lossy()
    );

    let steps = steps(&origin.path().join("repo"), registry.port);
    let mut days: Vec<Vec<Duration>> = Vec::new();
    let mut direct_days: Vec<Vec<Option<Duration>>> = Vec::new();
    let mut baselines = Vec::new();
    for _ in 0..=DAYS {
        clear(work.path());
        direct_days.push(
            steps
                .iter()
                .map(|(_, tool, args)| run_directly(direct.path(), tool, args))
                .collect(),
        );
        let session = new_session(&mut acp, work.path());
        for _ in 0..BASELINE_TURNS {
            baselines.push(turn(
                &mut acp,
                &model,
                &session,
                "todo_write",
                &json!({"todos": []}),
            ));
        }
        let day = steps
            .iter()
            .map(|(_, tool, args)| turn(&mut acp, &model, &session, tool, args))
            .collect();
        days.push(day);
    }
    acp.finish();
    drop(registry);

    let baseline = median(&mut baselines);
    println!(
        "  baseline: a turn calling todo_write (no child) {:.3} ms, median of {}",
        ms(baseline),
        baselines.len()
    );
    println!(
        "  step | first day: turn, tool part | median of {DAYS} more days: turn, tool part, \
         the command run directly, tool part / direct"
    );
    let mut total = (Duration::ZERO, Duration::ZERO);
    for (k, (name, _, _)) in steps.iter().enumerate() {
        let first = days[0][k];
        let mut later: Vec<Duration> = days[1..].iter().map(|d| d[k]).collect();
        let later = median(&mut later);
        total.0 += first.saturating_sub(baseline);
        total.1 += later.saturating_sub(baseline);
        let mut plain: Vec<Duration> = direct_days[1..].iter().filter_map(|d| d[k]).collect();
        let vs_direct = if plain.is_empty() {
            "no direct baseline".to_string()
        } else {
            let plain = median(&mut plain);
            format!(
                "{:>9.2} ms {:>6.2}x",
                ms(plain),
                later.saturating_sub(baseline).as_secs_f64() / plain.as_secs_f64().max(1e-9)
            )
        };
        println!(
            "  {name:<24} | {:>8.2} ms {:>8.2} ms | {:>8.2} ms {:>8.2} ms {vs_direct}",
            ms(first),
            ms(first.saturating_sub(baseline)),
            ms(later),
            ms(later.saturating_sub(baseline))
        );
    }
    println!(
        "  tool parts of the whole day: first {:.1} ms, later days {:.1} ms",
        ms(total.0),
        ms(total.1)
    );
}

/// The day's steps: a name, the tool, its arguments (every shell step prints [`MARK`] last).
fn steps(origin: &Path, port: u16) -> Vec<(&'static str, &'static str, Value)> {
    let shell = |command: String| json!({"command": format!("{command} && echo {MARK}")});
    let npm = |flags: &str| {
        format!(
            "cd proj && npm install {flags} --no-audit --no-fund --no-update-notifier \
             --registry http://files.example:{port}/ demo-pkg >/dev/null && \
             node -e 'require(\"demo-pkg\")'"
        )
    };
    vec![
        (
            "git clone",
            "shell",
            shell(format!("git clone -q {} proj", origin.display())),
        ),
        (
            "git switch -c",
            "shell",
            shell("git -C proj switch -q -c feature".into()),
        ),
        (
            "file_edit",
            "file_edit",
            json!({"path": "proj/calc.py", "old_string": "a + b", "new_string": "b + a"}),
        ),
        (
            "python3 -m unittest",
            "shell",
            shell("cd proj && python3 -m unittest -q 2>&1".into()),
        ),
        ("npm install (proxy)", "shell", shell(npm(""))),
        (
            "git commit",
            "shell",
            shell(
                "cd proj && git add -A && git -c user.name=bench -c user.email=bench@example.invalid \
                 commit -qm 'swap the operands'"
                    .into(),
            ),
        ),
        (
            "npm install --offline",
            "shell",
            shell(format!(
                "rm -rf proj/node_modules proj/package-lock.json && {}",
                npm("--offline")
            )),
        ),
    ]
}

/// A repository at `dir/repo` with a module, its test and a `.gitignore`.
fn origin_repository(dir: &Path) {
    let repo = dir.join("repo");
    std::fs::create_dir(&repo).expect("repo dir");
    std::fs::write(repo.join("calc.py"), "def add(a, b):\n    return a + b\n").unwrap();
    std::fs::write(
        repo.join("test_calc.py"),
        "import unittest\nfrom calc import add\n\nclass T(unittest.TestCase):\n    \
         def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n",
    )
    .unwrap();
    std::fs::write(repo.join(".gitignore"), "node_modules/\n__pycache__/\n").unwrap();
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .arg("-C")
            .arg(&repo)
            .args([
                "-c",
                "user.name=bench",
                "-c",
                "user.email=bench@example.invalid",
            ])
            .args(args)
            .output()
            .expect("git");
        assert!(out.status.success(), "git {args:?}: {out:?}");
    };
    git(&["init", "-q", "-b", "main"]);
    git(&["add", "-A"]);
    git(&["commit", "-qm", "start"]);
}

/// `level = "full"`, proxy egress admitting the registry's name (resolved to loopback), caches
/// on (the default).
fn write_config(dir: &Path, port: u16) {
    std::fs::write(
        dir.join("config.toml"),
        format!(
            "[autonomy]\nlevel = \"full\"\n\n[sandbox.network]\nmode = \"proxy\"\n\
             allow_domains = [\"files.example\"]\nallow_ports = [{port}]\n\
             allow_cidrs = [\"127.0.0.0/8\"]\nhosts = {{ \"files.example\" = \"127.0.0.1\" }}\n"
        ),
    )
    .expect("config.toml");
}

/// An npm registry as static files (`demo-pkg` and its tarball with its integrity), served by
/// `python3 -m http.server` on loopback; stopped when dropped.
struct Registry {
    port: u16,
    server: Child,
}

impl Registry {
    fn start(root: &Path) -> Registry {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let package = root.join("src/package");
        std::fs::create_dir_all(&package).unwrap();
        std::fs::write(
            package.join("package.json"),
            r#"{"name": "demo-pkg", "version": "1.0.0", "main": "index.js"}"#,
        )
        .unwrap();
        std::fs::write(package.join("index.js"), "module.exports = 'demo';\n").unwrap();
        std::fs::create_dir(root.join("tarballs")).unwrap();
        let tgz = root.join("tarballs/demo-pkg-1.0.0.tgz");
        let tar = Command::new("tar")
            .arg("-czf")
            .arg(&tgz)
            .arg("-C")
            .arg(root.join("src"))
            .arg("package")
            .status()
            .expect("tar");
        assert!(tar.success());
        let digest = sha2::Sha512::digest(std::fs::read(&tgz).unwrap());
        let integrity = format!(
            "sha512-{}",
            base64::engine::general_purpose::STANDARD.encode(digest)
        );
        // The packument once as the confined install sees it (the tarball at the registry's
        // name) and once under `direct/` for the direct runs (at its address).
        for (dir, host) in [("", "files.example"), ("direct", "127.0.0.1")] {
            let version = json!({
                "name": "demo-pkg", "version": "1.0.0", "main": "index.js",
                "dist": {
                    "tarball": format!("http://{host}:{port}/tarballs/demo-pkg-1.0.0.tgz"),
                    "integrity": integrity,
                },
            });
            let packument = json!({
                "name": "demo-pkg", "dist-tags": {"latest": "1.0.0"}, "versions": {"1.0.0": version},
            });
            std::fs::create_dir_all(root.join(dir)).unwrap();
            std::fs::write(root.join(dir).join("demo-pkg"), packument.to_string()).unwrap();
        }
        let server = Command::new("python3")
            .args([
                "-m",
                "http.server",
                "--bind",
                "127.0.0.1",
                &port.to_string(),
                "-d",
            ])
            .arg(root)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 -m http.server");
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "the registry did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        Registry { port, server }
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

/// Runs a shell step's command directly (`sh -c` in `dir/ws`, HOME `dir/home`, the registry
/// by its address, under `direct/`) and times it; `None` for a step that is not a shell command.
/// The workspace is emptied first on the step that clones.
fn run_directly(dir: &Path, tool: &str, args: &Value) -> Option<Duration> {
    if tool != "shell" {
        return None;
    }
    let (ws, home) = (dir.join("ws"), dir.join("home"));
    let command = args["command"]
        .as_str()?
        .replace("files.example:", "127.0.0.1:")
        .replace("/ demo-pkg", "/direct/ demo-pkg");
    if command.starts_with("git clone") && ws.exists() {
        clear(&ws);
    }
    std::fs::create_dir_all(&ws).expect("direct ws");
    std::fs::create_dir_all(&home).expect("direct home");
    let start = Instant::now();
    let out = Command::new("sh")
        .arg("-c")
        .arg(&command)
        .current_dir(&ws)
        .env("HOME", &home)
        .output()
        .expect("sh");
    let took = start.elapsed();
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(printed.contains(MARK), "directly: {command}: {out:?}");
    Some(took)
}

/// Empties the workspace for the next day.
fn clear(work: &Path) {
    for entry in std::fs::read_dir(work).expect("workspace").flatten() {
        let path = entry.path();
        let removed = if path.is_dir() && !path.is_symlink() {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
        removed.expect("clear the workspace");
    }
}

fn new_session(acp: &mut Acp, cwd: &Path) -> String {
    let created = acp.call("session/new", json!({"cwd": cwd, "mcpServers": []}));
    created["sessionId"]
        .as_str()
        .expect("sessionId")
        .to_string()
}

/// One timed turn whose model step calls `tool`; panics unless the call completed (and, for
/// a shell step, printed [`MARK`]).
fn turn(acp: &mut Acp, model: &ModelServer, session: &str, tool: &str, args: &Value) -> Duration {
    let call_id = format!("day-{}", acp.next_id());
    model.push(tool_reply(&call_id, tool, args));
    model.push(text_reply("done"));
    let params = json!({"sessionId": session, "prompt": [{"type": "text", "text": "go"}]});
    let start = Instant::now();
    let id = acp.send("session/prompt", params);
    let mut last = Value::Null;
    let result = acp.response(id, |m| {
        if m["params"]["update"]["status"].is_string() {
            last = m["params"]["update"].clone();
        }
    });
    let took = start.elapsed();
    assert_eq!(result["stopReason"], "end_turn", "{result}");
    assert_eq!(last["status"], "completed", "{tool} {args}: {last}");
    if tool == "shell" {
        assert!(last.to_string().contains(MARK), "{tool} {args}: {last}");
    }
    took
}
