//! Prompt turns end to end against the loopback model: streamed text and reasoning, prompt
//! forms and content blocks, tool calls split across chunks (`todo_write` → `plan`), the
//! tool-loop cap, stop-reason mapping, provider errors and missing API keys.

use crate::support;

use serde_json::{Value, json};
use support::acp_client::{AcpClient, agent_text, chunk_text, is_response};
use support::acp_fixture::{Fixture, assert_tool_calls_well_formed, last_content};
use support::model_server::{
    Reply, finish, reasoning, text, text_reply, tool_call_args, tool_call_start,
};

fn result_of(resp: &Value) -> &Value {
    assert!(resp.get("error").is_none(), "prompt failed: {resp}");
    &resp["result"]
}

#[test]
fn a_text_turn_streams_chunks_before_answering_end_turn() {
    let fx = Fixture::start(vec![Reply::Sse(vec![
        text("Hel"),
        text("lo "),
        text("world"),
        finish("stop"),
    ])]);
    let resp = fx.prompt("say hello");
    let result = result_of(&resp);
    assert_eq!(result["stopReason"], "end_turn");
    assert_eq!(result["sessionId"], fx.session.as_str());
    assert_eq!(result["content"], "Hello world");
    let updates = fx.updates();
    assert_eq!(agent_text(&updates), "Hello world");
    assert!(
        updates
            .iter()
            .all(|u| u["sessionUpdate"] == "agent_message_chunk")
    );

    let messages = fx.client.messages();
    let answered = messages.iter().position(|m| m["id"] == resp["id"]).unwrap();
    let last_update = messages
        .iter()
        .rposition(|m| m["method"] == "session/update");
    assert!(
        last_update.unwrap() < answered,
        "updates must precede the response"
    );

    let request = &fx.model.requests()[0];
    assert_eq!(request["model"], "m");
    assert_eq!(request["stream"], true);
    assert_eq!(last_content(&fx.model_messages(0), "user"), "say hello");
}

#[test]
fn prompt_forms_and_content_blocks_reach_the_model_joined_by_blank_lines() {
    let fx = Fixture::start(vec![text_reply("one"), text_reply("two")]);
    let resp = fx.client.request(
        "session/prompt",
        json!({"sessionId": fx.session, "prompt": "a plain string"}),
    );
    assert_eq!(result_of(&resp)["stopReason"], "end_turn");
    assert_eq!(
        last_content(&fx.model_messages(0), "user"),
        "a plain string"
    );

    let prompt = json!([
        {"text": "first part"},
        {"type": "text", "text": "second part"},
        {"type": "resource", "resource": {"uri": "file:///p/notes.md", "text": "RESOURCE BODY"}},
        {"type": "resource_link", "uri": "file:///p/spec.pdf", "name": "spec.pdf"},
    ]);
    let resp = fx.client.request(
        "session/prompt",
        json!({"session_id": fx.session, "prompt": prompt}),
    );
    assert_eq!(result_of(&resp)["stopReason"], "end_turn");
    let user = last_content(&fx.model_messages(1), "user");
    assert!(
        user.starts_with("first part\n\nsecond part\n\n"),
        "{user:?}"
    );
    let body = user.find("RESOURCE BODY").expect("text resource inlined");
    let link = user
        .find("file:///p/spec.pdf")
        .expect("resource_link marker");
    assert!(body < link, "parts keep their order: {user:?}");
}

#[test]
fn audio_blocks_and_bad_image_blocks_are_rejected_before_the_model_is_called() {
    let fx = Fixture::start(vec![]);
    let blocks = [
        // A PNG signature alone is no PNG image.
        json!({"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="}),
        json!({"type": "audio", "mimeType": "audio/wav", "data": "UklGRg=="}),
    ];
    for block in blocks {
        let error = fx.client.call_err(
            "session/prompt",
            json!({"sessionId": fx.session, "prompt": [{"type": "text", "text": "see"}, block]}),
        );
        assert_eq!(error["code"], -32602, "{error}");
    }
    assert!(fx.model.requests().is_empty());
}

#[test]
fn reasoning_streams_as_thought_chunks() {
    let fx = Fixture::start(vec![Reply::Sse(vec![
        reasoning("weighing "),
        reasoning("options"),
        text("answer"),
        finish("stop"),
    ])]);
    let resp = fx.prompt("think");
    assert_eq!(result_of(&resp)["content"], "answer");
    let updates = fx.updates();
    assert_eq!(
        chunk_text(&updates, "agent_thought_chunk"),
        "weighing options"
    );
    assert_eq!(agent_text(&updates), "answer");
    let first_thought = updates
        .iter()
        .position(|u| u["sessionUpdate"] == "agent_thought_chunk");
    let first_text = updates
        .iter()
        .position(|u| u["sessionUpdate"] == "agent_message_chunk");
    assert!(first_thought < first_text);
}

fn todo_call_split(id: &str) -> Reply {
    Reply::Sse(vec![
        tool_call_start(0, id, "todo_write"),
        tool_call_args(0, "{\"todos\": [{\"con"),
        tool_call_args(
            0,
            "tent\": \"write tests\", \"status\": \"in_progress\", \"priority\": \"high\"},",
        ),
        tool_call_args(
            0,
            " {\"content\": \"ship\", \"status\": \"pending\", \"priority\": \"low\"}]}",
        ),
        finish("tool_calls"),
    ])
}

#[test]
fn a_tool_call_split_across_chunks_runs_todo_write_and_loops_back_to_the_model() {
    let fx = Fixture::start(vec![todo_call_split("call_1"), text_reply("planned")]);
    let resp = fx.prompt("plan the work");
    let result = result_of(&resp);
    assert_eq!(result["stopReason"], "end_turn");
    assert_eq!(result["content"], "planned");

    let updates = fx.updates();
    assert_eq!(assert_tool_calls_well_formed(&updates).len(), 1);
    let kinds: Vec<&str> = updates
        .iter()
        .map(|u| u["sessionUpdate"].as_str().unwrap())
        .collect();
    let call = updates
        .iter()
        .find(|u| u["sessionUpdate"] == "tool_call")
        .expect("tool_call announced");
    assert_eq!(call["status"], "pending");
    let call_id = call["toolCallId"].clone();
    let plan = updates
        .iter()
        .find(|u| u["sessionUpdate"] == "plan")
        .expect("plan");
    assert_eq!(
        plan["entries"],
        json!([
            {"content": "write tests", "status": "in_progress", "priority": "high"},
            {"content": "ship", "status": "pending", "priority": "low"},
        ])
    );
    let call_updates: Vec<&Value> = updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "tool_call_update")
        .collect();
    assert!(call_updates.iter().all(|u| u["toolCallId"] == call_id));
    assert_eq!(call_updates.last().unwrap()["status"], "completed");
    assert_eq!(
        call_updates
            .iter()
            .filter(|u| u["status"] == "completed")
            .count(),
        1
    );
    let announced = kinds.iter().position(|k| *k == "tool_call").unwrap();
    let completed = updates
        .iter()
        .rposition(|u| u["sessionUpdate"] == "tool_call_update")
        .unwrap();
    let text_at = kinds
        .iter()
        .position(|k| *k == "agent_message_chunk")
        .unwrap();
    assert!(announced < completed && completed < text_at, "{kinds:?}");

    let first = &fx.model.requests()[0];
    let tools = first["tools"].as_array().expect("tools offered");
    assert!(tools.iter().any(|t| t["function"]["name"] == "todo_write"));
    let second = fx.model_messages(1);
    let assistant = second
        .iter()
        .find(|m| m["role"] == "assistant")
        .expect("assistant turn");
    let fcall = &assistant["tool_calls"][0];
    assert_eq!(fcall["id"], "call_1");
    assert_eq!(fcall["function"]["name"], "todo_write");
    let args: Value = serde_json::from_str(fcall["function"]["arguments"].as_str().unwrap())
        .expect("arguments reassembled into JSON");
    assert_eq!(args["todos"][1]["content"], "ship");
    let tool_msg = second
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("tool result");
    assert_eq!(tool_msg["tool_call_id"], "call_1");
}

#[test]
fn a_failing_tool_is_reported_failed_and_the_model_sees_the_error() {
    let bad_args = Reply::Sse(vec![
        tool_call_start(0, "call_bad", "todo_write"),
        tool_call_args(
            0,
            r#"{"todos": [{"content": "x", "status": "bogus", "priority": "high"}]}"#,
        ),
        finish("tool_calls"),
    ]);
    let unknown_tool = Reply::Sse(vec![
        tool_call_start(0, "call_unknown", "no_such_tool"),
        tool_call_args(0, "{}"),
        finish("tool_calls"),
    ]);
    let fx = Fixture::start(vec![bad_args, unknown_tool, text_reply("recovered")]);
    let resp = fx.prompt("try tools");
    assert_eq!(result_of(&resp)["stopReason"], "end_turn");
    assert_eq!(result_of(&resp)["content"], "recovered");
    let updates = fx.updates();
    let calls = assert_tool_calls_well_formed(&updates);
    assert!(calls.iter().all(|(_, s)| s == "failed"), "{calls:?}");
    let finals: Vec<&Value> = updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "tool_call_update")
        .filter(|u| u["status"] == "completed" || u["status"] == "failed")
        .collect();
    assert_eq!(finals.len(), 2, "one final update per call: {updates:?}");
    for update in finals {
        assert_eq!(update["status"], "failed", "{update}");
        let reason = update["content"][0]["content"]["text"]
            .as_str()
            .unwrap_or("");
        assert!(
            !reason.is_empty(),
            "a failed call carries its reason: {update}"
        );
    }
    assert!(!updates.iter().any(|u| u["sessionUpdate"] == "plan"));
    let third = fx.model_messages(2);
    let tool_results: Vec<&Value> = third.iter().filter(|m| m["role"] == "tool").collect();
    assert_eq!(tool_results.len(), 2);
}

#[test]
fn max_tool_iterations_ends_the_turn_with_max_turn_requests() {
    let script = (0..6)
        .map(|n| todo_call_split(&format!("call_{n}")))
        .collect();
    let fx = Fixture::start_with(script, |b| {
        b.env("ZEROCLAW_agents__coder__max_tool_iterations", "2")
    });
    let resp = fx.prompt("loop forever");
    assert_eq!(result_of(&resp)["stopReason"], "max_turn_requests");
    let calls = assert_tool_calls_well_formed(&fx.updates());
    let completed = calls.iter().filter(|(_, s)| s == "completed").count();
    assert_eq!(
        completed, 2,
        "exactly the capped number of rounds ran: {calls:?}"
    );
    let calls = fx.model.requests().len();
    assert!(
        (2..=3).contains(&calls),
        "a cap of 2 iterations made {calls} model calls"
    );
}

#[test]
fn finish_reasons_map_to_stop_reasons() {
    let fx = Fixture::start(vec![
        Reply::Sse(vec![text("trunc"), finish("length")]),
        Reply::Sse(vec![finish("content_filter")]),
    ]);
    let resp = fx.prompt("long");
    assert_eq!(result_of(&resp)["stopReason"], "max_tokens");
    assert_eq!(result_of(&resp)["content"], "trunc");
    let resp = fx.prompt("forbidden");
    assert_eq!(result_of(&resp)["stopReason"], "refusal");
}

#[test]
fn a_provider_http_error_names_provider_and_status_but_never_the_key() {
    let secret = "sk-zc-SECRET-4242";
    let fx = Fixture::start_with(
        vec![
            Reply::Status(401, r#"{"error":{"message":"invalid api key"}}"#.into()),
            text_reply("fine now"),
        ],
        |b| b.env("ZEROCLAW_providers__local__api_key", secret),
    );
    let resp = fx.prompt("the failing prompt");
    let error = resp
        .get("error")
        .unwrap_or_else(|| panic!("expected an error: {resp}"));
    assert_eq!(error["code"], -32603);
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("local"), "names the provider: {message}");
    assert!(message.contains("401"), "names the status: {message}");
    assert!(!resp.to_string().contains(secret), "leaks the key: {resp}");
    assert!(
        !fx.client.stderr().contains(secret),
        "the key is in the log"
    );
    assert_eq!(fx.model.requests()[0]["model"], "m");

    let resp = fx.prompt("after the error");
    assert_eq!(result_of(&resp)["content"], "fine now");
    let messages = fx.model_messages(1);
    assert!(
        !messages
            .iter()
            .any(|m| m.to_string().contains("the failing prompt")),
        "a failed turn leaves nothing in the history: {messages:?}"
    );
}

#[test]
fn transient_5xx_before_the_first_token_is_retried() {
    let fx = Fixture::start(vec![
        Reply::Status(503, "overloaded".into()),
        text_reply("after retry"),
    ]);
    let resp = fx.prompt("retry me");
    assert_eq!(result_of(&resp)["content"], "after retry");
    assert_eq!(fx.model.requests().len(), 2);
}

#[test]
fn a_missing_api_key_names_the_variable_to_set() {
    let work = tempfile::tempdir().unwrap();
    let client = AcpClient::builder()
        .env("ZEROCLAW_providers__local__kind", "openai")
        .env(
            "ZEROCLAW_providers__local__base_url",
            "http://127.0.0.1:9/v1",
        )
        .env(
            "ZEROCLAW_providers__local__api_key_env",
            "ZC_TEST_UNSET_KEY",
        )
        .env("ZEROCLAW_agents__coder__provider", "local")
        .env("ZEROCLAW_agents__coder__model", "m")
        .spawn();
    client.initialize();
    let session = client.new_session(work.path());
    let resp = client.prompt(&session, "hi");
    let message = resp["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("ZC_TEST_UNSET_KEY"), "{resp}");

    // The built-in default agent: OpenRouter, key from OPENROUTER_API_KEY (scrubbed here).
    let client = AcpClient::builder().spawn();
    client.initialize();
    let session = client.new_session(work.path());
    let resp = client.prompt(&session, "hi");
    let message = resp["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("OPENROUTER_API_KEY"), "{resp}");
    assert!(
        client.messages().iter().filter(|m| is_response(m)).count() >= 3,
        "every request answered"
    );
}

// The same tests over WebSocket to `zeroclaw daemon`, TCP and Unix socket.
crate::over_websocket!(
    a_text_turn_streams_chunks_before_answering_end_turn,
    prompt_forms_and_content_blocks_reach_the_model_joined_by_blank_lines,
    audio_blocks_and_bad_image_blocks_are_rejected_before_the_model_is_called,
    reasoning_streams_as_thought_chunks,
    a_tool_call_split_across_chunks_runs_todo_write_and_loops_back_to_the_model,
    a_failing_tool_is_reported_failed_and_the_model_sees_the_error,
    max_tool_iterations_ends_the_turn_with_max_turn_requests,
    finish_reasons_map_to_stop_reasons,
    a_provider_http_error_names_provider_and_status_but_never_the_key,
    a_missing_api_key_names_the_variable_to_set,
);
