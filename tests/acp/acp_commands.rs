//! A session's title and slash commands through the real binary: the title (the first user
//! line, no model call) announced after the first turn and listed, stored across a restart;
//! the commands announced after `session/new`; `/mode`, `/network` and `/sandbox` answered
//! without the model; `/compact` replacing the history by the model's summary, which a
//! `session/load` after a restart replays and the next turn's model request starts from.

use crate::support;

use serde_json::{Value, json};
use support::acp_client::{AcpClient, is_response, is_update_for, prompt_params};
use support::model_server::{ModelServer, text_reply};
use tempfile::TempDir;

/// Prompts and returns the answer and every update for the session sent before it.
fn prompt(client: &AcpClient, session: &str, text: &str) -> (Value, Vec<Value>) {
    let from = client.message_count();
    let id = client.send_request("session/prompt", prompt_params(session, text));
    let (at, answer) = client.wait_for_from(from, |m| is_response(m) && m["id"] == id);
    let updates = client
        .messages_between(from, at)
        .into_iter()
        .filter(|m| is_update_for(m, session))
        .map(|m| m["params"]["update"].clone())
        .collect();
    (answer, updates)
}

fn of_kind<'a>(updates: &'a [Value], kind: &str) -> Vec<&'a Value> {
    updates
        .iter()
        .filter(|u| u["sessionUpdate"] == kind)
        .collect()
}

fn said(updates: &[Value]) -> String {
    of_kind(updates, "agent_message_chunk")
        .iter()
        .filter_map(|u| u["content"]["text"].as_str())
        .collect()
}

fn spawn(model: &ModelServer, config: &TempDir, toml: &str) -> AcpClient {
    let client = AcpClient::builder()
        .model(model.base_url())
        .config_dir(config.path())
        .config_toml(toml)
        .spawn();
    client.initialize();
    client
}

#[test]
fn the_first_line_of_the_first_prompt_titles_the_session() {
    let model = ModelServer::start_blocking(vec![text_reply("one"), text_reply("two")]);
    let (config, work) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut client = spawn(&model, &config, "");
    let session = client.new_session(work.path());
    let (answer, updates) = prompt(
        &client,
        &session,
        "\n   Fix the flaky build  \nit fails on CI",
    );
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let info = of_kind(&updates, "session_info_update");
    assert_eq!(info.len(), 1, "{updates:?}");
    assert_eq!(info[0]["title"], "Fix the flaky build");
    assert_eq!(model.requests().len(), 1, "no model call for the title");
    let (_, updates) = prompt(&client, &session, "Second thing");
    assert!(
        of_kind(&updates, "session_info_update").is_empty(),
        "{updates:?}"
    );
    client.assert_valid();
    client.shutdown();

    let again = spawn(&model, &config, "");
    let listed = again.call("session/list", json!({}));
    assert_eq!(
        listed["sessions"][0]["title"], "Fix the flaky build",
        "{listed}"
    );
    again.assert_valid();
}

#[test]
fn the_commands_are_announced_and_mode_network_and_sandbox_answer_without_the_model() {
    let model = ModelServer::start_blocking(vec![]);
    let (config, work) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let client = spawn(&model, &config, "[autonomy]\nlevel = \"supervised\"\n");
    let session = client.new_session(work.path());
    let announced = client.wait_for(|m| {
        is_update_for(m, &session)
            && m["params"]["update"]["sessionUpdate"] == "available_commands_update"
    });
    let names: Vec<&str> = announced["params"]["update"]["availableCommands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["mode", "network", "sandbox", "compact"]);

    let (answer, updates) = prompt(&client, &session, "/mode readonly");
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert!(
        said(&updates).contains("Mode set to readonly"),
        "{updates:?}"
    );
    assert_eq!(
        of_kind(&updates, "current_mode_update")[0]["currentModeId"],
        "readonly"
    );
    let (_, updates) = prompt(&client, &session, "/mode full");
    assert!(said(&updates).starts_with("Mode unchanged"), "{updates:?}");
    let (_, updates) = prompt(&client, &session, "/mode");
    assert_eq!(
        said(&updates),
        "Mode: readonly (available: readonly, supervised)"
    );

    let (_, updates) = prompt(&client, &session, "/network");
    assert!(said(&updates).contains("denied"), "{updates:?}");
    let (_, updates) = prompt(&client, &session, "/sandbox");
    let text = said(&updates);
    assert!(
        text.contains("backend: ") && text.contains("level readonly") && text.contains("Network"),
        "{text}"
    );
    assert!(model.requests().is_empty(), "a command reached the model");
    client.assert_valid();

    let open = spawn(
        &model,
        &tempfile::tempdir().unwrap(),
        "[autonomy]\nnetwork = \"allow\"\n",
    );
    let session = open.new_session(work.path());
    let (_, updates) = prompt(&open, &session, "/network");
    assert!(said(&updates).contains("allowed"), "{updates:?}");
    open.assert_valid();
}

/// `/sandbox` in a `full` session in proxy mode says what its children really get: writes in
/// the workspace and the read-write allowed root only, the network through the proxy with its
/// allowlist; not the sandbox's default-profile lines ("writes limited to the workspace",
/// "no network").
#[test]
fn sandbox_in_a_full_proxy_session_says_what_its_children_get() {
    let model = ModelServer::start_blocking(vec![]);
    let (config, work, out) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let out_dir = out.path().canonicalize().unwrap();
    let toml = format!(
        "[autonomy]\nlevel = \"full\"\n\
         allowed_roots = [{{ path = \"{}\", write = true }}]\n\
         [sandbox.network]\nmode = \"proxy\"\nallow_domains = [\"registry.example\"]\n",
        out_dir.display()
    );
    let client = spawn(&model, &config, &toml);
    let cwd = work.path().canonicalize().unwrap();
    let session = client.new_session(&cwd);
    let (_, updates) = prompt(&client, &session, "/sandbox");
    let text = said(&updates);
    let writes = format!(
        "- writes: the workspace {}, {}, a private /tmp",
        cwd.display(),
        out_dir.display()
    );
    assert!(text.contains("level full"), "{text}");
    assert!(text.contains(&writes), "{text}");
    assert!(
        text.contains("nothing else of the host (it is read-only)"),
        "{text}"
    );
    assert!(text.contains("never, at any level: "), "{text}");
    assert!(
        text.contains("- network: only through zeroclaw's egress proxy")
            && text.contains("registry.example"),
        "{text}"
    );
    assert!(
        !text.contains("writes limited to the workspace") && !text.contains("- no network"),
        "the default profile's lines are not this session's: {text}"
    );
    client.assert_valid();
}

#[test]
fn compact_keeps_the_models_summary_as_the_only_history_entry() {
    let model = ModelServer::start_blocking(vec![
        text_reply("first answer"),
        text_reply("second answer"),
        text_reply("We renamed foo to bar; tests remain."),
        text_reply("after compaction"),
    ]);
    let (config, work) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut client = spawn(&model, &config, "");
    let session = client.new_session(work.path());
    prompt(&client, &session, "rename foo");
    prompt(&client, &session, "to bar");
    let (answer, _) = prompt(&client, &session, "/compact");
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert_eq!(
        answer["result"]["content"],
        "We renamed foo to bar; tests remain."
    );
    let asked = model.requests()[2]["messages"].to_string();
    assert!(
        asked.contains("rename foo") && asked.contains("Summarise"),
        "{asked}"
    );
    client.shutdown();

    let again = spawn(&model, &config, "");
    let from = again.message_count();
    let params = json!({"sessionId": session, "cwd": work.path(), "mcpServers": []});
    let id = again.send_request("session/load", params);
    let (at, _) = again.wait_for_from(from, |m| is_response(m) && m["id"] == id);
    let replayed: Vec<Value> = again
        .messages_between(from, at)
        .into_iter()
        .filter(|m| is_update_for(m, &session))
        .map(|m| m["params"]["update"].clone())
        .collect();
    assert_eq!(replayed.len(), 1, "one entry: {replayed:?}");
    let text = said(&replayed);
    assert!(
        text.starts_with("Summary of the earlier conversation:") && text.contains("renamed foo"),
        "{text}"
    );
    prompt(&again, &session, "go on");
    let next = model.requests()[3]["messages"].to_string();
    assert!(
        next.contains("renamed foo") && !next.contains("first answer"),
        "{next}"
    );
    again.assert_valid();
}
