//! The connection lifecycle of `zeroclaw acp`: the `initialize` handshake and its exact shape,
//! what happens before it, configuration reflected in `_meta.zeroclaw`, EOF, and the rule that
//! stdout carries only JSON-RPC even with verbose logging.

use crate::support;

use serde_json::json;
use support::acp_client::AcpClient;

#[test]
fn initialize_has_the_exact_shape_of_the_spec() {
    let client = AcpClient::builder().spawn();
    let result = client.initialize();
    assert_eq!(result["protocolVersion"], 1);
    let caps = &result["agentCapabilities"];
    assert_eq!(caps["loadSession"], true);
    assert_eq!(
        caps["promptCapabilities"],
        json!({"image": true, "audio": false, "embeddedContext": true})
    );
    assert_eq!(caps["mcpCapabilities"], json!({"http": true, "sse": false}));
    assert_eq!(
        caps["sessionCapabilities"],
        json!({"resume": {}, "close": {}, "list": {}, "delete": {}})
    );
    assert_eq!(result["agentInfo"]["name"], "zeroclaw-acp");
    assert_eq!(result["agentInfo"]["title"], "ZeroClaw ACP");
    assert!(
        result["agentInfo"]["version"]
            .as_str()
            .is_some_and(|v| !v.is_empty())
    );
    assert_eq!(result["authMethods"], json!([]));
    // The sandbox declaration has its own suite (`acp_sandbox`).
    let mut meta = result["_meta"]["zeroclaw"].clone();
    let sandbox = meta.as_object_mut().and_then(|m| m.remove("sandbox"));
    assert!(sandbox.is_some_and(|s| s.is_object()), "{result}");
    assert_eq!(
        meta,
        json!({
            "defaultModel": "anthropic/claude-sonnet-4.6",
            "maxSessions": 10,
            "sessionTimeoutSecs": 3600
        })
    );
}

#[test]
fn initialize_without_params_and_with_other_versions_answers_version_1() {
    let client = AcpClient::builder().spawn();
    // The spec's own example omits params altogether.
    client.send_json(&json!({"jsonrpc": "2.0", "id": "bare", "method": "initialize"}));
    let bare = client.wait_response(&json!("bare"));
    assert_eq!(bare["result"]["protocolVersion"], 1, "{bare}");
    for version in [0, 1, 2, 99] {
        let result = client.call("initialize", json!({"protocolVersion": version}));
        assert_eq!(
            result["protocolVersion"], 1,
            "client sent version {version}"
        );
    }
}

#[test]
fn meta_reflects_flags_and_env() {
    let client = AcpClient::builder()
        .model("http://127.0.0.1:9/v1")
        .arg("--max-sessions")
        .arg("3")
        .arg("--session-timeout")
        .arg("120")
        .spawn();
    let meta = &client.initialize()["_meta"]["zeroclaw"];
    assert_eq!(meta["maxSessions"], 3);
    assert_eq!(meta["sessionTimeoutSecs"], 120);
    assert_eq!(meta["defaultModel"], "m");

    let client = AcpClient::builder()
        .env("ZEROCLAW_acp__max_sessions", "2")
        .env("ZEROCLAW_acp__session_timeout_secs", "77")
        .spawn();
    let meta = &client.initialize()["_meta"]["zeroclaw"];
    assert_eq!(meta["maxSessions"], 2);
    assert_eq!(meta["sessionTimeoutSecs"], 77);
}

#[test]
fn requests_before_initialize_are_invalid_requests() {
    let client = AcpClient::builder().spawn();
    let dir = tempfile::tempdir().unwrap();
    let params = [
        ("session/new", json!({"cwd": dir.path(), "mcpServers": []})),
        (
            "session/prompt",
            json!({"sessionId": "s-x", "prompt": "hi"}),
        ),
        ("session/load", json!({"sessionId": "s-x"})),
    ];
    for (method, p) in params {
        let error = client.call_err(method, p);
        assert_eq!(error["code"], -32600, "{method} before initialize: {error}");
    }
    // The connection lives on and the handshake still works.
    assert_eq!(client.initialize()["protocolVersion"], 1);
    client.new_session(dir.path());
}

#[test]
fn eof_on_stdin_ends_the_process_cleanly() {
    let mut client = AcpClient::builder().spawn();
    client.initialize();
    let status = client.shutdown();
    assert!(status.success(), "exit status {status}");
}

#[test]
fn stdout_carries_only_json_rpc_even_with_debug_logging() {
    let dir = tempfile::tempdir().unwrap();
    let client = AcpClient::builder().env("ZEROCLAW_LOG", "trace").spawn();
    client.initialize();
    let session = client.new_session(dir.path());
    client.call_err("no/such_method", json!({}));
    client.send_raw(b"{not json\n");
    client.call("session/cancel", json!({"sessionId": session}));
    // Every stdout line was parsed and schema-checked by the client; any stray text fails.
    client.assert_valid();
    assert!(
        client.messages().iter().all(|m| m["jsonrpc"] == "2.0"),
        "every message is JSON-RPC 2.0"
    );
}

// The same tests over WebSocket to `zeroclaw daemon`, TCP and Unix socket (not stdin EOF or stdout hygiene, which are stdio matters).
crate::over_websocket!(
    initialize_has_the_exact_shape_of_the_spec,
    meta_reflects_flags_and_env,
    requests_before_initialize_are_invalid_requests,
);
