//! Every refusal of a tool call is an audit record with its rule, found by `zeroclaw audit
//! list --decision deny` through the real binary: a forbidden path, a protected git path, a
//! path outside the workspace, an absolute search pattern, a tool that does not exist,
//! arguments that are not JSON, a sandbox that cannot be set up, and a git change refused when the repository lands. An
//! approval is listed with the command or path it was about.

use crate::audit_log::{bodies, stdout_ok};
use crate::support;
use crate::tools_support;

use serde_json::{Value, json};

use support::acp_client::Permission;
use support::model_server::{Reply, finish, text_reply, tool_call_args, tool_call_start};
use tools_support::{Scene, Setup, backend_available};

/// The `--decision deny` lines of the scene's log.
fn denials(s: &Scene) -> String {
    stdout_ok(&s.config_dir(), &["list", "--decision", "deny"])
}

/// The one stored deny record with `rule`.
fn denial(s: &Scene, rule: &str) -> Value {
    let found: Vec<Value> = bodies(&s.config_dir())
        .into_iter()
        .filter(|r| r["decision"] == "deny" && r["rule"] == rule)
        .collect();
    assert_eq!(found.len(), 1, "one {rule} denial: {found:#?}");
    found[0].clone()
}

#[test]
fn forbidden_and_outside_paths_are_recorded_with_their_rule() {
    let s = Scene::start(Setup::level("supervised"));
    s.call("file_read", json!({"path": "/etc/shadow"}))
        .assert_failed()
        .assert_result_contains("forbidden path");
    s.call("file_read", json!({"path": "~/.ssh/id_ed25519"}))
        .assert_failed();
    s.call(
        "file_write",
        json!({"path": "../outside.txt", "content": "x"}),
    )
    .assert_failed()
    .assert_result_contains("outside the session workspace");

    let listed = denials(&s);
    assert!(
        listed.contains("rule=forbidden_path /etc/shadow"),
        "{listed}"
    );
    assert!(
        listed.contains("rule=forbidden_path ~/.ssh/id_ed25519"),
        "{listed}"
    );
    assert!(
        listed.contains("rule=outside_workspace ../outside.txt"),
        "{listed}"
    );
    let shadow = &bodies(&s.config_dir())
        .into_iter()
        .find(|r| r["path"] == "/etc/shadow" && r["kind"] == "policy.decision")
        .expect("the /etc/shadow denial");
    assert_eq!(shadow["tool"], "file_read", "{shadow}");
    assert_eq!(shadow["session"], s.session.as_str(), "{shadow}");
    assert!(
        shadow["reason"]
            .as_str()
            .is_some_and(|r| r.contains("forbidden path")),
        "{shadow}"
    );
    assert_eq!(shadow["args_sha256"].as_str().map(str::len), Some(64));
    assert!(stdout_ok(&s.config_dir(), &["verify"]).starts_with("ok: "));
}

#[test]
fn a_protected_git_path_is_recorded_with_its_rule() {
    let s = Scene::start(Setup::level("full"));
    std::fs::create_dir_all(s.ws().join(".git/hooks")).unwrap();
    s.call(
        "file_write",
        json!({"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\n"}),
    )
    .assert_failed()
    .assert_result_contains("protected");
    assert!(!s.ws().join(".git/hooks/pre-commit").exists());
    let listed = denials(&s);
    assert!(
        listed.contains("rule=protected_git_path .git/hooks/pre-commit"),
        "{listed}"
    );
    let record = denial(&s, "protected_git_path");
    assert_eq!(record["tool"], "file_write", "{record}");
}

#[test]
fn an_absolute_search_pattern_is_recorded_with_its_rule() {
    let s = Scene::start(Setup::level("full"));
    s.call("glob_search", json!({"pattern": "/etc/*"}))
        .assert_failed()
        .assert_result_contains("relative to the working directory");
    let listed = denials(&s);
    assert!(listed.contains("rule=relative_pattern /etc/*"), "{listed}");
}

#[test]
fn a_call_of_an_unknown_tool_is_recorded_with_its_rule() {
    let s = Scene::start(Setup::level("full"));
    s.call("no_such_tool", json!({"command": "rm -rf /"}))
        .assert_failed()
        .assert_result_contains("unknown tool: no_such_tool");
    let listed = denials(&s);
    assert!(listed.contains("no_such_tool"), "{listed}");
    assert!(listed.contains("rule=unknown_tool rm -rf /"), "{listed}");
    let record = denial(&s, "unknown_tool");
    assert_eq!(record["reason"], "unknown tool: no_such_tool", "{record}");
}

#[test]
fn a_call_whose_arguments_are_not_json_is_recorded_with_its_rule() {
    let s = Scene::start(Setup::level("full"));
    s.model.push(Reply::Sse(vec![
        tool_call_start(0, "bad-args", "shell"),
        tool_call_args(0, "{\"command\": \"echo hi"),
        finish("tool_calls"),
    ]));
    s.model.push(text_reply("done"));
    s.client.prompt(&s.session, "go");
    let listed = denials(&s);
    assert!(listed.contains("rule=invalid_arguments"), "{listed}");
    let record = denial(&s, "invalid_arguments");
    assert_eq!(record["tool"], "shell", "{record}");
    assert_eq!(record["tool_call_id"], "bad-args", "{record}");
    assert!(
        record["reason"]
            .as_str()
            .is_some_and(|r| r.starts_with("the arguments are not valid JSON")),
        "{record}"
    );
}

#[test]
fn a_sandbox_that_cannot_be_set_up_is_a_recorded_refusal() {
    let s = Scene::start(Setup::level("full").backend("seatbelt"));
    s.call("shell", json!({"command": "echo hi"}))
        .assert_failed();
    let listed = denials(&s);
    assert!(listed.contains("sandbox.failure"), "{listed}");
    assert!(listed.contains("rule=sandbox_setup"), "{listed}");
    let record = denial(&s, "sandbox_setup");
    assert_eq!(record["kind"], "sandbox.failure", "{record}");
    assert_eq!(record["tool"], "shell", "{record}");
    assert_eq!(record["command"], "echo hi", "{record}");
}

/// A repository the agent initialises lands validated; the refused key is a record.
#[test]
fn a_git_change_refused_at_landing_is_recorded_with_its_rule() {
    if !backend_available("namespaces") {
        return;
    }
    let setup = Setup::level("full").backend("namespaces").under("/var/tmp");
    let s = Scene::start(setup);
    let command = "git init -q && git config core.fsmonitor /bin/false && echo inited";
    s.call("shell", json!({ "command": command }))
        .assert_completed()
        .assert_result_contains("git: refused core.fsmonitor");
    let listed = denials(&s);
    assert!(listed.contains("rule=git_landing"), "{listed}");
    let record = denial(&s, "git_landing");
    assert_eq!(record["tool"], "shell", "{record}");
    assert_eq!(record["command"], command, "{record}");
    assert!(
        record["reason"]
            .as_str()
            .is_some_and(|r| r.starts_with("git: refused core.fsmonitor in .git/config")),
        "{record}"
    );
}

#[test]
fn an_approval_is_listed_with_the_command_or_path_it_was_about() {
    let setup = Setup::level("supervised").permission(Permission::Select("allow-once".into()));
    let s = Scene::start(setup);
    s.call("file_write", json!({"path": "notes.txt", "content": "A"}))
        .assert_completed();
    s.call("shell", json!({"command": "echo ok > approved.txt"}))
        .assert_completed();
    let approvals = stdout_ok(&s.config_dir(), &["list", "--kind", "approval"]);
    assert!(
        approvals.contains("answer=allow_once notes.txt"),
        "{approvals}"
    );
    assert!(
        approvals.contains("answer=allow_once echo ok > approved.txt"),
        "{approvals}"
    );
}
