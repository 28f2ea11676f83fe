//! Session modes are the autonomy levels: offered up to the operator's level in the session
//! answers (as `modes` and as a `mode` config option), lowered by `session/set_mode` or
//! `session/set_config_option` with a `current_mode_update`, never raised above the global or
//! the agent's configured level (-32602 with the reason), stored across a restart; a session
//! lowered to `readonly` refuses a mutating `shell` command and a write without asking — from
//! its next tool call, also when lowered during a running turn.

use crate::support;
use crate::tools_support;

use std::fs;

use serde_json::{Value, json};
use support::acp_client::{Permission, is_response, prompt_params};
use support::model_server::{text_reply, tool_reply};
use tools_support::{Scene, Setup};

fn approving(level: &str) -> Setup {
    Setup::level(level).permission(Permission::Select("allow-always".into()))
}

fn mode_ids(answer: &Value) -> Vec<&str> {
    answer["modes"]["availableModes"]
        .as_array()
        .unwrap_or_else(|| panic!("no modes in {answer}"))
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect()
}

fn mode_option(answer: &Value) -> &Value {
    answer["configOptions"]
        .as_array()
        .and_then(|o| o.iter().find(|o| o["category"] == "mode"))
        .unwrap_or_else(|| panic!("no mode config option in {answer}"))
}

/// Calls `session/set_mode` and returns the response and the updates sent before it.
fn set_mode(s: &Scene, mode: &str) -> (Value, Vec<Value>) {
    let from = s.client.message_count();
    let id = s.client.send_request(
        "session/set_mode",
        json!({"sessionId": s.session, "modeId": mode}),
    );
    let (at, response) = s
        .client
        .wait_for_from(from, |m| is_response(m) && m["id"] == id);
    let updates = s
        .client
        .messages_between(from, at)
        .into_iter()
        .filter(|m| m["method"] == "session/update")
        .map(|m| m["params"]["update"].clone())
        .collect();
    (response, updates)
}

#[test]
fn the_answers_offer_the_modes_up_to_the_configured_level() {
    let s = Scene::start(Setup::level("supervised"));
    let answer = s
        .client
        .call("session/new", json!({"cwd": s.ws(), "mcpServers": []}));
    assert_eq!(mode_ids(&answer), ["readonly", "supervised"]);
    assert_eq!(answer["modes"]["currentModeId"], "supervised");
    let option = mode_option(&answer);
    assert_eq!(option["type"], "select");
    assert_eq!(option["currentValue"], "supervised");
    assert_eq!(option["options"].as_array().unwrap().len(), 2, "{option}");

    let full = Scene::start(Setup::level("full"));
    let answer = full
        .client
        .call("session/new", json!({"cwd": full.ws(), "mcpServers": []}));
    assert_eq!(mode_ids(&answer), ["readonly", "supervised", "full"]);
    s.client.assert_valid();
    full.client.assert_valid();
}

#[test]
fn set_mode_lowers_refuses_raising_and_survives_a_restart() {
    let mut s = Scene::start(approving("supervised"));
    fs::write(s.ws().join("a.txt"), "keep").unwrap();

    let (refused, updates) = set_mode(&s, "full");
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let reason = refused["error"]["message"].as_str().unwrap();
    assert!(
        reason.contains("supervised") && reason.contains("operator"),
        "{reason}"
    );
    assert!(
        updates.is_empty(),
        "a refused mode is not announced: {updates:?}"
    );

    let (lowered, updates) = set_mode(&s, "readonly");
    assert_eq!(lowered["result"], json!({}), "{lowered}");
    assert_eq!(
        updates,
        vec![json!({"sessionUpdate": "current_mode_update", "currentModeId": "readonly"})]
    );
    let rm = s.call("shell", json!({"command": "rm -f a.txt"}));
    rm.assert_failed()
        .assert_result_contains("denied by policy");
    assert!(rm.permission_requests.is_empty(), "{}", rm.describe());
    assert_eq!(fs::read_to_string(s.ws().join("a.txt")).unwrap(), "keep");

    s.respawn(&approving("supervised"));
    let loaded = s
        .client
        .messages()
        .into_iter()
        .rev()
        .find(|m| m["result"]["modes"].is_object())
        .expect("the load answer");
    assert_eq!(
        loaded["result"]["modes"]["currentModeId"], "readonly",
        "{loaded}"
    );
    let write = s.call("file_write", json!({"path": "a.txt", "content": "lost"}));
    write
        .assert_failed()
        .assert_result_contains("denied by policy");
    assert_eq!(fs::read_to_string(s.ws().join("a.txt")).unwrap(), "keep");

    // Back up to the configured level: writes ask (and this client approves) again.
    let (raised, _) = set_mode(&s, "supervised");
    assert_eq!(raised["result"], json!({}), "{raised}");
    let write = s.call("file_write", json!({"path": "a.txt", "content": "changed"}));
    write.assert_completed();
    assert_eq!(write.permission_requests.len(), 1, "{}", write.describe());
    assert_eq!(fs::read_to_string(s.ws().join("a.txt")).unwrap(), "changed");
    s.client.assert_valid();
}

#[test]
fn the_agents_override_is_the_ceiling_and_the_config_option_sets_the_mode() {
    let s =
        Scene::start(Setup::level("full").extra("[agents.coder.autonomy]\nlevel = \"supervised\""));
    let (refused, _) = set_mode(&s, "full");
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("coder"),
        "{refused}"
    );

    let answer = s.client.call(
        "session/set_config_option",
        json!({"sessionId": s.session, "configId": "mode", "value": "readonly"}),
    );
    assert_eq!(mode_option(&answer)["currentValue"], "readonly", "{answer}");
    let updates = s.client.updates_for(&s.session);
    assert!(
        updates.contains(
            &json!({"sessionUpdate": "current_mode_update", "currentModeId": "readonly"})
        ),
        "{updates:?}"
    );
    let out = s.call("file_write", json!({"path": "b.txt", "content": "B"}));
    out.assert_failed()
        .assert_result_contains("denied by policy");
    for (params, what) in [
        (
            json!({"sessionId": s.session, "configId": "mode", "value": "reckless"}),
            "unknown mode",
        ),
        (
            json!({"sessionId": s.session, "configId": "nope", "value": "full"}),
            "unknown option",
        ),
    ] {
        let error = s.client.call_err("session/set_config_option", params);
        assert_eq!(error["code"], -32602, "{what}: {error}");
    }
    let error = s.client.call_err(
        "session/set_mode",
        json!({"sessionId": "s-missing", "modeId": "readonly"}),
    );
    assert_eq!(error["code"], -32000, "{error}");
    s.client.assert_valid();
}

#[test]
fn a_mode_lowered_during_a_turn_applies_from_its_next_tool_call() {
    let s = Scene::start(
        Setup::level("supervised")
            .permission(Permission::Ignore)
            .extra("[acp]\nsession_timeout_secs = 10"),
    );
    s.model.push(tool_reply(
        "w1",
        "file_write",
        &json!({"path": "a.txt", "content": "A"}),
    ));
    s.model.push(tool_reply(
        "w2",
        "file_write",
        &json!({"path": "b.txt", "content": "B"}),
    ));
    s.model.push(text_reply("done"));
    let prompt = s
        .client
        .send_request("session/prompt", prompt_params(&s.session, "go"));
    let asked = s
        .client
        .wait_for(|m| m["method"] == "session/request_permission");
    // While the first call waits for its approval, the user lowers the mode.
    let (lowered, _) = set_mode(&s, "readonly");
    assert_eq!(lowered["result"], json!({}), "{lowered}");
    s.client
        .send_json(&json!({"jsonrpc": "2.0", "id": asked["id"],
        "result": {"outcome": {"outcome": "selected", "optionId": "allow-once"}}}));
    let response = s.client.wait_for(|m| is_response(m) && m["id"] == prompt);
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    assert_eq!(fs::read_to_string(s.ws().join("a.txt")).unwrap(), "A");
    assert!(!s.ws().join("b.txt").exists(), "the second call ran");
    let updates = s.client.updates_for(&s.session);
    let last = |id: &str| {
        updates
            .iter()
            .rev()
            .find(|u| u["toolCallId"] == id && u["status"].is_string())
            .cloned()
            .unwrap_or_else(|| panic!("no final status for {id}: {updates:?}"))
    };
    assert_eq!(last("w1")["status"], "completed");
    let second = last("w2");
    assert_eq!(second["status"], "failed", "{second}");
    assert!(second.to_string().contains("denied by policy"), "{second}");
    assert_eq!(
        s.client.permission_requests().len(),
        1,
        "only the first call asked"
    );
    s.client.assert_valid();
}
