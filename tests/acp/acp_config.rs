//! How `session/new` picks its agent and workspace: alias forms and precedence (explicit >
//! `[acp].default_agent` > sole agent > -32602), unknown and disabled agents, the environment
//! overriding the file, `cwd` canonicalization (`..`, symlinks, aliases, the launch dir), and
//! unguessable session ids.

use crate::support;

use std::path::Path;

use serde_json::{Value, json};
use support::acp_client::{AcpClient, Builder};
use support::model_server::{ModelServer, Reply, text_reply};

/// A config with agents `a`, `b` (enabled, distinct models) and `c` (disabled).
fn three_agents(base_url: &str, extra: &str) -> String {
    format!(
        r#"{extra}
[providers.local]
kind = "openai"
base_url = "{base_url}"
api_key = "test"

[agents.a]
provider = "local"
model = "model-a"

[agents.b]
provider = "local"
model = "model-b"

[agents.c]
provider = "local"
model = "model-c"
enabled = false
"#
    )
}

fn replies(n: usize) -> Vec<Reply> {
    (0..n).map(|_| text_reply("ok")).collect()
}

fn start(toml: String, tweak: impl FnOnce(Builder) -> Builder) -> AcpClient {
    let client = tweak(AcpClient::builder().config_toml(toml)).spawn();
    client.initialize();
    client
}

/// Opens a session with these extra params and returns the model its first prompt used.
fn model_used(client: &AcpClient, model: &ModelServer, extra: Value) -> Result<String, Value> {
    let work = tempfile::tempdir().unwrap();
    let mut params = json!({"cwd": work.path(), "mcpServers": []});
    params
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    let resp = client.request("session/new", params);
    if let Some(error) = resp.get("error") {
        return Err(error.clone());
    }
    let session = resp["result"]["sessionId"].as_str().unwrap().to_string();
    let before = model.requests().len();
    let prompt = client.prompt(&session, "which model?");
    assert_eq!(prompt["result"]["stopReason"], "end_turn", "{prompt}");
    let requests = model.requests();
    assert_eq!(requests.len(), before + 1);
    Ok(requests[before]["model"].as_str().unwrap().to_string())
}

fn code(result: Result<String, Value>) -> i64 {
    result.expect_err("session/new should fail")["code"]
        .as_i64()
        .unwrap()
}

#[test]
fn explicit_alias_in_every_form_wins_and_ambiguity_is_an_error() {
    let model = ModelServer::start_blocking(replies(4));
    let client = start(three_agents(&model.base_url(), ""), |b| b);
    let used = |extra| model_used(&client, &model, extra);
    assert_eq!(used(json!({"agentAlias": "a"})).unwrap(), "model-a");
    assert_eq!(used(json!({"agent_alias": "b"})).unwrap(), "model-b");
    assert_eq!(used(json!({"agent": "a"})).unwrap(), "model-a");
    assert_eq!(code(used(json!({}))), -32602, "two agents, no default");
    assert_eq!(code(used(json!({"agentAlias": "zzz"}))), -32602, "unknown");
    assert_eq!(code(used(json!({"agentAlias": "c"}))), -32602, "disabled");
    assert_eq!(model.requests().len(), 3);
}

#[test]
fn default_agent_applies_when_no_alias_is_given() {
    let model = ModelServer::start_blocking(replies(3));
    let toml = three_agents(&model.base_url(), "[acp]\ndefault_agent = \"b\"\n");
    let client = start(toml, |b| b);
    let used = |extra| model_used(&client, &model, extra);
    assert_eq!(used(json!({})).unwrap(), "model-b");
    assert_eq!(
        used(json!({"agentAlias": "a"})).unwrap(),
        "model-a",
        "explicit wins"
    );
}

#[test]
fn the_environment_overrides_the_file() {
    let model = ModelServer::start_blocking(replies(3));
    let toml = three_agents(&model.base_url(), "[acp]\ndefault_agent = \"a\"\n");
    let client = start(toml, |b| {
        b.env("ZEROCLAW_acp__default_agent", "b")
            .env("ZEROCLAW_agents__a__model", "model-from-env")
    });
    let used = |extra| model_used(&client, &model, extra);
    assert_eq!(used(json!({})).unwrap(), "model-b");
    assert_eq!(used(json!({"agent": "a"})).unwrap(), "model-from-env");
}

#[test]
fn a_default_agent_that_is_disabled_is_an_error() {
    let model = ModelServer::start_blocking(replies(1));
    let toml = three_agents(&model.base_url(), "[acp]\ndefault_agent = \"c\"\n");
    let client = start(toml, |b| b);
    assert_eq!(code(model_used(&client, &model, json!({}))), -32602);
    assert_eq!(
        model_used(&client, &model, json!({"agentAlias": "b"})).unwrap(),
        "model-b"
    );
}

#[test]
fn a_sole_agent_is_selected_without_an_alias() {
    let model = ModelServer::start_blocking(replies(1));
    let client = AcpClient::builder().model(model.base_url()).spawn();
    client.initialize();
    assert_eq!(model_used(&client, &model, json!({})).unwrap(), "m");
    assert_eq!(
        code(model_used(&client, &model, json!({"agentAlias": "nope"}))),
        -32602
    );
}

fn workspace_of(client: &AcpClient, params: Value) -> Result<String, Value> {
    let resp = client.request("session/new", params);
    match resp.get("error") {
        Some(error) => Err(error.clone()),
        None => Ok(resp["result"]["workspaceDir"].as_str().unwrap().to_string()),
    }
}

fn canonical(path: &Path) -> String {
    std::fs::canonicalize(path).unwrap().display().to_string()
}

#[test]
fn cwd_is_canonicalized_through_dotdot_and_symlinks() {
    let root = tempfile::tempdir().unwrap();
    let real = root.path().join("real");
    std::fs::create_dir_all(real.join("sub")).unwrap();
    std::os::unix::fs::symlink(&real, root.path().join("link")).unwrap();
    std::fs::write(root.path().join("file"), "x").unwrap();
    let client = AcpClient::builder()
        .model("http://127.0.0.1:9/v1")
        .arg("--max-sessions")
        .arg("50")
        .current_dir(&real)
        .spawn();
    client.initialize();
    let want = canonical(&real);

    let dotdot = real.join("sub").join("..");
    assert_eq!(
        workspace_of(&client, json!({"cwd": dotdot, "mcpServers": []})).unwrap(),
        want
    );
    let link = root.path().join("link");
    assert_eq!(workspace_of(&client, json!({"cwd": link})).unwrap(), want);
    let via_link = root.path().join("link/sub/..");
    assert_eq!(
        workspace_of(&client, json!({"workspaceDir": via_link})).unwrap(),
        want
    );
    assert_eq!(
        workspace_of(&client, json!({"workspace_dir": real})).unwrap(),
        want
    );
    assert_eq!(
        workspace_of(&client, json!({})).unwrap(),
        want,
        "launch dir"
    );

    for (bad, problem) in [
        (root.path().join("missing"), "does not exist"),
        (root.path().join("file"), "is not a directory"),
    ] {
        let error = workspace_of(&client, json!({"cwd": bad})).unwrap_err();
        assert_eq!(error["code"], -32602, "{}: {error}", bad.display());
        let message = error["message"].as_str().unwrap();
        assert_eq!(
            message,
            format!("cwd {} {problem}", bad.display()),
            "{error}"
        );
    }
}

#[test]
fn session_ids_are_distinct_and_unguessable_and_mcp_servers_are_accepted() {
    let client = AcpClient::builder()
        .model("http://127.0.0.1:9/v1")
        .arg("--max-sessions")
        .arg("20")
        .spawn();
    client.initialize();
    let work = tempfile::tempdir().unwrap();
    let mcp = json!([{"name": "fs", "command": "/bin/true", "args": [], "env": []}]);
    let mut ids: Vec<String> = (0..20)
        .map(|_| {
            let result = client.call(
                "session/new",
                json!({"cwd": work.path(), "mcpServers": mcp}),
            );
            result["sessionId"].as_str().unwrap().to_string()
        })
        .collect();
    for id in &ids {
        let hex_digits = id.chars().filter(char::is_ascii_hexdigit).count();
        assert!(hex_digits >= 32, "{id} carries at least 128 random bits");
    }
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 20);
}

#[test]
fn the_config_dir_flag_wins_over_the_environment_variable() {
    let flagged = tempfile::tempdir().unwrap();
    std::fs::write(
        flagged.path().join("config.toml"),
        "[acp]\nmax_sessions = 4\nsession_timeout_secs = 44\n",
    )
    .unwrap();
    let client = AcpClient::builder()
        .config_toml("[acp]\nmax_sessions = 7\n")
        .arg("--config-dir")
        .arg(flagged.path().display().to_string())
        .spawn();
    let meta = &client.initialize()["_meta"]["zeroclaw"];
    assert_eq!(meta["maxSessions"], 4, "{meta}");
    assert_eq!(meta["sessionTimeoutSecs"], 44, "{meta}");
}

#[test]
fn an_invalid_configuration_fails_at_startup_naming_its_source() {
    // (config.toml, one env variable, what the error must name)
    type Case = (
        &'static str,
        Option<(&'static str, &'static str)>,
        &'static str,
    );
    let cases: [Case; 3] = [
        (
            "",
            Some(("ZEROCLAW_acp__max_sessions", "lots")),
            "ZEROCLAW_acp__max_sessions",
        ),
        (
            "",
            Some(("ZEROCLAW_acp__no_such_key", "1")),
            "ZEROCLAW_acp__no_such_key",
        ),
        ("[acp]\nno_such_key = 1\n", None, "no_such_key"),
    ];
    for (toml, env, named) in cases {
        let mut builder = AcpClient::builder().config_toml(toml);
        if let Some((k, v)) = env {
            builder = builder.env(k, v);
        }
        let mut client = builder.spawn();
        client.close_stdin();
        let status = client.wait_exit();
        assert!(!status.success(), "{named}: started anyway");
        client.wait_eof();
        assert!(
            client.messages().is_empty(),
            "nothing on stdout: {:?}",
            client.messages()
        );
        client.wait_stderr(named);
    }
}

// The same tests over WebSocket to `zeroclaw daemon`, TCP and Unix socket (not the start-up failure: a daemon that fails to start has no socket to test).
crate::over_websocket!(
    explicit_alias_in_every_form_wins_and_ambiguity_is_an_error,
    default_agent_applies_when_no_alias_is_given,
    the_environment_overrides_the_file,
    a_default_agent_that_is_disabled_is_an_error,
    a_sole_agent_is_selected_without_an_alias,
    cwd_is_canonicalized_through_dotdot_and_symlinks,
    session_ids_are_distinct_and_unguessable_and_mcp_servers_are_accepted,
    the_config_dir_flag_wins_over_the_environment_variable,
);
