//! What the `shell` tool tells the model about its limits, through `zeroclaw acp`: a call may
//! ask for more wall time than the configured default, up to `[sandbox.limits]
//! max_wall_time_secs` (the schema the model is offered names both), and is refused above it;
//! a failed command in a session whose network is denied ends its result with a line saying
//! so and naming the key, which a session with the network, or a command that succeeded,
//! never gets.

use crate::tools_support;

use serde_json::json;

use tools_support::{Scene, Setup};

/// The start of the network note's line.
const NETWORK_NOTE: &str = "note: the network is off for this session";

/// A default wall time of 1 s and a maximum of 5 s.
fn short_limits() -> Setup {
    Setup::level("full").extra("[sandbox.limits]\nwall_time_secs = 1\nmax_wall_time_secs = 5\n")
}

#[test]
fn timeout_secs_may_ask_for_more_than_the_default_up_to_the_maximum() {
    let s = Scene::start(short_limits());
    let out = s.call(
        "shell",
        json!({"command": "sleep 2; echo slept-past-the-default", "timeout_secs": 5}),
    );
    out.assert_completed()
        .assert_result_contains("slept-past-the-default");

    let schema = s.model.requests()[0]["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|t| t["function"]["name"] == "shell")
        .map(|t| t["function"]["parameters"]["properties"]["timeout_secs"].clone())
        .expect("the model is offered the shell tool");
    assert_eq!(schema["maximum"], 5, "{schema}");
    let described = schema["description"].as_str().unwrap_or_default();
    assert!(
        described.contains("default 1") && described.contains("at most 5"),
        "{schema}"
    );
}

#[test]
fn timeout_secs_above_the_maximum_is_refused_naming_it() {
    let s = Scene::start(short_limits());
    let out = s.call(
        "shell",
        json!({"command": "echo should-not-run", "timeout_secs": 6}),
    );
    out.assert_failed()
        .assert_result_contains("maximum of 5 seconds")
        .assert_result_contains("max_wall_time_secs");
    assert!(!out.text.contains("should-not-run"), "{}", out.describe());
}

#[test]
fn without_timeout_secs_the_configured_default_applies() {
    let s = Scene::start(short_limits());
    let out = s.call("shell", json!({"command": "sleep 3; echo not-reached"}));
    out.assert_failed()
        .assert_result_contains("wall-time limit was reached");
}

#[test]
fn a_failed_command_without_network_says_the_network_is_off_and_which_key_turns_it_on() {
    let s = Scene::start(Setup::level("full"));
    let out = s.call("shell", json!({"command": "echo trying; exit 1"}));
    out.assert_completed().assert_result_contains(NETWORK_NOTE);
    let last = out.model_saw.trim_end().lines().last().unwrap_or_default();
    assert!(
        last.starts_with(NETWORK_NOTE)
            && last.contains("[sandbox.network] mode = \"deny\"")
            && last.contains("mode = \"proxy\""),
        "the last line: {last}"
    );

    let ok = s.call("shell", json!({"command": "echo fine"}));
    ok.assert_completed().assert_result_contains("fine");
    assert!(!ok.model_saw.contains(NETWORK_NOTE), "{}", ok.describe());
}

#[test]
fn a_failed_command_with_the_network_gets_no_network_note() {
    let s = Scene::start(Setup::level("full").extra("[sandbox.network]\nmode = \"allow\"\n"));
    let out = s.call("shell", json!({"command": "echo trying; exit 1"}));
    out.assert_completed().assert_result_contains("trying");
    assert!(!out.model_saw.contains(NETWORK_NOTE), "{}", out.describe());
    assert!(!out.text.contains(NETWORK_NOTE), "{}", out.describe());
}
