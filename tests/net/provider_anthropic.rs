//! The Anthropic Messages provider through the real binary, against the loopback model server
//! replaying hand-written streams: a text turn and the request it sends, tool use whose input
//! arrives in many pieces, thinking then tool use (the signed and redacted blocks go back),
//! stop reasons, `overloaded_error` mid-stream, a 429 with `retry-after`, an invalid key that
//! is never echoed, and cancellation mid-stream (the server sees the request dropped).

use crate::support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::acp_client::{Builder, agent_text, chunk_text, is_update_for, prompt_params};
use support::acp_fixture::{Fixture, assert_tool_calls_well_formed};
use support::anthropic_stream::*;
use support::model_server::{Chunk, Reply};

const KEY: &str = "sk-ant-loopback-SECRET-77";

/// The `coder` agent on provider `local`, switched to the Anthropic kind.
fn anthropic(b: Builder) -> Builder {
    b.env("ZEROCLAW_providers__local__kind", "anthropic")
        .env("ZEROCLAW_providers__local__api_key", KEY)
        .env("ZEROCLAW_agents__coder__model", "claude-loopback")
        .env("ZEROCLAW_agents__coder__system_prompt", "be brief")
}

fn start(script: Vec<Reply>) -> Fixture {
    Fixture::start_with(script, anthropic)
}

fn result_of(resp: &Value) -> &Value {
    resp.get("result")
        .unwrap_or_else(|| panic!("expected a result: {resp}"))
}

fn todo_pieces() -> Vec<&'static str> {
    vec![
        "",
        "{\"to",
        "dos\"",
        ": [{\"con",
        "tent\": \"write ",
        "tests\", \"sta",
        "tus\": \"pending\", \"priority\": \"high\"}",
        "]}",
    ]
}

#[test]
fn a_text_turn_streams_and_sends_a_messages_request_with_cache_breakpoints() {
    let mut events = vec![message_start(3, 1200, 40), ping()];
    events.extend(text_block(0, &["Hel", "lo ", "✓"]));
    events.extend(message_end("end_turn", 7));
    let fx = start(vec![Reply::Events(events)]);
    let resp = fx.prompt("hi");
    assert_eq!(result_of(&resp)["stopReason"], "end_turn");
    assert_eq!(result_of(&resp)["content"], "Hello ✓");
    assert_eq!(agent_text(&fx.updates()), "Hello ✓");

    let body = &fx.model.requests()[0];
    assert_eq!(body["model"], "claude-loopback");
    assert_eq!(body["stream"], true);
    assert!(body["max_tokens"].as_u64().unwrap() > 0, "{body}");
    assert_eq!(
        body["system"],
        json!([{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}])
    );
    assert_eq!(
        body["messages"],
        json!([{"role": "user", "content": [{"type": "text", "text": "hi"}]}])
    );
    let tools = body["tools"].as_array().unwrap();
    assert!(tools.iter().any(|t| t["name"] == "todo_write"), "{tools:?}");
    assert!(tools.iter().all(|t| t["input_schema"].is_object()));
    assert_eq!(tools.last().unwrap()["cache_control"]["type"], "ephemeral");
    assert_eq!(fx.model.header(0, "x-api-key").as_deref(), Some(KEY));
    assert_eq!(
        fx.model.header(0, "anthropic-version").as_deref(),
        Some("2023-06-01")
    );
    assert_eq!(fx.model.header(0, "authorization"), None);
}

#[test]
fn a_tool_use_split_across_many_deltas_runs_and_its_result_goes_back() {
    let call = message(
        vec![
            text_block(0, &["Planning."]),
            tool_use_block(1, "toolu_01", "todo_write", &todo_pieces()),
        ],
        "tool_use",
    );
    let fx = start(vec![call, text_reply("planned")]);
    let resp = fx.prompt("plan it");
    assert_eq!(result_of(&resp)["stopReason"], "end_turn");
    assert_eq!(result_of(&resp)["content"], "Planning.planned");
    let updates = fx.updates();
    let calls = assert_tool_calls_well_formed(&updates);
    assert_eq!(calls, vec![(json!("toolu_01"), "completed".to_owned())]);
    let announce = updates
        .iter()
        .find(|u| u["sessionUpdate"] == "tool_call")
        .unwrap();
    assert_eq!(
        announce["rawInput"],
        json!({"todos": [{"content": "write tests", "status": "pending", "priority": "high"}]})
    );
    assert!(updates.iter().any(|u| u["sessionUpdate"] == "plan"));

    let messages = fx.model.requests()[1]["messages"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(messages.len(), 3, "{messages:?}");
    assert_eq!(messages[1]["role"], "assistant");
    assert_eq!(
        messages[1]["content"],
        json!([
            {"type": "text", "text": "Planning."},
            {"type": "tool_use", "id": "toolu_01", "name": "todo_write",
             "input": {"todos": [{"content": "write tests", "status": "pending", "priority": "high"}]}},
        ])
    );
    assert_eq!(messages[2]["role"], "user");
    assert_eq!(messages[2]["content"][0]["type"], "tool_result");
    assert_eq!(messages[2]["content"][0]["tool_use_id"], "toolu_01");
}

#[test]
fn thinking_then_tool_use_streams_thoughts_and_sends_the_blocks_back_signed() {
    let call = message(
        vec![
            thinking_block(0, &["Let me ", "plan."], "sig-EqQBCgIYAhIM"),
            redacted_block(1, "EmwKAhgBEgy3va3pzix"),
            tool_use_block(2, "toolu_02", "todo_write", &todo_pieces()),
        ],
        "tool_use",
    );
    let fx = start(vec![call, text_reply("done")]);
    let resp = fx.prompt("think first");
    assert_eq!(result_of(&resp)["content"], "done");
    assert_eq!(
        chunk_text(&fx.updates(), "agent_thought_chunk"),
        "Let me plan."
    );

    let messages = fx.model.requests()[1]["messages"]
        .as_array()
        .unwrap()
        .clone();
    let assistant = &messages[1]["content"];
    assert_eq!(
        assistant[0],
        json!({"type": "thinking", "thinking": "Let me plan.", "signature": "sig-EqQBCgIYAhIM"})
    );
    assert_eq!(
        assistant[1],
        json!({"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"})
    );
    assert_eq!(assistant[2]["type"], "tool_use");

    // The next turn still carries the step's blocks, read back from the history.
    fx.model.push(text_reply("again"));
    fx.prompt("and again");
    let messages = fx.model.requests()[2]["messages"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(messages[1]["content"][0]["signature"], "sig-EqQBCgIYAhIM");
}

#[test]
fn stop_reasons_map_to_acp_stop_reasons() {
    let fx = start(vec![
        message(vec![text_block(0, &["trunc"])], "max_tokens"),
        message(vec![], "refusal"),
        message(vec![text_block(0, &["x"])], "stop_sequence"),
    ]);
    assert_eq!(result_of(&fx.prompt("long"))["stopReason"], "max_tokens");
    assert_eq!(result_of(&fx.prompt("bad"))["stopReason"], "refusal");
    assert_eq!(result_of(&fx.prompt("seq"))["stopReason"], "end_turn");
}

#[test]
fn an_overloaded_error_mid_stream_fails_the_turn_and_keeps_nothing() {
    let mut events = vec![message_start(3, 0, 0)];
    events.extend(text_block(0, &["partial"]));
    events.push(error_event("overloaded_error", "Overloaded"));
    let fx = start(vec![Reply::Events(events), text_reply("recovered")]);
    let resp = fx.prompt("the failing prompt");
    let error = resp
        .get("error")
        .unwrap_or_else(|| panic!("expected an error: {resp}"));
    assert_eq!(error["code"], -32603);
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("overloaded_error") && message.contains("local"),
        "{message}"
    );
    assert_eq!(
        fx.model.requests().len(),
        1,
        "not retried after tokens arrived"
    );

    assert_eq!(result_of(&fx.prompt("again"))["content"], "recovered");
    let second = fx.model.requests()[1].to_string();
    assert!(!second.contains("the failing prompt"), "{second}");
}

#[test]
fn a_429_with_retry_after_and_a_529_are_retried_before_the_first_token() {
    let fx = start(vec![
        Reply::Http {
            status: 429,
            headers: vec![("retry-after".into(), "1".into())],
            body: error_body("rate_limit_error", "slow down"),
        },
        Reply::Status(529, error_body("overloaded_error", "Overloaded")),
        text_reply("after the pause"),
    ]);
    let started = Instant::now();
    let resp = fx.prompt("retry me");
    assert_eq!(result_of(&resp)["content"], "after the pause");
    assert_eq!(fx.model.requests().len(), 3);
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "the retry-after was honoured"
    );
}

#[test]
fn an_invalid_key_names_provider_and_status_and_never_echoes_the_key() {
    let body = error_body("authentication_error", &format!("invalid x-api-key {KEY}"));
    let fx = start(vec![Reply::Status(401, body)]);
    let resp = fx.prompt("hi");
    let error = resp
        .get("error")
        .unwrap_or_else(|| panic!("expected an error: {resp}"));
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("local")
            && message.contains("401")
            && message.contains("invalid x-api-key"),
        "{message}"
    );
    assert!(!resp.to_string().contains(KEY), "leaks the key: {resp}");
    assert!(!fx.client.stderr().contains(KEY), "the key is in the log");
    assert_eq!(fx.model.requests().len(), 1, "a 401 is not retried");
}

#[test]
fn the_key_defaults_to_anthropic_api_key_and_its_absence_is_named() {
    let fx = Fixture::start_with(vec![text_reply("unused")], |b| {
        anthropic(b).env("ZEROCLAW_providers__local__api_key", "")
    });
    let resp = fx.prompt("hi");
    let message = resp["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("ANTHROPIC_API_KEY"), "{resp}");
    assert!(fx.model.requests().is_empty());
}

#[test]
fn cancelling_mid_stream_drops_the_request() {
    let mut events: Vec<Chunk> = vec![message_start(3, 0, 0)];
    events.push(block_start(0, json!({"type": "text", "text": ""})));
    events.push(block_delta(
        0,
        json!({"type": "text_delta", "text": "Hello"}),
    ));
    events.push(block_delta(0, json!({"type": "text_delta", "text": " never"})).delayed(600_000));
    events.extend(message_end("end_turn", 2));
    let fx = start(vec![Reply::Events(events)]);
    let id = fx
        .client
        .send_request("session/prompt", prompt_params(&fx.session, "go"));
    let session = fx.session.clone();
    fx.client.wait_for(|m| {
        is_update_for(m, &session) && m["params"]["update"]["content"]["text"] == "Hello"
    });
    fx.client
        .notify("session/cancel", json!({"sessionId": fx.session}));
    let resp = fx.client.wait_response(&id);
    assert_eq!(result_of(&resp)["stopReason"], "cancelled", "{resp}");
    assert!(fx.model.wait_aborted(1), "the server saw the hang-up");
    assert_eq!(fx.model.completed(), 0);
}

#[test]
fn a_thought_level_becomes_a_thinking_budget_below_max_tokens() {
    let fx = Fixture::start_with(vec![text_reply("a"), text_reply("b")], |b| {
        anthropic(b).env("ZEROCLAW_providers__local__max_tokens", "16384")
    });
    fx.prompt("plain");
    let resp = fx.client.request(
        "session/set_config_option",
        json!({"sessionId": fx.session, "configId": "thought_level", "value": "high"}),
    );
    assert!(resp.get("result").is_some(), "{resp}");
    fx.prompt("think hard");
    let requests = fx.model.requests();
    assert!(requests[0].get("thinking").is_none(), "{}", requests[0]);
    assert_eq!(
        requests[1]["thinking"],
        json!({"type": "enabled", "budget_tokens": 8192})
    );
    assert_eq!(requests[1]["max_tokens"], 16384);
}
