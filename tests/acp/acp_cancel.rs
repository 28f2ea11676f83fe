//! Interrupting and ending turns and sessions: `session/cancel` (notification, request, idle),
//! `$/cancel_request` (a prompt ends `cancelled`, anything else -32800), a busy session (-32003),
//! `session/stop` (waits for the turn) versus `session/close` (cancels it), and the
//! `max_sessions` limit (-32001); each zeroclaw error with its `data.reason`.

use crate::support;

use serde_json::{Value, json};
use support::acp_client::{AcpClient, agent_text, is_response, is_update_for, prompt_params};
use support::acp_fixture::Fixture;
use support::model_server::{Reply, finish, text, text_reply};

/// "Hello world" at once, then a chunk that would take far longer than any test.
fn stalling_stream() -> Reply {
    Reply::Sse(vec![
        text("Hello "),
        text("world"),
        text(" never").delayed(600_000),
        finish("stop"),
    ])
}

/// Sends a prompt and waits until the model's first words reached the client.
fn start_stalled_turn(fx: &Fixture) -> Value {
    let id = fx
        .client
        .send_request("session/prompt", prompt_params(&fx.session, "go"));
    let session = fx.session.clone();
    fx.client.wait_for(|m| {
        is_update_for(m, &session) && m["params"]["update"]["content"]["text"] == "world"
    });
    id
}

/// Index of a message in the client's log.
fn index_of(client: &AcpClient, pred: impl Fn(&Value) -> bool) -> usize {
    client.wait_for_from(0, pred).0
}

fn assert_cancelled_with_partial_text(fx: &Fixture, prompt_id: &Value) {
    let resp = fx.client.wait_response(prompt_id);
    let result = &resp["result"];
    assert_eq!(result["stopReason"], "cancelled", "{resp}");
    assert_eq!(
        result["content"],
        "Hello world\n\n[turn cancelled via client]"
    );
    let answered = index_of(&fx.client, |m| is_response(m) && m["id"] == *prompt_id);
    let session = fx.session.clone();
    let last_update = fx
        .client
        .messages()
        .iter()
        .rposition(|m| is_update_for(m, &session))
        .unwrap();
    assert!(
        last_update < answered,
        "every update of the turn precedes the cancelled response"
    );
}

/// After a cancelled turn the session takes the next prompt, and the stalled chunk never shows.
fn assert_session_usable_afterwards(fx: &Fixture) {
    fx.model.push(text_reply("again"));
    let before = fx.client.message_count();
    let resp = fx.prompt("next");
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");
    let later: Vec<Value> = fx
        .client
        .messages_between(before, usize::MAX)
        .into_iter()
        .filter(|m| is_update_for(m, &fx.session))
        .map(|m| m["params"]["update"].clone())
        .collect();
    assert_eq!(agent_text(&later), "again");
    assert!(!agent_text(&fx.updates()).contains("never"));
}

#[test]
fn cancel_notification_during_a_stream_answers_cancelled_with_the_partial_text() {
    let fx = Fixture::start(vec![stalling_stream()]);
    let prompt_id = start_stalled_turn(&fx);
    fx.client
        .notify("session/cancel", json!({"sessionId": fx.session}));
    assert_cancelled_with_partial_text(&fx, &prompt_id);
    assert!(
        fx.model.wait_aborted(1),
        "cancel hangs up on the model stream"
    );
    assert_session_usable_afterwards(&fx);
}

#[test]
fn cancel_as_a_request_answers_empty_object() {
    let fx = Fixture::start(vec![stalling_stream()]);
    let prompt_id = start_stalled_turn(&fx);
    let result = fx
        .client
        .call("session/cancel", json!({"session_id": fx.session}));
    assert_eq!(result, json!({}));
    assert_cancelled_with_partial_text(&fx, &prompt_id);
}

#[test]
fn cancel_when_idle_is_a_silent_no_op() {
    let fx = Fixture::start(vec![text_reply("still fine")]);
    let from = fx.client.message_count();
    fx.client
        .notify("session/cancel", json!({"sessionId": fx.session}));
    let result = fx
        .client
        .call("session/cancel", json!({"sessionId": fx.session}));
    assert_eq!(result, json!({}));
    let said = fx.client.messages_between(from, usize::MAX);
    assert_eq!(said.len(), 1, "only the request was answered: {said:?}");
    let resp = fx.prompt("hi");
    assert_eq!(resp["result"]["content"], "still fine");
}

/// The next prompt's model request carries the cancelled turn, as after `session/cancel`.
fn assert_cancelled_turn_in_history(fx: &Fixture) {
    let requests = fx.model.requests();
    let last = requests.last().expect("the next prompt reached the model");
    assert!(
        last.to_string().contains("Hello world"),
        "the cancelled turn is part of the history: {last}"
    );
}

#[test]
fn cancel_request_with_request_id_cancels_the_prompt_like_session_cancel() {
    let fx = Fixture::start(vec![stalling_stream()]);
    let prompt_id = start_stalled_turn(&fx);
    fx.client
        .notify("$/cancel_request", json!({"requestId": prompt_id}));
    assert_cancelled_with_partial_text(&fx, &prompt_id);
    assert!(
        fx.model.wait_aborted(1),
        "the cancelled request stops the model"
    );
    assert_session_usable_afterwards(&fx);
    assert_cancelled_turn_in_history(&fx);
}

#[test]
fn cancel_request_with_the_id_alias_cancels_the_prompt_too() {
    let fx = Fixture::start(vec![stalling_stream()]);
    let prompt_id = start_stalled_turn(&fx);
    fx.client
        .notify("$/cancel_request", json!({"id": prompt_id}));
    assert_cancelled_with_partial_text(&fx, &prompt_id);
    assert_session_usable_afterwards(&fx);
}

#[test]
fn cancel_request_for_another_request_answers_request_cancelled() {
    let fx = Fixture::start(vec![stalling_stream()]);
    let prompt_id = start_stalled_turn(&fx);
    // `session/stop` waits for the stalled turn: a request that is still running.
    let stop_id = fx
        .client
        .send_request("session/stop", json!({"sessionId": fx.session}));
    fx.client
        .notify("$/cancel_request", json!({"requestId": stop_id}));
    let resp = fx.client.wait_response(&stop_id);
    assert_eq!(resp["error"]["code"], -32800, "{resp}");
    fx.client
        .notify("session/cancel", json!({"sessionId": fx.session}));
    assert_cancelled_with_partial_text(&fx, &prompt_id);
    assert_session_usable_afterwards(&fx);
}

#[test]
fn a_second_prompt_while_a_turn_runs_is_session_busy() {
    let fx = Fixture::start(vec![stalling_stream()]);
    let prompt_id = start_stalled_turn(&fx);
    let error = fx
        .client
        .call_err("session/prompt", prompt_params(&fx.session, "me too"));
    assert_eq!(error["code"], -32003, "{error}");
    assert_eq!(error["data"]["reason"], "session_busy", "{error}");
    fx.client
        .notify("session/cancel", json!({"sessionId": fx.session}));
    assert_cancelled_with_partial_text(&fx, &prompt_id);
}

#[test]
fn stop_waits_for_the_running_turn_then_ends_the_session() {
    let fx = Fixture::start(vec![Reply::Sse(vec![
        text("first "),
        text("second").delayed(700),
        finish("stop"),
    ])]);
    let prompt_id = fx
        .client
        .send_request("session/prompt", prompt_params(&fx.session, "go"));
    let session = fx.session.clone();
    fx.client.wait_for(|m| {
        is_update_for(m, &session)
            && m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    });
    let stop_id = fx
        .client
        .send_request("session/stop", json!({"sessionId": fx.session}));
    let stop = fx.client.wait_response(&stop_id);
    assert_eq!(
        stop["result"],
        json!({"sessionId": fx.session, "stopped": true})
    );
    let prompt = fx.client.wait_response(&prompt_id);
    assert_eq!(
        prompt["result"]["stopReason"], "end_turn",
        "stop never interrupts"
    );
    assert_eq!(prompt["result"]["content"], "first second");
    let prompt_at = index_of(&fx.client, |m| is_response(m) && m["id"] == prompt_id);
    let stop_at = index_of(&fx.client, |m| is_response(m) && m["id"] == stop_id);
    assert!(prompt_at < stop_at, "stop answers after the turn finished");
    let error = fx
        .client
        .call_err("session/prompt", prompt_params(&fx.session, "more"));
    assert_eq!(error["code"], -32000);
    assert_eq!(error["data"]["reason"], "session_not_found", "{error}");
}

#[test]
fn close_cancels_the_running_turn_and_deactivates_the_session() {
    let fx = Fixture::start(vec![stalling_stream()]);
    let prompt_id = start_stalled_turn(&fx);
    let result = fx
        .client
        .call("session/close", json!({"sessionId": fx.session}));
    assert_eq!(result, json!({}));
    let prompt = fx.client.wait_response(&prompt_id);
    assert_eq!(prompt["result"]["stopReason"], "cancelled", "{prompt}");
    assert!(
        fx.model.wait_aborted(1),
        "close hangs up on the model stream"
    );
    let error = fx
        .client
        .call_err("session/prompt", prompt_params(&fx.session, "more"));
    assert_eq!(error["code"], -32000);
    let error = fx
        .client
        .call_err("session/close", json!({"sessionId": fx.session}));
    assert_eq!(error["code"], -32000, "closing an inactive session");
    let error = fx
        .client
        .call_err("session/stop", json!({"sessionId": fx.session}));
    assert_eq!(error["code"], -32000, "stopping an inactive session");
}

#[test]
fn the_session_limit_holds_and_frees_up_on_close_and_stop() {
    let client = AcpClient::builder()
        .model("http://127.0.0.1:9/v1")
        .arg("--max-sessions")
        .arg("2")
        .spawn();
    client.initialize();
    let work = tempfile::tempdir().unwrap();
    let first = client.new_session(work.path());
    let second = client.new_session(work.path());
    let new = json!({"cwd": work.path(), "mcpServers": []});
    let error = client.call_err("session/new", new.clone());
    assert_eq!(error["code"], -32001, "{error}");
    assert_eq!(error["data"]["reason"], "session_limit_reached", "{error}");
    client.call("session/close", json!({"sessionId": first}));
    let third = client.new_session(work.path());
    assert_eq!(client.call_err("session/new", new.clone())["code"], -32001);
    client.call("session/stop", json!({"sessionId": second}));
    client.new_session(work.path());
    assert_eq!(client.call_err("session/new", new)["code"], -32001);
    assert_ne!(first, third);
}

#[test]
fn the_session_limit_from_the_environment() {
    let client = AcpClient::builder()
        .model("http://127.0.0.1:9/v1")
        .env("ZEROCLAW_acp__max_sessions", "1")
        .spawn();
    client.initialize();
    let work = tempfile::tempdir().unwrap();
    client.new_session(work.path());
    let error = client.call_err("session/new", json!({"cwd": work.path(), "mcpServers": []}));
    assert_eq!(error["code"], -32001);
}

#[test]
fn idle_sessions_are_reaped_from_memory_but_kept_in_the_store() {
    let client = AcpClient::builder()
        .model("http://127.0.0.1:9/v1")
        .arg("--max-sessions")
        .arg("1")
        .arg("--session-timeout")
        .arg("1")
        .spawn();
    client.initialize();
    let work = tempfile::tempdir().unwrap();
    let first = client.new_session(work.path());
    // The slot frees once the idle session is reaped (hang-guarded, no timing assertion).
    let second = loop {
        let resp = client.request("session/new", json!({"cwd": work.path(), "mcpServers": []}));
        match resp.get("result") {
            Some(result) => break result["sessionId"].as_str().unwrap().to_string(),
            None => assert_eq!(resp["error"]["code"], -32001, "{resp}"),
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert_ne!(first, second);
    let error = client.call_err("session/prompt", prompt_params(&first, "still there?"));
    assert_eq!(error["code"], -32000, "a reaped session is not active");
    client.call("session/close", json!({"sessionId": second}));
    let result = client.call("session/resume", json!({"sessionId": first}));
    assert!(
        result["modes"].is_object() && result["configOptions"].is_array(),
        "the reaped session is still in the store: {result}"
    );
}

#[test]
fn a_stalled_turn_blocks_neither_other_sessions_nor_other_requests() {
    let fx = Fixture::start(vec![stalling_stream(), text_reply("other session")]);
    let prompt_id = start_stalled_turn(&fx);
    let other = fx.client.new_session(fx.work.path());
    let resp = fx.client.prompt(&other, "meanwhile");
    assert_eq!(resp["result"]["content"], "other session", "{resp}");
    assert_eq!(fx.client.initialize()["protocolVersion"], 1);
    assert!(
        fx.client
            .messages()
            .iter()
            .all(|m| !(is_response(m) && m["id"] == prompt_id)),
        "the stalled turn is still running"
    );
    fx.client
        .notify("session/cancel", json!({"sessionId": fx.session}));
    assert_cancelled_with_partial_text(&fx, &prompt_id);
}

#[test]
fn ten_sessions_stream_at_once_without_cross_talk() {
    let replies: Vec<Reply> = (0..10)
        .map(|k| {
            let pieces = (0..5).map(|p| text(&format!("r{k}p{p} ")).delayed(5));
            Reply::Sse(pieces.chain([finish("stop")]).collect())
        })
        .collect();
    let fx = Fixture::start_with(replies, |b| b.arg("--max-sessions").arg("10"));
    let mut sessions = vec![fx.session.clone()];
    sessions.extend((1..10).map(|_| fx.client.new_session(fx.work.path())));
    let ids: Vec<Value> = sessions
        .iter()
        .map(|s| {
            fx.client
                .send_request("session/prompt", prompt_params(s, "race"))
        })
        .collect();
    let mut used = Vec::new();
    for (session, id) in sessions.iter().zip(&ids) {
        let resp = fx.client.wait_response(id);
        let content = resp["result"]["content"].as_str().unwrap().to_string();
        assert_eq!(agent_text(&fx.client.updates_for(session)), content);
        let k = &content[1..content.find('p').unwrap()];
        let whole: String = (0..5).map(|p| format!("r{k}p{p} ")).collect();
        assert_eq!(content, whole, "one reply per session, no foreign chunks");
        used.push(k.to_string());
    }
    used.sort();
    used.dedup();
    assert_eq!(used.len(), 10, "every reply went to exactly one session");
}

// The same tests over WebSocket to `zeroclaw daemon`, TCP and Unix socket.
crate::over_websocket!(
    cancel_notification_during_a_stream_answers_cancelled_with_the_partial_text,
    cancel_as_a_request_answers_empty_object,
    cancel_when_idle_is_a_silent_no_op,
    cancel_request_with_request_id_cancels_the_prompt_like_session_cancel,
    cancel_request_with_the_id_alias_cancels_the_prompt_too,
    cancel_request_for_another_request_answers_request_cancelled,
    a_second_prompt_while_a_turn_runs_is_session_busy,
    stop_waits_for_the_running_turn_then_ends_the_session,
    close_cancels_the_running_turn_and_deactivates_the_session,
    the_session_limit_holds_and_frees_up_on_close_and_stop,
    the_session_limit_from_the_environment,
    idle_sessions_are_reaped_from_memory_but_kept_in_the_store,
    a_stalled_turn_blocks_neither_other_sessions_nor_other_requests,
    ten_sessions_stream_at_once_without_cross_talk,
);
