//! SIGHUP re-reads the daemon's configuration without dropping connections: an agent added to
//! config.toml is usable from a connection opened before the reload, and a broken config.toml
//! is reported on stderr while the previous configuration stays in force.

use crate::support;

use serde_json::json;
use support::acp_client::AcpClient;
use support::ws_conn::{Endpoint, Upgrade};
use support::ws_daemon::Daemon;

#[test]
fn sighup_reloads_agents_for_open_connections_and_keeps_the_old_config_when_the_new_is_bad() {
    // No prompt runs: the provider only has to be configured, never reached.
    let mut daemon = Daemon::builder()
        .model("http://127.0.0.1:9/v1")
        .no_token()
        .spawn();
    let upgrade = Upgrade::new(Endpoint::Unix(daemon.unix().into()));
    let client = AcpClient::connect(&upgrade, daemon.config_dir())
        .unwrap_or_else(|e| panic!("{e}\n{}", daemon.log()));
    client.initialize();
    let config_toml = daemon.config_dir().join("config.toml");
    let work = tempfile::tempdir().unwrap();
    let params = json!({"cwd": work.path(), "mcpServers": [], "agentAlias": "late"});

    let unknown = client.call_err("session/new", params.clone());
    assert_eq!(unknown["code"], -32602, "before the reload: {unknown}");

    std::fs::write(
        &config_toml,
        "[agents.late]\nprovider = \"local\"\nmodel = \"m2\"\n",
    )
    .unwrap();
    daemon.launched.signal(libc::SIGHUP);
    daemon
        .launched
        .wait_text("zeroclaw: configuration reloaded");
    let created = client.call("session/new", params.clone());
    assert!(created["sessionId"].is_string(), "{created}");

    std::fs::write(&config_toml, "acp = 3\n").unwrap();
    daemon.launched.signal(libc::SIGHUP);
    // Waiting for the message names the offending key.
    daemon
        .launched
        .wait_text("reload failed, keeping the previous configuration: config key `acp`");
    let again = client.call("session/new", params);
    assert!(
        again["sessionId"].is_string(),
        "the kept config still has `late`: {again}"
    );

    client.assert_valid();
    let status = daemon.terminate();
    assert!(status.success(), "daemon exit {status}");
}
