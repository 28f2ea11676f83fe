//! The daemon's life around its connections: SIGTERM during a turn (finished within the grace
//! period, or cancelled after it; either way answered or closed cleanly, exit 0, and the turn
//! persisted for a fresh daemon), SIGTERM saying on stderr what it waits for (or that nothing
//! runs and it exits at once), and a full session driven through `zeroclaw-acp-bridge`
//! (stdio in, daemon behind) over TCP with a token and over the configured Unix socket. The
//! start-up's sandbox self-test leaves nothing in the temporary directory.

use crate::support;

use serde_json::{Value, json};
use support::acp_client::{AcpClient, agent_text, is_update_for, prompt_params};
use support::model_server::{ModelServer, Reply, finish, text, text_reply};
use support::ws_conn::{Endpoint, Upgrade};
use support::ws_daemon::{Daemon, listen_value, scrubbed};

/// A stream whose second chunk comes after `ms` milliseconds.
fn slow_stream(ms: u64) -> Reply {
    Reply::Sse(vec![
        text("partial "),
        text("rest").delayed(ms),
        finish("stop"),
    ])
}

/// A daemon on the Unix socket (principal `uid:<self>` stays the same across restarts).
fn daemon(model: &ModelServer, config: &std::path::Path, grace_secs: u64) -> Daemon {
    Daemon::builder()
        .model(model.base_url())
        .config_dir(config)
        .no_token()
        .env(
            "ZEROCLAW_gateway__shutdown_grace_secs",
            grace_secs.to_string(),
        )
        .spawn()
}

fn connect(daemon: &Daemon) -> AcpClient {
    let upgrade = Upgrade::new(Endpoint::Unix(daemon.unix().into()));
    let client = AcpClient::connect(&upgrade, daemon.config_dir())
        .unwrap_or_else(|e| panic!("{e}\n{}", daemon.log()));
    client.initialize();
    client
}

/// Starts a turn and waits for its first chunk; returns the prompt's id.
fn start_turn(client: &AcpClient, session: &str) -> Value {
    let id = client.send_request("session/prompt", prompt_params(session, "go"));
    client.wait_for(|m| {
        is_update_for(m, session) && m["params"]["update"]["content"]["text"] == "partial "
    });
    id
}

/// Loads the session in a fresh daemon on the same config dir; returns the replayed updates.
fn replay_in_fresh_daemon(
    model: &ModelServer,
    config: &std::path::Path,
    session: &str,
) -> Vec<Value> {
    let fresh = daemon(model, config, 30);
    let client = connect(&fresh);
    let from = client.message_count();
    client.call("session/load", json!({"sessionId": session}));
    client
        .messages_between(from, usize::MAX)
        .into_iter()
        .filter(|m| is_update_for(m, session))
        .map(|m| m["params"]["update"].clone())
        .collect()
}

#[test]
fn sigterm_lets_a_running_turn_finish_within_the_grace_period_and_persists_it() {
    let model = ModelServer::start_blocking(vec![slow_stream(300)]);
    let config = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let mut first = daemon(&model, config.path(), 60);
    let client = connect(&first);
    let session = client.new_session(work.path());
    let id = start_turn(&client, &session);
    let exit = first.terminate();
    let log = first.log();
    assert!(exit.success(), "exit {exit}\n{log}");
    assert!(
        log.contains(
            "SIGTERM: waiting up to 60s (shutdown_grace_secs) for 1 running turn(s) to finish"
        ),
        "the drain does not say what it waits for:\n{log}"
    );
    let response = client.wait_response(&id);
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    assert_eq!(response["result"]["content"], "partial rest");
    client.wait_eof();
    drop(client);

    let replayed = replay_in_fresh_daemon(&model, config.path(), &session);
    assert_eq!(agent_text(&replayed), "partial rest", "{replayed:?}");
}

#[test]
fn sigterm_cancels_a_turn_that_outlasts_the_grace_period_and_persists_it() {
    let model = ModelServer::start_blocking(vec![slow_stream(600_000)]);
    let config = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let mut first = daemon(&model, config.path(), 1);
    let client = connect(&first);
    let session = client.new_session(work.path());
    let id = start_turn(&client, &session);
    let exit = first.terminate();
    assert!(exit.success(), "exit {exit}\n{}", first.log());
    // Either the cancelled answer arrived before the close, or the connection closed cleanly.
    client.wait_eof();
    let answered = client
        .messages()
        .into_iter()
        .find(|m| m.get("id") == Some(&id) && m.get("method").is_none());
    if let Some(response) = answered {
        assert_eq!(response["result"]["stopReason"], "cancelled", "{response}");
    }
    assert!(model.wait_aborted(1), "the model stream was not aborted");
    drop(client);

    let replayed = replay_in_fresh_daemon(&model, config.path(), &session);
    assert_eq!(
        replayed[0]["sessionUpdate"], "user_message_chunk",
        "{replayed:?}"
    );
    assert!(
        agent_text(&replayed).starts_with("partial"),
        "the streamed part is kept: {replayed:?}"
    );
}

#[test]
fn sigterm_with_nothing_running_says_it_exits_at_once_or_which_connections_it_closes() {
    let config = tempfile::tempdir().unwrap();
    let mut idle = Daemon::builder()
        .config_dir(config.path())
        .no_token()
        .spawn();
    assert!(idle.terminate().success(), "{}", idle.log());
    let log = idle.log();
    assert!(
        log.contains("zeroclaw: SIGTERM: nothing running, exiting now"),
        "{log}"
    );

    let model = ModelServer::start_blocking(vec![]);
    let mut connected = daemon(&model, config.path(), 30);
    let client = connect(&connected);
    assert!(connected.terminate().success(), "{}", connected.log());
    client.wait_eof();
    let log = connected.log();
    assert!(
        log.contains("zeroclaw: SIGTERM: no turn running; closing 1 open connection(s)"),
        "{log}"
    );
}

/// `zeroclaw-acp-bridge` as the stdio server end of a test client.
fn bridge(config: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> AcpClient {
    let mut cmd = scrubbed(env!("CARGO_BIN_EXE_zeroclaw-acp-bridge"), config);
    cmd.args(args).envs(env.iter().copied());
    AcpClient::spawn_command(cmd, config)
}

/// Initialize, a session, a streamed turn with a cancel-free end, a second turn: all through
/// the bridge; then stdin EOF ends the bridge with status 0.
fn full_session(client: &mut AcpClient, model: &ModelServer) {
    assert_eq!(client.initialize()["protocolVersion"], 1);
    let work = tempfile::tempdir().unwrap();
    let session = client.new_session(work.path());
    let resp = client.prompt(&session, "hello");
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");
    assert_eq!(agent_text(&client.updates_for(&session)), "Hello, world");
    model.push(text_reply("second"));
    let resp = client.prompt(&session, "again");
    assert_eq!(resp["result"]["content"], "second", "{resp}");
    let error = client.call_err("no/such_method", json!({}));
    assert_eq!(error["code"], -32601, "{error}");
    let status = client.shutdown();
    assert!(
        status.success(),
        "bridge exit {status}\n{}",
        client.stderr()
    );
}

fn hello_world() -> Reply {
    Reply::Sse(vec![text("Hello, "), text("world"), finish("stop")])
}

#[test]
fn a_full_session_through_the_bridge_over_tcp_with_a_token() {
    let model = ModelServer::start_blocking(vec![hello_world()]);
    let daemon = Daemon::builder().model(model.base_url()).spawn();
    let url = format!("ws://{}/acp", daemon.tcp());
    let mut client = bridge(
        daemon.config_dir(),
        &["--url", &url],
        &[("ZEROCLAW_ACP_BRIDGE_TOKEN", daemon.token())],
    );
    full_session(&mut client, &model);
}

#[test]
fn the_bridge_finds_the_unix_socket_in_the_config_and_reports_a_vanished_daemon() {
    let model = ModelServer::start_blocking(vec![hello_world()]);
    let mut daemon = Daemon::builder().model(model.base_url()).no_token().spawn();
    let listen = listen_value(Some(daemon.unix()), true);
    let config = daemon.config_dir().to_path_buf();
    let args = ["--config-dir", config.to_str().unwrap()];
    let env = [("ZEROCLAW_gateway__listen", listen.as_str())];
    let mut client = bridge(&config, &args, &env);
    full_session(&mut client, &model);

    // A second bridge loses its daemon: it exits non-zero with a message.
    let mut orphan = bridge(&config, &args, &env);
    assert_eq!(orphan.initialize()["protocolVersion"], 1);
    daemon.launched.kill();
    let status = orphan.wait_exit();
    assert!(!status.success(), "bridge exit {status}");
    assert!(!orphan.stderr().trim().is_empty(), "no message on stderr");
}

/// The self-test runs `true` confined in a scratch workspace under the temporary directory;
/// once the daemon serves, that workspace is gone, whatever the run left in it.
#[test]
fn the_sandbox_self_test_leaves_nothing_in_the_temp_dir() {
    let tmp = tempfile::tempdir().unwrap();
    let mut daemon = Daemon::builder()
        .env("TMPDIR", tmp.path().display().to_string())
        .spawn();
    let stream = std::net::TcpStream::connect(daemon.tcp()).unwrap();
    let _ = support::ws_conn::raw_get(stream, "/health", &[], false);
    let left: Vec<String> = std::fs::read_dir(tmp.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("zeroclaw-self-test-"))
        .collect();
    daemon.terminate();
    assert!(left.is_empty(), "the self-test left {left:?} behind");
}
