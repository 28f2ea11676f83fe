//! JSON-RPC framing errors and the contract's error codes for malformed or misdirected
//! messages: -32700, -32600, -32601, -32602, -32000; notifications and unknown-id responses
//! never answered; the line-length limit; the connection always lives on.

use crate::support;

use serde_json::{Value, json};
use support::acp_client::{AcpClient, is_response};

fn ready() -> AcpClient {
    let client = AcpClient::builder().spawn();
    client.initialize();
    client
}

/// Sends a ping-like request and returns the messages that arrived before its answer, after
/// `from`. Because requests are answered in order of arrival for a quiet server, anything the
/// server said about earlier lines is in this slice.
fn messages_before_ping(client: &AcpClient, from: usize) -> Vec<Value> {
    let id = client.send_request("initialize", json!({"protocolVersion": 1}));
    let (at, _) = client.wait_for_from(from, |m| is_response(m) && m["id"] == id);
    client.messages()[from..at].to_vec()
}

fn next_error(client: &AcpClient, from: usize) -> Value {
    client
        .wait_for_from(from, |m| is_response(m) && m.get("error").is_some())
        .1
}

#[test]
fn non_json_and_invalid_utf8_are_parse_errors_with_null_id() {
    let client = ready();
    for line in [
        &b"{\"jsonrpc\":\"2.0\",\"id\":1,"[..],
        b"hello",
        b"\xff\xfe\x80abc",
        b"{]",
    ] {
        let from = client.message_count();
        let mut bytes = line.to_vec();
        bytes.push(b'\n');
        client.send_raw(&bytes);
        let error = next_error(&client, from);
        assert_eq!(error["id"], Value::Null, "{error}");
        assert_eq!(error["error"]["code"], -32700, "{error}");
    }
}

#[test]
fn batches_and_non_objects_are_invalid_requests() {
    let client = ready();
    let lines = [
        json!([{"jsonrpc": "2.0", "id": 1, "method": "initialize"}]),
        json!([]),
        json!(5),
        json!("initialize"),
        json!(null),
        json!({"id": 7, "method": "initialize"}),
        json!({"jsonrpc": "1.0", "id": 8, "method": "initialize"}),
        json!({"jsonrpc": 2, "id": 9, "method": "initialize"}),
    ];
    for line in lines {
        let from = client.message_count();
        client.send_json(&line);
        let error = next_error(&client, from);
        assert_eq!(error["error"]["code"], -32600, "{line} -> {error}");
    }
}

#[test]
fn an_id_without_method_or_result_is_an_invalid_request_for_that_id() {
    let client = ready();
    client.send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":3}\n");
    let error = next_error(&client, 0);
    assert_eq!(error["id"], 3);
    assert_eq!(error["error"]["code"], -32600);
}

#[test]
fn unknown_methods_get_method_not_found_and_unknown_notifications_nothing() {
    let client = ready();
    let error = client.call_err("session/explode", json!({}));
    assert_eq!(error["code"], -32601);
    let error = client.call_err("initialize/extra", json!({}));
    assert_eq!(error["code"], -32601);

    let from = client.message_count();
    client.notify("session/explode", json!({}));
    client.notify("$/unknown", json!({"x": 1}));
    assert!(messages_before_ping(&client, from).is_empty());
}

#[test]
fn notifications_never_get_a_response() {
    let client = ready();
    let dir = tempfile::tempdir().unwrap();
    let session = client.new_session(dir.path());
    let from = client.message_count();
    client.notify("session/cancel", json!({"sessionId": session}));
    client.notify("session/cancel", json!({"sessionId": "s-unknown"}));
    client.notify("session/cancel", json!({}));
    client.notify(
        "session/update",
        json!({"sessionId": session, "update": {"x": 1}}),
    );
    client.notify(
        "session/event",
        json!({"sessionId": session, "event": "custom"}),
    );
    client.notify(
        "session/prompt",
        json!({"sessionId": "s-unknown", "prompt": "hi"}),
    );
    client.notify("initialize", json!({"protocolVersion": 1}));
    let said = messages_before_ping(&client, from);
    assert!(said.is_empty(), "notifications were answered: {said:?}");
}

#[test]
fn responses_with_unknown_ids_are_ignored() {
    let client = ready();
    let from = client.message_count();
    client.send_json(&json!({"jsonrpc": "2.0", "id": "zc-out-999", "result": {}}));
    client.send_json(&json!({"jsonrpc": "2.0", "id": 12345, "result": {"x": 1}}));
    client.send_json(
        &json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "bad"}}),
    );
    client.send_json(
        &json!({"jsonrpc": "2.0", "id": "zc-out-0", "error": {"code": -32603, "message": "x"}}),
    );
    let said = messages_before_ping(&client, from);
    assert!(said.is_empty(), "responses were answered: {said:?}");
}

#[test]
fn missing_or_ill_typed_params_are_invalid_params() {
    let client = ready();
    let dir = tempfile::tempdir().unwrap();
    let session = client.new_session(dir.path());
    let cases = [
        ("session/new", json!({"cwd": 5})),
        ("session/new", json!({"cwd": dir.path(), "agentAlias": 7})),
        ("session/prompt", json!({"prompt": "hi"})),
        ("session/prompt", json!({"sessionId": session})),
        ("session/prompt", json!({"sessionId": session, "prompt": 5})),
        ("session/prompt", json!({"sessionId": 5, "prompt": "hi"})),
        (
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text"}]}),
        ),
        ("session/load", json!({})),
        ("session/resume", json!({"sessionId": ["x"]})),
        ("session/close", json!({})),
        ("session/stop", json!({})),
    ];
    for (method, params) in cases {
        let error = client.call_err(method, params.clone());
        assert_eq!(error["code"], -32602, "{method} {params}: {error}");
    }
}

#[test]
fn unknown_sessions_are_session_not_found() {
    let client = ready();
    let cases = [
        (
            "session/prompt",
            json!({"sessionId": "s-nope", "prompt": "hi"}),
        ),
        ("session/stop", json!({"sessionId": "s-nope"})),
        ("session/close", json!({"sessionId": "s-nope"})),
        ("session/load", json!({"sessionId": "s-nope"})),
        ("session/resume", json!({"sessionId": "s-nope"})),
    ];
    for (method, params) in cases {
        let error = client.call_err(method, params);
        assert_eq!(error["code"], -32000, "{method}: {error}");
        assert_eq!(
            error["data"]["reason"], "session_not_found",
            "{method}: {error}"
        );
    }
}

#[test]
fn empty_prompts_are_invalid_params() {
    let client = ready();
    let dir = tempfile::tempdir().unwrap();
    let session = client.new_session(dir.path());
    for prompt in [json!(""), json!([])] {
        let error = client.call_err(
            "session/prompt",
            json!({"sessionId": session, "prompt": prompt}),
        );
        assert_eq!(error["code"], -32602, "prompt {prompt}: {error}");
    }
}

#[test]
fn an_over_long_line_is_discarded_with_an_error_and_the_connection_lives_on() {
    let client = AcpClient::builder()
        .env("ZEROCLAW_acp__max_line_bytes", "4096")
        .spawn();
    client.initialize();
    let from = client.message_count();
    let padding = "x".repeat(10_000);
    let long =
        json!({"jsonrpc": "2.0", "id": 77, "method": "initialize", "params": {"p": padding}});
    client.send_json(&long);
    let error = next_error(&client, from);
    assert_eq!(
        error["id"],
        Value::Null,
        "the discarded line is never parsed: {error}"
    );
    assert_eq!(error["error"]["code"], -32600);
    assert_eq!(error["error"]["data"]["reason"], "line_too_long");
    assert!(
        client.messages().iter().all(|m| m["id"] != 77),
        "the over-long request must not be executed"
    );
    assert_eq!(client.initialize()["protocolVersion"], 1);
}

#[test]
fn blank_lines_are_ignored() {
    let client = ready();
    let from = client.message_count();
    client.send_raw(b"\n\n  \n");
    assert!(messages_before_ping(&client, from).is_empty());
}

// The same tests over WebSocket to `zeroclaw daemon`, TCP and Unix socket (not line framing: over-long and blank lines are stdio matters).
crate::over_websocket!(
    non_json_and_invalid_utf8_are_parse_errors_with_null_id,
    batches_and_non_objects_are_invalid_requests,
    an_id_without_method_or_result_is_an_invalid_request_for_that_id,
    unknown_methods_get_method_not_found_and_unknown_notifications_nothing,
    notifications_never_get_a_response,
    responses_with_unknown_ids_are_ignored,
    missing_or_ill_typed_params_are_invalid_params,
    unknown_sessions_are_session_not_found,
    empty_prompts_are_invalid_params,
);
