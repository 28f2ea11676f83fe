//! `GET /metrics` on the daemon: served on the Unix socket, on TCP only with a token; the text
//! passes `promtool check metrics` (Debian's `prometheus` package), its counters match a
//! session's events (two turns, a write that asked and was allowed once, a shell command, a
//! refused connection, the tokens of the model's usage reports, the store's writes), and neither the token nor the API key appears in it.

use crate::support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::process::{Command, Stdio};

use serde_json::json;
use support::acp_client::{AcpClient, Permission};
use support::model_server::{ModelServer, Reply, finish, text, tool_reply, usage};
use support::ws_conn::{Endpoint, Upgrade};
use support::ws_daemon::Daemon;

const API_CANARY: &str = "zc-canary-apikey-77f3a0";

/// A plain HTTP/1.1 GET read to the end; (status, body).
fn http_get(
    mut stream: impl Read + Write,
    target: &str,
    headers: &[(&str, &str)],
) -> (u16, String) {
    let mut request = format!("GET {target} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n");
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).unwrap();
    let status = raw
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = raw
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

/// The value of the sample `name{labels}` (labels as written, in order), or 0.
fn sample(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| {
            l.strip_prefix(series)?
                .strip_prefix(' ')?
                .trim()
                .parse()
                .ok()
        })
        .unwrap_or(0.0)
}

#[test]
fn metrics_pass_promtool_and_count_the_sessions_events() {
    let model = ModelServer::start_blocking(vec![
        tool_reply(
            "w1",
            "file_write",
            &json!({"path": "a.txt", "content": "A"}),
        ),
        Reply::Sse(vec![text("written"), finish("stop"), usage(120, 7)]),
        tool_reply("s1", "shell", &json!({"command": "echo hi"})),
        Reply::Sse(vec![text("ran"), finish("stop"), usage(200, 5)]),
    ]);
    let config = tempfile::tempdir().unwrap();
    std::fs::write(
        config.path().join("config.toml"),
        format!(
            "[providers.spare]\nbase_url = \"http://127.0.0.1:9\"\napi_key = \"{API_CANARY}\"\n"
        ),
    )
    .unwrap();
    let daemon = Daemon::builder()
        .model(model.base_url())
        .config_dir(config.path())
        .spawn();
    let upgrade = Upgrade::new(Endpoint::Unix(daemon.unix().into()));
    let client = AcpClient::connect(&upgrade, daemon.config_dir()).unwrap();
    client.set_permission(Permission::Select("allow-once".into()));
    client.initialize();
    let work = tempfile::tempdir().unwrap();
    let session = client.new_session(work.path());
    client.prompt(&session, "write");
    client.prompt(&session, "run");
    assert_eq!(
        std::fs::read_to_string(work.path().join("a.txt")).unwrap(),
        "A"
    );

    // TCP: no token, a wrong one: 401 (and counted); the daemon's token: 200.
    let tcp = || TcpStream::connect(daemon.tcp()).unwrap();
    assert_eq!(http_get(tcp(), "/metrics", &[]).0, 401);
    assert_eq!(
        http_get(tcp(), "/metrics", &[("Authorization", "Bearer nope")]).0,
        401
    );
    let bearer = format!("Bearer {}", daemon.token());
    let (status, over_tcp) = http_get(tcp(), "/metrics", &[("Authorization", &bearer)]);
    assert_eq!(status, 200, "{over_tcp}");

    let (status, text) = http_get(UnixStream::connect(daemon.unix()).unwrap(), "/metrics", &[]);
    assert_eq!(status, 200, "{text}");
    assert_eq!(
        sample(&text, "zeroclaw_sessions_created_total"),
        1.0,
        "{text}"
    );
    assert_eq!(sample(&text, "zeroclaw_sessions_active"), 1.0, "{text}");
    assert_eq!(sample(&text, "zeroclaw_turns_total"), 2.0, "{text}");
    assert_eq!(
        sample(&text, "zeroclaw_turn_duration_seconds_count"),
        2.0,
        "{text}"
    );
    assert_eq!(
        sample(&text, "zeroclaw_model_requests_total"),
        4.0,
        "{text}"
    );
    // Tokens as the provider's usage reports said (no cached count in them).
    for (kind, count) in [("input", 320.0), ("output", 12.0), ("cached", 0.0)] {
        let series = format!("zeroclaw_tokens_total{{kind=\"{kind}\"}}");
        assert!(text.contains(&format!("{series} ")), "{series}\n{text}");
        assert_eq!(sample(&text, &series), count, "{text}");
    }
    assert_eq!(
        sample(&text, "zeroclaw_approvals_total{answer=\"asked\"}"),
        1.0,
        "{text}"
    );
    assert_eq!(
        sample(&text, "zeroclaw_approvals_total{answer=\"allow_once\"}"),
        1.0,
        "{text}"
    );
    let executions: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("zeroclaw_tool_executions_total{"))
        .collect();
    assert_eq!(executions.len(), 2, "{text}");
    for tool in ["file_write", "shell"] {
        let line = executions
            .iter()
            .find(|l| l.contains(&format!("tool=\"{tool}\"")))
            .unwrap();
        assert!(
            line.contains("outcome=\"completed\"") && line.ends_with(" 1"),
            "{line}"
        );
        assert!(!line.contains("backend=\"none\""), "{line}");
    }
    assert_eq!(
        sample(
            &text,
            "zeroclaw_tool_duration_seconds_count{tool=\"shell\"}"
        ),
        1.0
    );
    assert_eq!(sample(&text, "zeroclaw_auth_failures_total"), 2.0, "{text}");
    assert_eq!(
        sample(&text, "zeroclaw_websocket_connections"),
        1.0,
        "{text}"
    );
    // session.create, 2 decisions, 1 approval, 2 executions.
    assert!(
        sample(&text, "zeroclaw_audit_write_seconds_count") >= 6.0,
        "{text}"
    );
    // The session's row, then each of the two turns.
    assert!(
        sample(&text, "zeroclaw_store_write_seconds_count") >= 3.0,
        "{text}"
    );
    for secret in [daemon.token(), API_CANARY] {
        assert!(
            !text.contains(secret) && !over_tcp.contains(secret),
            "a secret in /metrics"
        );
    }

    match Command::new("promtool").arg("--version").output() {
        Ok(_) => {
            let mut check = Command::new("promtool")
                .args(["check", "metrics"])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
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
        Err(_) => {
            support::require_feature(
                "promtool (Debian package prometheus) is not installed: no promtool check",
            );
        }
    }
}
