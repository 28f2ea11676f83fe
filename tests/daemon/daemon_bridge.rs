//! `zeroclaw-acp-bridge` as a user meets it, through the real binaries: `--url` takes the
//! config's own address forms (`tcp:HOST:PORT`, `unix:PATH`) besides `ws://` URLs; a normal end
//! (stdin EOF, or the daemon closing the connection as it stops) prints nothing on stderr; a
//! refusal names the plain URL and the real token file path. On the Unix socket the bridge
//! sends no token, so the README's recipe (a token in `acp-bridge-token`) still shows the
//! user's own stdio sessions.

use crate::support;

use std::path::Path;

use serde_json::json;
use support::acp_client::{AcpClient, agent_text, is_update_for, model_env};
use support::model_server::{ModelServer, text_reply};
use support::ws_daemon::{Daemon, listen_value, run_ok, scrubbed, zeroclaw};

fn bridge(config: &Path, url: &str, token: Option<&str>) -> AcpClient {
    let mut cmd = scrubbed(env!("CARGO_BIN_EXE_zeroclaw-acp-bridge"), config);
    cmd.args(["--url", url]);
    if let Some(token) = token {
        cmd.env("ZEROCLAW_ACP_BRIDGE_TOKEN", token);
    }
    AcpClient::spawn_command(cmd, config)
}

/// Initialize and one refused method through the bridge, then EOF: exit 0, stderr empty.
fn talk_then_eof(mut client: AcpClient) {
    assert_eq!(client.initialize()["protocolVersion"], 1);
    assert_eq!(client.call_err("no/such_method", json!({}))["code"], -32601);
    let status = client.shutdown();
    assert!(
        status.success(),
        "bridge exit {status}\n{}",
        client.stderr()
    );
    assert_eq!(client.stderr(), "", "stderr on a normal end");
}

#[test]
fn tcp_host_port_as_in_the_config_is_accepted_and_eof_ends_quietly() {
    let daemon = Daemon::builder().spawn();
    let url = format!("tcp:{}", daemon.tcp());
    talk_then_eof(bridge(daemon.config_dir(), &url, Some(daemon.token())));
}

#[test]
fn unix_path_as_in_the_config_is_accepted_and_eof_ends_quietly() {
    let daemon = Daemon::builder().no_token().spawn();
    let url = format!("unix:{}", daemon.unix().display());
    talk_then_eof(bridge(daemon.config_dir(), &url, None));
}

#[test]
fn a_daemon_stopping_normally_ends_the_bridge_quietly() {
    let mut daemon = Daemon::builder().no_token().spawn();
    let url = format!("unix:{}", daemon.unix().display());
    let mut client = bridge(daemon.config_dir(), &url, None);
    assert_eq!(client.initialize()["protocolVersion"], 1);
    assert!(daemon.terminate().success(), "{}", daemon.log());
    let status = client.wait_exit();
    assert!(
        status.success(),
        "bridge exit {status}\n{}",
        client.stderr()
    );
    assert_eq!(client.stderr(), "", "stderr on a normal end");
}

#[test]
fn a_refusal_names_the_plain_url_and_the_real_token_path() {
    let daemon = Daemon::builder().spawn();
    let url = format!("ws://{}/acp", daemon.tcp());
    let mut client = bridge(daemon.config_dir(), &url, None);
    let status = client.wait_exit();
    assert!(!status.success(), "bridge exit {status}");
    let stderr = client.stderr();
    assert!(stderr.contains(&format!("at {url} refused")), "{stderr}");
    let token_file = daemon.config_dir().join("acp-bridge-token");
    assert!(
        stderr.contains(&token_file.display().to_string()),
        "{stderr}"
    );
    assert!(
        !stderr.contains("Url(") && !stderr.contains("<config_dir>"),
        "{stderr}"
    );
}

/// The README's recipe: a session made with `zeroclaw acp` (principal `uid:<n>`), then
/// `zeroclaw daemon`, `zeroclaw token create --output <config_dir>/acp-bridge-token` and the
/// bridge on the configured Unix socket: the stdio session is listed and loads through it.
#[test]
fn through_the_unix_socket_the_bridge_sees_the_users_stdio_sessions_despite_a_token_file() {
    let model = ModelServer::start_blocking(vec![text_reply("from stdio")]);
    let config = tempfile::tempdir().unwrap();
    let config = config.path();
    let work = tempfile::tempdir().unwrap();
    let mut acp = zeroclaw(config);
    acp.arg("acp").envs(model_env(&model.base_url()));
    let mut stdio = AcpClient::spawn_command(acp, config);
    stdio.initialize();
    let session = stdio.new_session(work.path());
    let answer = stdio.prompt(&session, "hi");
    assert_eq!(answer["result"]["content"], "from stdio", "{answer}");
    assert!(stdio.shutdown().success(), "{}", stdio.stderr());

    let token_file = config.join("acp-bridge-token");
    run_ok(
        zeroclaw(config)
            .args(["token", "create", "--name", "bridge", "--output"])
            .arg(&token_file),
    );
    let daemon = Daemon::builder()
        .model(model.base_url())
        .config_dir(config)
        .no_token()
        .env("ZEROCLAW_LOG", "info")
        .spawn();
    let listen = listen_value(Some(daemon.unix()), true);
    let mut cmd = scrubbed(env!("CARGO_BIN_EXE_zeroclaw-acp-bridge"), config);
    cmd.arg("--config-dir")
        .arg(config)
        .env("ZEROCLAW_gateway__listen", &listen);
    let mut client = AcpClient::spawn_command(cmd, config);
    assert_eq!(client.initialize()["protocolVersion"], 1);
    let listed = client.call("session/list", json!({}));
    let ids: Vec<&str> = listed["sessions"]
        .as_array()
        .unwrap_or_else(|| panic!("{listed}"))
        .iter()
        .filter_map(|s| s["sessionId"].as_str())
        .collect();
    assert_eq!(ids, [session.as_str()], "{listed}\n{}", daemon.log());
    let from = client.message_count();
    client.call("session/load", json!({"sessionId": session}));
    let replayed: Vec<_> = client
        .messages_between(from, usize::MAX)
        .into_iter()
        .filter(|m| is_update_for(m, &session))
        .map(|m| m["params"]["update"].clone())
        .collect();
    assert_eq!(agent_text(&replayed), "from stdio", "{replayed:?}");
    let status = client.shutdown();
    assert!(
        status.success(),
        "bridge exit {status}\n{}",
        client.stderr()
    );
    let log = daemon.log();
    assert!(log.contains("connection admitted"), "{log}");
    assert!(
        !log.contains("token presented on the Unix socket"),
        "the bridge sent its token over the socket: {log}"
    );
}
