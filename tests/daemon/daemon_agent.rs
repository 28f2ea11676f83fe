//! The connection's default agent from `GET /acp?agent=<alias>` (precedence step 2): it beats
//! `[acp].default_agent`, loses to an explicit alias in `session/new`, a blank value means
//! absent, and an unknown alias is refused by `session/new` like any unknown alias. Observed
//! through the model each session's prompt reaches.

use crate::support;

use serde_json::{Value, json};
use support::acp_client::AcpClient;
use support::model_server::{ModelServer, Reply, text_reply};
use support::ws_conn::{Endpoint, TokenAt, Upgrade};
use support::ws_daemon::Daemon;

/// Agents `a` and `b` with distinct models; `b` is the configured default.
fn config(base_url: &str) -> String {
    format!(
        r#"[acp]
default_agent = "b"

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
"#
    )
}

fn connect(daemon: &Daemon, agent: Option<&str>) -> AcpClient {
    let mut upgrade =
        Upgrade::new(Endpoint::Tcp(daemon.tcp())).token(TokenAt::Header, daemon.token());
    if let Some(alias) = agent {
        upgrade = upgrade.query("agent", alias);
    }
    let client = AcpClient::connect(&upgrade, daemon.config_dir())
        .unwrap_or_else(|e| panic!("{e}\n{}", daemon.log()));
    client.initialize();
    client
}

/// `session/new` with these params, a prompt, and the model the prompt reached.
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
    Ok(model.requests()[before]["model"]
        .as_str()
        .unwrap()
        .to_string())
}

#[test]
fn the_agent_query_is_the_connections_default_below_an_explicit_alias() {
    let model =
        ModelServer::start_blocking((0..4).map(|_| text_reply("ok")).collect::<Vec<Reply>>());
    let daemon = Daemon::builder()
        .config_toml(config(&model.base_url()))
        .spawn();

    let with_a = connect(&daemon, Some("a"));
    assert_eq!(model_used(&with_a, &model, json!({})).unwrap(), "model-a");
    let explicit = json!({"agentAlias": "b"});
    assert_eq!(
        model_used(&with_a, &model, explicit).unwrap(),
        "model-b",
        "explicit wins"
    );

    let blank = connect(&daemon, Some(""));
    assert_eq!(
        model_used(&blank, &model, json!({})).unwrap(),
        "model-b",
        "blank is absent"
    );
    let none = connect(&daemon, None);
    assert_eq!(model_used(&none, &model, json!({})).unwrap(), "model-b");

    let unknown = connect(&daemon, Some("zzz"));
    let error = model_used(&unknown, &model, json!({})).unwrap_err();
    assert_eq!(error["code"], -32602, "unknown ?agent= alias: {error}");
    assert_eq!(model.requests().len(), 4);
}
