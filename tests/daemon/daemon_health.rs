//! The daemon's probes: `GET /livez` (and its alias `/health`) answers while the process is
//! up; `GET /readyz` is 200 once serving (sandbox self-test passed, store and audit log open)
//! and 503 from the moment a drain begins, while a turn still runs — when new `/acp` upgrades
//! are refused with 503 too.

use crate::support;

use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::acp_client::{AcpClient, is_update_for, prompt_params};
use support::model_server::{ModelServer, Reply, finish, text};
use support::ws_conn::{Endpoint, Upgrade, raw_get, status_of};
use support::ws_daemon::Daemon;

fn get(daemon: &Daemon, target: &str, upgrade: bool) -> (u16, String) {
    let stream = UnixStream::connect(daemon.unix()).expect("connect");
    let raw = raw_get(stream, target, &[], upgrade);
    let body = raw
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status_of(&raw), body)
}

#[test]
fn readyz_is_200_when_serving_and_503_during_the_drain_while_livez_stays_up() {
    let model = ModelServer::start_blocking(vec![Reply::Sse(vec![
        text("partial "),
        text("rest").delayed(1500),
        finish("stop"),
    ])]);
    let mut daemon = Daemon::builder()
        .model(model.base_url())
        .no_token()
        .env("ZEROCLAW_gateway__shutdown_grace_secs", "60")
        .spawn();
    let (status, body) = get(&daemon, "/readyz", false);
    assert_eq!(status, 200, "{body}\n{}", daemon.log());
    let ready: Value = serde_json::from_str(body.trim()).unwrap();
    assert_eq!(ready["checks"]["audit"], true, "{ready}");
    assert_eq!(ready["checks"]["store"], true, "{ready}");
    assert_eq!(get(&daemon, "/livez", false).0, 200);
    assert_eq!(get(&daemon, "/health", false).0, 200);

    let upgrade = Upgrade::new(Endpoint::Unix(daemon.unix().into()));
    let client = AcpClient::connect(&upgrade, daemon.config_dir()).unwrap();
    client.initialize();
    let work = tempfile::tempdir().unwrap();
    let session = client.new_session(work.path());
    let id = client.send_request("session/prompt", prompt_params(&session, "go"));
    client.wait_for(|m| {
        is_update_for(m, &session) && m["params"]["update"]["content"]["text"] == "partial "
    });
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(daemon.pid() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let start = Instant::now();
    let (status, body) = loop {
        let (status, body) = get(&daemon, "/readyz", false);
        if status != 200 || start.elapsed() > Duration::from_secs(5) {
            break (status, body);
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status, 503, "{body}\n{}", daemon.log());
    let ready: Value = serde_json::from_str(body.trim()).unwrap();
    assert_eq!(ready["checks"]["draining"], true, "{ready}");
    assert_eq!(get(&daemon, "/livez", false).0, 200);
    assert_eq!(get(&daemon, "/acp", true).0, 503);
    let response = client.wait_response(&id);
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    // A second SIGTERM during the drain changes nothing; wait for the exit.
    let exit = daemon.terminate();
    assert!(exit.success(), "exit {exit}");
}
