//! SIGHUP reloads agents and providers without dropping connections: an agent added to the
//! config file becomes usable on a connection opened before the signal, and a broken config on
//! a later SIGHUP is logged and the previous one kept.

use crate::support;

use serde_json::{Value, json};
use support::acp_client::AcpClient;
use support::model_server::{ModelServer, text_reply};
use support::ws_conn::{Endpoint, Upgrade};
use support::ws_daemon::Daemon;

fn config(base_url: &str, agents: &[&str]) -> String {
    let mut toml = format!(
        "[providers.local]\nkind = \"openai\"\nbase_url = \"{base_url}\"\napi_key = \"test\"\n"
    );
    for name in agents {
        toml.push_str(&format!(
            "\n[agents.{name}]\nprovider = \"local\"\nmodel = \"model-{name}\"\n"
        ));
    }
    toml
}

fn new_session(client: &AcpClient, alias: &str) -> Value {
    let work = tempfile::tempdir().unwrap();
    let params = json!({"cwd": work.path(), "mcpServers": [], "agentAlias": alias});
    client.request("session/new", params)
}

/// Retries `session/new` with `alias` until it succeeds (the reload is asynchronous to the
/// signal); the bound is a hang guard, not a timing assertion.
fn wait_for_agent(client: &AcpClient, daemon: &Daemon, alias: &str) -> String {
    for _ in 0..1000 {
        let resp = new_session(client, alias);
        if let Some(id) = resp["result"]["sessionId"].as_str() {
            return id.to_string();
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    panic!("agent {alias} never became available\n{}", daemon.log());
}

#[test]
fn sighup_reloads_agents_keeps_connections_and_survives_a_broken_config() {
    let model = ModelServer::start_blocking(vec![text_reply("from b"), text_reply("still b")]);
    let mut daemon = Daemon::builder()
        .config_toml(config(&model.base_url(), &["a"]))
        .spawn();
    let upgrade = Upgrade::new(Endpoint::Unix(daemon.unix().into()));
    let client = AcpClient::connect(&upgrade, daemon.config_dir()).unwrap();
    client.initialize();
    let before = new_session(&client, "b");
    assert_eq!(before["error"]["code"], -32602, "no agent b yet: {before}");

    let file = daemon.config_dir().join("config.toml");
    std::fs::write(&file, config(&model.base_url(), &["a", "b"])).unwrap();
    daemon.launched.signal(libc::SIGHUP);
    let session = wait_for_agent(&client, &daemon, "b");
    let resp = client.prompt(&session, "hi");
    assert_eq!(resp["result"]["content"], "from b", "{resp}");
    assert_eq!(model.requests()[0]["model"], "model-b");

    std::fs::write(&file, "this is [not toml").unwrap();
    daemon.launched.signal(libc::SIGHUP);
    daemon.launched.wait_text("reload failed");
    // The old config stays: agent b keeps working on the same connection.
    let again = new_session(&client, "b");
    let again = again["result"]["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("{again}"));
    let resp = client.prompt(again, "hi");
    assert_eq!(resp["result"]["content"], "still b", "{resp}");
}
