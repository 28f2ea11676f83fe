//! `zeroclaw-acp-bridge` as a user meets it, through the real binaries: `--url` takes the
//! config's own address forms (`tcp:HOST:PORT`, `unix:PATH`) besides `ws://` URLs; a normal end
//! (stdin EOF, or the daemon closing the connection as it stops) prints nothing on stderr; a
//! refusal names the plain URL and the real token file path.

use crate::support;

use std::path::Path;

use serde_json::json;
use support::acp_client::AcpClient;
use support::ws_daemon::{Daemon, scrubbed};

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
