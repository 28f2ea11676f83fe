//! `zeroclaw acp --metrics-file PATH`, through the real binary: when its input ends (and on
//! SIGTERM) it writes the process's metrics to PATH in the Prometheus text format, parsed by
//! `promtool check metrics`, with the counters of the session it served, and no temp file
//! left beside it; a PATH in a missing directory is refused before anything is served. MCP
//! tools (named by clients) share the `tool="mcp"` label.

use crate::support;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::json;
use support::acp_client::{AcpClient, model_env};
use support::model_server::{ModelServer, Reply, finish, text, tool_reply, usage};
use support::ws_daemon::scrubbed;

fn acp(config_dir: &Path, model: &str, metrics: &Path) -> AcpClient {
    let mut cmd = scrubbed(env!("CARGO_BIN_EXE_zeroclaw"), config_dir);
    cmd.arg("acp").arg("--metrics-file").arg(metrics);
    cmd.envs(model_env(model));
    cmd.current_dir(config_dir);
    AcpClient::spawn_command(cmd, config_dir)
}

fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|l| {
        l.strip_prefix(series)?
            .strip_prefix(' ')?
            .trim()
            .parse()
            .ok()
    })
}

fn promtool_check(text: &str) {
    let Ok(mut check) = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    else {
        support::require_feature(
            "promtool (Debian package prometheus) is not installed: no promtool check",
        );
        return;
    };
    check
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = check.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool check metrics: {}{}\n{text}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The names in `dir`.
fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn end_of_input_writes_the_sessions_metrics_atomically() {
    let model = ModelServer::start_blocking(vec![
        tool_reply("s1", "shell", &json!({"command": "echo hi"})),
        Reply::Sse(vec![text("ran"), finish("stop"), usage(50, 4)]),
    ]);
    let config = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let metrics = out.path().join("zeroclaw.prom");
    let mut client = acp(config.path(), &model.base_url(), &metrics);
    client.initialize();
    let work = tempfile::tempdir().unwrap();
    let session = client.new_session(work.path());
    client.prompt(&session, "run");
    assert!(!metrics.exists(), "written before the exit");
    let status = client.shutdown();
    assert!(status.success(), "{status:?}\n{}", client.stderr());

    let text = std::fs::read_to_string(&metrics).unwrap();
    promtool_check(&text);
    assert_eq!(sample(&text, "zeroclaw_sessions_created_total"), Some(1.0));
    assert_eq!(sample(&text, "zeroclaw_turns_total"), Some(1.0), "{text}");
    assert_eq!(sample(&text, "zeroclaw_model_requests_total"), Some(2.0));
    assert_eq!(
        sample(&text, "zeroclaw_tokens_total{kind=\"input\"}"),
        Some(50.0),
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            "zeroclaw_tool_duration_seconds_count{tool=\"shell\"}"
        ),
        Some(1.0),
        "{text}"
    );
    assert!(
        sample(&text, "zeroclaw_store_write_seconds_count").unwrap_or(0.0) >= 2.0,
        "{text}"
    );
    assert_eq!(entries(out.path()), ["zeroclaw.prom"]);
}

#[test]
fn sigterm_writes_the_file_too_and_a_missing_directory_is_refused_at_start() {
    let model = ModelServer::start_blocking(vec![]);
    let config = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let metrics = out.path().join("m.prom");
    std::fs::write(&metrics, "old").unwrap();
    let mut client = acp(config.path(), &model.base_url(), &metrics);
    client.initialize();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(client.pid() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = client.wait_exit();
    assert_eq!(status.code(), Some(128 + libc::SIGTERM), "{status:?}");
    let text = std::fs::read_to_string(&metrics).unwrap();
    promtool_check(&text);
    assert_eq!(sample(&text, "zeroclaw_sessions_created_total"), Some(0.0));
    assert_eq!(entries(out.path()), ["m.prom"]);

    let missing = out.path().join("no/such/dir/m.prom");
    let refused = scrubbed(env!("CARGO_BIN_EXE_zeroclaw"), config.path())
        .arg("acp")
        .arg("--metrics-file")
        .arg(&missing)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(refused.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("--metrics-file") && stderr.contains("does not exist"),
        "{stderr}"
    );
}

#[test]
fn mcp_tools_share_one_tool_label() {
    let model = ModelServer::start_blocking(vec![
        tool_reply("m1", "mcp__gone__first", &json!({})),
        tool_reply("m2", "mcp__gone__second", &json!({})),
        Reply::Sse(vec![text("tried"), finish("stop"), usage(10, 2)]),
    ]);
    let config = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let metrics = out.path().join("zeroclaw.prom");
    let mut client = acp(config.path(), &model.base_url(), &metrics);
    client.initialize();
    let work = tempfile::tempdir().unwrap();
    // A client's server that cannot start: its tools' calls fail, and are counted.
    let server = json!({"name": "gone", "command": "/nonexistent/zc-mcp-server",
                        "args": [], "env": []});
    let session = client.call(
        "session/new",
        json!({"cwd": work.path(), "mcpServers": [server]}),
    )["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    client.prompt(&session, "try them");
    let status = client.shutdown();
    assert!(status.success(), "{status:?}\n{}", client.stderr());

    let text = std::fs::read_to_string(&metrics).unwrap();
    promtool_check(&text);
    assert!(
        !text.contains("mcp__"),
        "a client-chosen name is a label:\n{text}"
    );
    assert_eq!(
        sample(&text, "zeroclaw_tool_duration_seconds_count{tool=\"mcp\"}"),
        Some(2.0),
        "{text}"
    );
    let executions: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("zeroclaw_tool_executions_total{") && l.contains("tool=\"mcp\""))
        .collect();
    assert_eq!(executions.len(), 1, "{text}");
    assert!(executions[0].ends_with(" 2"), "{}", executions[0]);
    client.assert_valid();
}
