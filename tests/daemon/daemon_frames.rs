//! Bad input at the WebSocket layer of the real daemon: an over-size frame, a non-UTF-8 binary
//! frame and a non-JSON frame each get a JSON-RPC error and the connection lives on; one
//! connection past `max_connections` is refused with 503 before the upgrade; the daemon serves
//! new clients afterwards.

use crate::support;

use std::net::TcpStream;

use serde_json::{Value, json};
use support::acp_client::AcpClient;
use support::ws_conn::{Endpoint, TokenAt, Upgrade, raw_get, status_of};
use support::ws_daemon::Daemon;

fn upgrade(daemon: &Daemon) -> Upgrade {
    Upgrade::new(Endpoint::Tcp(daemon.tcp())).token(TokenAt::Header, daemon.token())
}

fn connect(daemon: &Daemon) -> AcpClient {
    let client = AcpClient::connect(&upgrade(daemon), daemon.config_dir())
        .unwrap_or_else(|e| panic!("{e}\n{}", daemon.log()));
    assert_eq!(client.initialize()["protocolVersion"], 1);
    client
}

/// The first error response at or after index `from`.
fn next_error(client: &AcpClient, from: usize) -> Value {
    client.wait_for_from(from, |m| m.get("error").is_some()).1
}

#[test]
fn bad_frames_get_json_rpc_errors_and_the_connection_lives_on() {
    let daemon = Daemon::builder()
        .env("ZEROCLAW_gateway__max_frame_bytes", "4096")
        .spawn();
    let client = connect(&daemon);

    let from = client.message_count();
    let padding = "x".repeat(10_000);
    client.send_json(&json!({"jsonrpc": "2.0", "id": 77, "method": "initialize",
                             "params": {"p": padding}}));
    let error = next_error(&client, from);
    assert_eq!(error["error"]["code"], -32600, "{error}");
    assert!(
        client.messages().iter().all(|m| m["id"] != 77),
        "the over-size request must not be executed"
    );

    for bad in [&b"\xff\xfe\n"[..], b"{not json\n"] {
        let from = client.message_count();
        client.send_raw(bad);
        let error = next_error(&client, from);
        assert_eq!(error["error"]["code"], -32700, "{error}");
        assert_eq!(error["id"], Value::Null, "{error}");
    }
    assert_eq!(
        client.initialize()["protocolVersion"],
        1,
        "connection lives on"
    );
}

#[test]
fn a_connection_past_max_connections_is_refused_with_503_and_later_ones_are_served() {
    let daemon = Daemon::builder()
        .env("ZEROCLAW_gateway__max_connections", "2")
        .spawn();
    let first = connect(&daemon);
    let second = connect(&daemon);
    let bearer = format!("Bearer {}", daemon.token());
    let stream = TcpStream::connect(daemon.tcp()).unwrap();
    let raw = raw_get(stream, "/acp", &[("Authorization", &bearer)], true);
    assert_eq!(status_of(&raw), 503, "{raw}");
    assert_eq!(first.initialize()["protocolVersion"], 1);
    drop((first, second));
    // A slot frees up once a connection closes (retried: closing is asynchronous).
    let mut served = None;
    for _ in 0..500 {
        if let Ok(client) = AcpClient::connect(&upgrade(&daemon), daemon.config_dir()) {
            served = Some(client);
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let client = served.unwrap_or_else(|| panic!("never served again\n{}", daemon.log()));
    assert_eq!(client.initialize()["protocolVersion"], 1);
}
