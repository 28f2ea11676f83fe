//! The supervised approval flow end to end: a write asks the client through
//! `session/request_permission` with the spec's options, and the answer decides — allow once
//! (asked again next time), allow always (not asked again, also after `session/load` in a
//! fresh process), reject, a dismissed prompt, `session/cancel` while the prompt is pending
//! (the tool never runs), and a client that never answers (denied after
//! `session_timeout_secs`). Reads and low-risk commands never ask.

use crate::support;
use crate::tools_support;

use std::fs;

use serde_json::json;

use support::acp_client::{Permission, is_response, prompt_params};
use support::model_server::{text_reply, tool_reply};
use tools_support::{Scene, Setup};

fn supervised(answer: Permission) -> Setup {
    Setup::level("supervised").permission(answer)
}

fn select(option: &str) -> Permission {
    Permission::Select(option.into())
}

#[test]
fn a_write_asks_with_the_spec_options_and_allow_once_asks_again_next_time() {
    let s = Scene::start(supervised(select("allow-once")));
    let first = s.call("file_write", json!({"path": "a.txt", "content": "A"}));
    first.assert_completed();
    assert_eq!(first.permission_requests.len(), 1, "{}", first.describe());
    let params = &first.permission_requests[0]["params"];
    assert_eq!(params["sessionId"], s.session.as_str());
    assert_eq!(params["toolCall"]["kind"], "edit", "{params}");
    let kinds: Vec<&str> = params["options"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|o| o["kind"].as_str())
        .collect();
    assert_eq!(
        kinds,
        ["allow_once", "allow_always", "reject_once"],
        "{params}"
    );
    assert_eq!(fs::read_to_string(s.ws().join("a.txt")).unwrap(), "A");
    let second = s.call("file_write", json!({"path": "b.txt", "content": "B"}));
    second.assert_completed();
    assert_eq!(second.permission_requests.len(), 1, "allow once is once");
}

#[test]
fn allow_always_is_remembered_for_the_session_and_after_load_in_a_fresh_process() {
    let setup = supervised(select("allow-always"));
    let mut s = Scene::start(supervised(select("allow-always")));
    let first = s.call("file_write", json!({"path": "a.txt", "content": "A"}));
    first.assert_completed();
    assert_eq!(first.permission_requests.len(), 1);
    let second = s.call("file_write", json!({"path": "b.txt", "content": "B"}));
    second.assert_completed();
    assert!(
        second.permission_requests.is_empty(),
        "{}",
        second.describe()
    );

    let replayed = s.respawn(&setup.permission(select("reject-once")));
    let replayed_write = replayed.iter().any(|u| {
        u["sessionUpdate"] == "tool_call_update"
            && u["status"] == "completed"
            && u["toolCallId"] == first.call["toolCallId"]
    });
    assert!(
        replayed_write,
        "session/load replays the tool calls: {replayed:?}"
    );
    let third = s.call("file_write", json!({"path": "c.txt", "content": "C"}));
    third.assert_completed();
    assert!(
        third.permission_requests.is_empty(),
        "allow-always persisted with the session: {}",
        third.describe()
    );
    assert_eq!(fs::read_to_string(s.ws().join("c.txt")).unwrap(), "C");
}

#[test]
fn a_rejected_write_fails_with_the_reason_and_the_file_is_not_written() {
    let s = Scene::start(supervised(select("reject-once")));
    let out = s.call("file_write", json!({"path": "a.txt", "content": "A"}));
    out.assert_failed().assert_result_contains("denied by user");
    assert_eq!(out.permission_requests.len(), 1);
    assert!(!s.ws().join("a.txt").exists());
}

#[test]
fn a_dismissed_prompt_denies_the_call() {
    let s = Scene::start(supervised(Permission::Cancel));
    let out = s.call("file_write", json!({"path": "a.txt", "content": "A"}));
    out.assert_failed();
    assert!(!out.text.is_empty(), "{}", out.describe());
    assert!(!s.ws().join("a.txt").exists());
}

#[test]
fn session_cancel_while_the_prompt_is_pending_cancels_and_the_tool_never_runs() {
    let s = Scene::start(supervised(Permission::Ignore));
    s.model.push(tool_reply(
        "w1",
        "file_write",
        &json!({"path": "a.txt", "content": "A"}),
    ));
    s.model.push(text_reply("done"));
    let id = s
        .client
        .send_request("session/prompt", prompt_params(&s.session, "go"));
    let pending = s
        .client
        .wait_for(|m| m["method"] == "session/request_permission");
    s.client
        .notify("session/cancel", json!({"sessionId": s.session}));
    let response = s.client.wait_for(|m| is_response(m) && m["id"] == id);
    assert_eq!(response["result"]["stopReason"], "cancelled", "{response}");
    // A late "allow" for the resolved request must not run the tool either.
    s.client
        .send_json(&json!({"jsonrpc": "2.0", "id": pending["id"],
        "result": {"outcome": {"outcome": "selected", "optionId": "allow-once"}}}));
    let after = s
        .client
        .request("session/prompt", prompt_params(&s.session, "still there?"));
    assert!(after.get("result").is_some(), "{after}");
    assert!(!s.ws().join("a.txt").exists(), "the tool never ran");
    let updates = s.client.updates_for(&s.session);
    let last = updates
        .iter()
        .rev()
        .find(|u| u["toolCallId"] == "w1" && u["status"].is_string())
        .expect("the call has a final status");
    assert_eq!(last["status"], "failed", "{last}");
}

#[test]
fn an_unanswered_prompt_is_denied_after_the_session_timeout() {
    let setup = supervised(Permission::Ignore).extra("[acp]\nsession_timeout_secs = 2");
    let s = Scene::start(setup);
    let out = s.call("file_write", json!({"path": "a.txt", "content": "A"}));
    out.assert_failed();
    assert_eq!(out.permission_requests.len(), 1);
    assert!(
        !out.model_saw.is_empty(),
        "the model sees why: {}",
        out.describe()
    );
    assert!(!s.ws().join("a.txt").exists());
}

#[test]
fn reads_and_low_risk_commands_do_not_ask_but_high_risk_ones_do() {
    let s = Scene::start(supervised(select("allow-once")));
    fs::write(s.ws().join("r.txt"), "readable").unwrap();
    let read = s.call("file_read", json!({"path": "r.txt"}));
    read.assert_completed().assert_result_contains("readable");
    assert!(read.permission_requests.is_empty());
    let ls = s.call("shell", json!({"command": "ls"}));
    ls.assert_completed().assert_result_contains("r.txt");
    assert!(ls.permission_requests.is_empty());
    fs::create_dir(s.ws().join("junk")).unwrap();
    let rm = s.call("shell", json!({"command": "rm -rf junk"}));
    rm.assert_completed();
    assert_eq!(rm.permission_requests.len(), 1, "{}", rm.describe());
    assert_eq!(
        rm.permission_requests[0]["params"]["toolCall"]["kind"],
        "execute"
    );
    assert!(!s.ws().join("junk").exists());
}

#[test]
fn no_argument_from_the_model_can_approve_a_call() {
    let s = Scene::start(supervised(select("reject-once")));
    let args = json!({"path": "a.txt", "content": "A", "approved": true,
        "optionId": "allow-always", "auto_approve": "*"});
    let out = s.call("file_write", args);
    assert_ne!(out.status, "completed");
    assert!(!s.ws().join("a.txt").exists());
}
