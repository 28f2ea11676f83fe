//! End-to-end smoke tests of `zeroclaw acp` against the loopback model server: a streamed text
//! turn that survives a restart, a tool call split across chunks, cancellation mid-stream, and
//! a provider error. (The full protocol suite lives in the other `tests/acp_*.rs` files.)

use crate::support::model_server;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use model_server::{
    ModelServer, Reply, finish, reasoning, text, text_reply, tool_call_args, tool_call_start,
};
use serde_json::{Value, json};

/// A `zeroclaw acp` process and the messages it wrote, one JSON value per stdout line.
struct Acp {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<Value>,
    next_id: u64,
}

impl Acp {
    fn spawn(config_dir: &std::path::Path, model: &ModelServer) -> Acp {
        Acp::spawn_with(config_dir, model, &[])
    }

    fn spawn_with(config_dir: &std::path::Path, model: &ModelServer, args: &[&str]) -> Acp {
        let mut child = Command::new(env!("CARGO_BIN_EXE_zeroclaw"))
            .arg("acp")
            .args(args)
            .env("ZEROCLAW_CONFIG_DIR", config_dir)
            .env("ZEROCLAW_providers__local__kind", "openai")
            .env("ZEROCLAW_providers__local__base_url", model.base_url())
            .env("ZEROCLAW_providers__local__api_key", "test-key")
            .env("ZEROCLAW_agents__coder__provider", "local")
            .env("ZEROCLAW_agents__coder__model", "m")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn zeroclaw acp");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let line = line.expect("stdout is UTF-8");
                let value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"));
                if tx.send(value).is_err() {
                    return;
                }
            }
        });
        let stdin = child.stdin.take().expect("stdin");
        let mut acp = Acp {
            child,
            stdin,
            lines,
            next_id: 1,
        };
        let init = acp.call("initialize", json!({"protocolVersion": 1})).1;
        assert_eq!(init["result"]["protocolVersion"], 1, "{init}");
        acp
    }

    fn send(&mut self, message: Value) {
        writeln!(self.stdin, "{message}").expect("write to zeroclaw");
        self.stdin.flush().expect("flush");
    }

    fn start(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    fn next(&self) -> Value {
        self.lines
            .recv_timeout(Duration::from_secs(60))
            .expect("zeroclaw answered (60 s deadlock guard)")
    }

    /// Reads until the response to `id`; returns the notifications seen before it, and it.
    fn wait_response(&self, id: u64) -> (Vec<Value>, Value) {
        let mut before = Vec::new();
        loop {
            let message = self.next();
            if message["id"] == id {
                return (before, message);
            }
            before.push(message);
        }
    }

    fn call(&mut self, method: &str, params: Value) -> (Vec<Value>, Value) {
        let id = self.start(method, params);
        self.wait_response(id)
    }

    fn new_session(&mut self, cwd: &std::path::Path) -> String {
        let (_, response) = self.call("session/new", json!({"cwd": cwd}));
        let id = response["result"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("session/new failed: {response}"))
            .to_owned();
        // The session's commands follow its answer.
        let commands = self.next();
        assert_eq!(
            commands["params"]["update"]["sessionUpdate"], "available_commands_update",
            "{commands}"
        );
        id
    }
}

impl Drop for Acp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn updates(messages: &[Value]) -> Vec<Value> {
    messages
        .iter()
        .filter(|m| m["method"] == "session/update")
        .map(|m| m["params"]["update"].clone())
        .filter(|u| {
            // The session's title and commands, not the turn's content.
            !matches!(
                u["sessionUpdate"].as_str(),
                Some("session_info_update" | "available_commands_update")
            )
        })
        .collect()
}

fn kinds(updates: &[Value]) -> Vec<String> {
    updates
        .iter()
        .map(|u| u["sessionUpdate"].as_str().unwrap_or("?").to_owned())
        .collect()
}

#[test]
fn a_streamed_turn_is_answered_and_replayed_after_a_restart() {
    let model = ModelServer::start_blocking(vec![Reply::Sse(vec![
        reasoning("thinking"),
        text("Hello, "),
        text("world"),
        finish("stop"),
    ])]);
    let config = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let mut acp = Acp::spawn(config.path(), &model);
    let session = acp.new_session(work.path());
    let (before, response) = acp.call(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]}),
    );
    assert_eq!(
        without_usage(&response["result"]),
        json!({"sessionId": session, "stopReason": "end_turn", "content": "Hello, world"})
    );
    let streamed = updates(&before);
    assert_eq!(
        kinds(&streamed),
        [
            "agent_thought_chunk",
            "agent_message_chunk",
            "agent_message_chunk"
        ]
    );
    assert_eq!(model.requests()[0]["messages"][0]["content"], "hi");
    drop(acp);

    let mut acp = Acp::spawn(config.path(), &model);
    let (before, response) = acp.call("session/load", json!({"sessionId": session}));
    assert!(response["result"]["modes"].is_object(), "{response}");
    let replayed = updates(&before);
    assert_eq!(
        kinds(&replayed),
        [
            "user_message_chunk",
            "agent_thought_chunk",
            "agent_message_chunk"
        ]
    );
    assert_eq!(replayed[0]["content"]["text"], "hi");
    assert_eq!(replayed[2]["content"]["text"], "Hello, world");
}

#[test]
fn a_tool_call_split_across_chunks_runs_and_its_result_goes_back_to_the_model() {
    let todos = r#"{"todos":[{"content":"write tests","status":"in_progress","priority":"high"}]}"#;
    let (first, rest) = todos.split_at(17);
    let model = ModelServer::start_blocking(vec![
        Reply::Sse(vec![
            tool_call_start(0, "call_1", "todo_write"),
            tool_call_args(0, first),
            tool_call_args(0, rest),
            finish("tool_calls"),
        ]),
        text_reply("Planned."),
    ]);
    let config = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let mut acp = Acp::spawn(config.path(), &model);
    let session = acp.new_session(work.path());
    let (before, response) = acp.call(
        "session/prompt",
        json!({"sessionId": session, "prompt": "plan it"}),
    );
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    let streamed = updates(&before);
    assert_eq!(
        kinds(&streamed),
        [
            "tool_call",
            "tool_call_update",
            "plan",
            "tool_call_update",
            "agent_message_chunk"
        ]
    );
    assert_eq!(streamed[0]["toolCallId"], "call_1");
    assert_eq!(streamed[0]["status"], "pending");
    assert_eq!(
        streamed[0]["rawInput"]["todos"][0]["content"],
        "write tests"
    );
    assert_eq!(
        streamed[2]["entries"],
        json!([{"content": "write tests", "status": "in_progress", "priority": "high"}])
    );
    assert_eq!(streamed[3]["status"], "completed");
    let second = &model.requests()[1]["messages"];
    let tool_message = second
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap_or_else(|| panic!("no tool result sent back: {second}"));
    assert_eq!(tool_message["tool_call_id"], "call_1");
}

#[test]
fn cancel_mid_stream_answers_cancelled_after_every_update_of_the_turn() {
    let model = ModelServer::start_blocking(vec![Reply::Sse(vec![
        text("partial"),
        text(" never").delayed(30_000),
        finish("stop"),
    ])]);
    let config = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let mut acp = Acp::spawn(config.path(), &model);
    let session = acp.new_session(work.path());
    let prompt = acp.start(
        "session/prompt",
        json!({"sessionId": session, "prompt": "go"}),
    );
    let first = acp.next();
    assert_eq!(first["params"]["update"]["content"]["text"], "partial");
    acp.send(
        json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"session_id": session}}),
    );
    let (before, response) = acp.wait_response(prompt);
    assert!(updates(&before).is_empty(), "updates after the response");
    assert_eq!(
        without_usage(&response["result"]),
        json!({"sessionId": session, "stopReason": "cancelled",
               "content": "partial\n\n[turn cancelled via client]"})
    );
    assert!(model.wait_aborted(1), "the model stream was not aborted");
    // The session is idle again: a cancel now is a no-op and a new prompt is accepted.
    model.push(text_reply("again"));
    let (_, response) = acp.call("session/cancel", json!({"sessionId": session}));
    assert_eq!(response["result"], json!({}));
    let (_, response) = acp.call(
        "session/prompt",
        json!({"sessionId": session, "prompt": "go on"}),
    );
    assert_eq!(response["result"]["content"], "again");
}

#[test]
fn a_provider_error_fails_the_prompt_with_the_provider_and_status() {
    let model =
        ModelServer::start_blocking(vec![Reply::Status(400, "{\"error\":\"bad model\"}".into())]);
    let config = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let mut acp = Acp::spawn(config.path(), &model);
    let session = acp.new_session(work.path());
    let (_, response) = acp.call(
        "session/prompt",
        json!({"sessionId": session, "prompt": "go"}),
    );
    let error = &response["error"];
    assert_eq!(error["code"], -32603, "{response}");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("local") && message.contains("400"),
        "{message}"
    );
    assert!(!message.contains("test-key"), "{message}");
}

#[test]
fn an_idle_session_is_reaped_from_memory_but_can_be_loaded_again() {
    let model = ModelServer::start_blocking(vec![]);
    let config = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let mut acp = Acp::spawn_with(config.path(), &model, &["--session-timeout", "1"]);
    let session = acp.new_session(work.path());
    // Poll with a cancel request (a no-op while the session is active) until it is gone; the
    // loop bound is a deadlock guard, not a timing assertion.
    let mut reaped = false;
    for _ in 0..300 {
        let (_, response) = acp.call("session/cancel", json!({"sessionId": session}));
        if response["error"]["code"] == -32000 {
            reaped = true;
            break;
        }
        assert_eq!(response["result"], json!({}), "{response}");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(reaped, "the idle session was never reaped");
    let (_, response) = acp.call("session/resume", json!({"sessionId": session}));
    assert!(response["result"]["modes"].is_object(), "{response}");
}

/// A prompt answer without its `_meta.zeroclaw.usage` (checked to be there: the turn's totals).
fn without_usage(result: &Value) -> Value {
    assert!(
        result["_meta"]["zeroclaw"]["usage"].is_object(),
        "the answer carries the turn's usage: {result}"
    );
    let mut rest = result.clone();
    rest.as_object_mut().unwrap().remove("_meta");
    rest
}
