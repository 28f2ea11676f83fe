//! Authentication of the daemon's `GET /acp`, judged by the raw HTTP status before any upgrade:
//! no token, a wrong token, both token positions, a token in the URL (refused, saying where it
//! goes), a revoked token; browser `Origin`s on TCP (only `allowed_origins`); the selected
//! subprotocol (`zeroclaw.acp.v1` whenever offered, a `bearer.` entry never echoed);
//! `require_auth = false` only on loopback; peer credentials on the Unix socket (a token there
//! is ignored; a client run as `nobody` through `setpriv`); and isolation of sessions between
//! two principals.

use crate::support;

use std::net::TcpStream;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::UnixStream;
use std::process::Command;

use serde_json::{Value, json};
use support::acp_client::{AcpClient, prompt_params};
use support::model_server::{ModelServer, text_reply};
use support::ws_conn::{Endpoint, TokenAt, Upgrade, raw_get, status_of, try_upgrade};
use support::ws_daemon::{Daemon, Launched, create_token, revoke_token, zeroclaw};

/// The raw response to an upgrade request on the daemon's TCP listener.
fn tcp_upgrade(daemon: &Daemon, target: &str, headers: &[(&str, &str)]) -> String {
    let stream = TcpStream::connect(daemon.tcp()).expect("connect");
    raw_get(stream, target, headers, true)
}

fn assert_refused(raw: &str, what: &str) {
    assert_eq!(status_of(raw), 401, "{what}: {raw}");
    let lower = raw.to_ascii_lowercase();
    assert!(
        !lower.contains("sec-websocket-accept"),
        "{what} upgraded: {raw}"
    );
}

fn tcp(daemon: &Daemon) -> Endpoint {
    Endpoint::Tcp(daemon.tcp())
}

/// Opens `/acp` and proves the connection speaks ACP.
fn connect_and_initialize(upgrade: &Upgrade, daemon: &Daemon) -> AcpClient {
    let client = AcpClient::connect(upgrade, daemon.config_dir())
        .unwrap_or_else(|e| panic!("upgrade refused: {e}\n{}", daemon.log()));
    assert_eq!(client.initialize()["protocolVersion"], 1);
    client
}

#[test]
fn tcp_without_a_valid_token_is_401_before_the_upgrade() {
    let daemon = Daemon::builder().spawn();
    assert_refused(&tcp_upgrade(&daemon, "/acp", &[]), "no token");
    let wrong = [
        ("/acp", vec![("Authorization", "Bearer not-the-token")]),
        ("/acp?token=not-the-token", vec![]),
        (
            "/acp",
            vec![(
                "Sec-WebSocket-Protocol",
                "zeroclaw.acp.v1, bearer.not-the-token",
            )],
        ),
    ];
    for (target, headers) in &wrong {
        assert_refused(&tcp_upgrade(&daemon, target, headers), "wrong token");
    }
    // A plain GET without upgrade headers is refused the same way (checked before the upgrade).
    let stream = TcpStream::connect(daemon.tcp()).expect("connect");
    assert_refused(&raw_get(stream, "/acp", &[], false), "plain GET");
    // The daemon survived all of it.
    let ok = Upgrade::new(tcp(&daemon)).token(TokenAt::Header, daemon.token());
    connect_and_initialize(&ok, &daemon);
}

#[test]
fn both_token_positions_are_accepted() {
    let daemon = Daemon::builder().spawn();
    let token = daemon.token().to_string();
    for at in [TokenAt::Header, TokenAt::Subprotocol] {
        let upgrade = Upgrade::new(tcp(&daemon)).token(at.clone(), &token);
        let client = connect_and_initialize(&upgrade, &daemon);
        drop(client);
    }
    // Raw: the header form switches protocols, and so does a bare `bearer.` subprotocol.
    let bearer = format!("Bearer {token}");
    let raw = tcp_upgrade(&daemon, "/acp", &[("Authorization", &bearer)]);
    assert_eq!(status_of(&raw), 101, "{raw}");
    let offered = format!("bearer.{token}");
    let raw = tcp_upgrade(&daemon, "/acp", &[("Sec-WebSocket-Protocol", &offered)]);
    assert_eq!(status_of(&raw), 101, "{raw}");
}

#[test]
fn a_token_in_the_url_is_refused_saying_where_it_goes() {
    let daemon = Daemon::builder().spawn();
    // A valid token, alone in the URL or next to a valid header: refused either way.
    let target = format!("/acp?token={}", daemon.token());
    let bearer = format!("Bearer {}", daemon.token());
    for headers in [vec![], vec![("Authorization", bearer.as_str())]] {
        let raw = tcp_upgrade(&daemon, &target, &headers);
        assert_refused(&raw, "token in the URL");
        assert!(
            raw.contains("a token in the URL is refused")
                && raw.contains("Authorization: Bearer <token>")
                && raw.contains("bearer.<token>"),
            "{raw}"
        );
    }
    // On the Unix socket too, where no token is needed at all.
    let stream = UnixStream::connect(daemon.unix()).expect("connect");
    let raw = raw_get(stream, &target, &[], true);
    assert_refused(&raw, "token in the URL on the socket");
    assert!(raw.contains("no token is needed"), "{raw}");
}

#[test]
fn a_browser_origin_on_tcp_must_be_allowed() {
    let daemon = Daemon::builder()
        .env(
            "ZEROCLAW_gateway__allowed_origins",
            r#"["https://app.example"]"#,
        )
        .spawn();
    let bearer = format!("Bearer {}", daemon.token());
    let with_origin = |origin: &str| {
        tcp_upgrade(
            &daemon,
            "/acp",
            &[("Authorization", &bearer), ("Origin", origin)],
        )
    };
    let raw = with_origin("https://evil.example");
    assert_eq!(status_of(&raw), 403, "{raw}");
    assert!(!raw.to_ascii_lowercase().contains("sec-websocket-accept"));
    assert!(raw.contains("allowed_origins"), "{raw}");
    assert_eq!(status_of(&with_origin("https://app.example")), 101);
    // No `Origin`: not a browser, unaffected.
    let raw = tcp_upgrade(&daemon, "/acp", &[("Authorization", &bearer)]);
    assert_eq!(status_of(&raw), 101, "{raw}");
    // The Unix socket (no browser reaches it) does not check `Origin`.
    let stream = UnixStream::connect(daemon.unix()).expect("connect");
    let raw = raw_get(stream, "/acp", &[("Origin", "https://evil.example")], true);
    assert_eq!(status_of(&raw), 101, "{raw}");
    drop(daemon);

    // By default no origin is allowed, not even a local page's.
    let default = Daemon::builder().spawn();
    let bearer = format!("Bearer {}", default.token());
    let raw = tcp_upgrade(
        &default,
        "/acp",
        &[
            ("Authorization", &bearer),
            ("Origin", "http://localhost:8000"),
        ],
    );
    assert_eq!(status_of(&raw), 403, "{raw}");
}

#[test]
fn the_acp_subprotocol_is_echoed_when_offered_with_a_bearer_entry() {
    let daemon = Daemon::builder().spawn();
    let upgrade = Upgrade::new(tcp(&daemon))
        .protocol("zeroclaw.acp.v1")
        .token(TokenAt::Subprotocol, daemon.token());
    let response = try_upgrade(&upgrade).unwrap_or_else(|e| panic!("refused: {e}"));
    let echoed = response.headers().get("sec-websocket-protocol");
    assert_eq!(
        echoed.and_then(|v| v.to_str().ok()),
        Some("zeroclaw.acp.v1"),
        "{response:?}"
    );
}

/// The values of a raw response's `Sec-WebSocket-Protocol` header lines.
fn selected_protocols(raw: &str) -> Vec<String> {
    let head = raw.split("\r\n\r\n").next().unwrap_or_default();
    head.lines()
        .filter_map(|line| line.split_once(':'))
        .filter(|(name, _)| name.trim().eq_ignore_ascii_case("sec-websocket-protocol"))
        .map(|(_, value)| value.trim().to_string())
        .collect()
}

#[test]
fn the_acp_subprotocol_is_selected_in_any_order_and_a_bearer_entry_never_echoed() {
    let daemon = Daemon::builder().spawn();
    let token = daemon.token();
    let bearer = format!("bearer.{token}");
    let offers: [Vec<(&str, String)>; 3] = [
        vec![(
            "Sec-WebSocket-Protocol",
            format!("{bearer}, zeroclaw.acp.v1"),
        )],
        vec![(
            "Sec-WebSocket-Protocol",
            format!("zeroclaw.acp.v1,{bearer}"),
        )],
        vec![
            ("Sec-WebSocket-Protocol", bearer.clone()),
            ("Sec-WebSocket-Protocol", "zeroclaw.acp.v1".to_string()),
        ],
    ];
    for offer in &offers {
        let headers: Vec<(&str, &str)> = offer.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let raw = tcp_upgrade(&daemon, "/acp", &headers);
        assert_eq!(status_of(&raw), 101, "{offer:?}: {raw}");
        assert_eq!(
            selected_protocols(&raw),
            ["zeroclaw.acp.v1"],
            "{offer:?}: {raw}"
        );
        assert!(!raw.contains(token), "the token is echoed: {raw}");
    }
    // Only the bearer entry: authenticated, and nothing selected (the token is never echoed).
    let raw = tcp_upgrade(&daemon, "/acp", &[("Sec-WebSocket-Protocol", &bearer)]);
    assert_eq!(status_of(&raw), 101, "{raw}");
    assert!(selected_protocols(&raw).is_empty(), "{raw}");
    assert!(!raw.contains(token), "the token is echoed: {raw}");
    // The ACP subprotocol alone on the Unix socket (peer credentials) is selected too.
    let stream = UnixStream::connect(daemon.unix()).expect("connect");
    let raw = raw_get(
        stream,
        "/acp",
        &[("Sec-WebSocket-Protocol", "zeroclaw.acp.v1")],
        true,
    );
    assert_eq!(status_of(&raw), 101, "{raw}");
    assert_eq!(selected_protocols(&raw), ["zeroclaw.acp.v1"], "{raw}");
}

#[test]
fn a_revoked_token_is_refused_by_the_running_daemon() {
    let daemon = Daemon::builder().spawn();
    let gone = create_token(daemon.config_dir(), "gone");
    let upgrade = Upgrade::new(tcp(&daemon)).token(TokenAt::Header, &gone);
    connect_and_initialize(&upgrade, &daemon);
    revoke_token(daemon.config_dir(), "gone");
    let bearer = format!("Bearer {gone}");
    assert_refused(
        &tcp_upgrade(&daemon, "/acp", &[("Authorization", &bearer)]),
        "revoked token",
    );
    // Other tokens keep working.
    let still = Upgrade::new(tcp(&daemon)).token(TokenAt::Subprotocol, daemon.token());
    connect_and_initialize(&still, &daemon);
}

#[test]
fn tokens_are_stored_only_as_hashes_in_a_private_file() {
    let daemon = Daemon::builder().spawn();
    let file = daemon.config_dir().join("tokens.json");
    let meta = std::fs::metadata(&file).expect("tokens.json");
    assert_eq!(meta.mode() & 0o777, 0o600, "tokens.json mode");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        !text.contains(daemon.token()),
        "the token is stored in clear"
    );
    let list = Command::new(env!("CARGO_BIN_EXE_zeroclaw"))
        .env("ZEROCLAW_CONFIG_DIR", daemon.config_dir())
        .args(["token", "list"])
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&list.stdout);
    assert!(listed.contains("test"), "{listed}");
    assert!(
        !listed.contains(daemon.token()),
        "token list prints the secret"
    );
}

#[test]
fn require_auth_false_is_honoured_on_loopback() {
    let daemon = Daemon::builder()
        .tcp_only()
        .no_token()
        .env("ZEROCLAW_gateway__require_auth", "false")
        .spawn();
    let raw = tcp_upgrade(&daemon, "/acp", &[]);
    assert_eq!(status_of(&raw), 101, "{raw}");
    connect_and_initialize(&Upgrade::new(tcp(&daemon)), &daemon);
}

/// A non-loopback IPv4 address of this host (`hostname -I`), if it has one.
fn non_loopback_ipv4() -> Option<std::net::Ipv4Addr> {
    let out = Command::new("hostname").arg("-I").output().ok()?;
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|w| w.parse::<std::net::Ipv4Addr>().ok())
        .find(|ip| !ip.is_loopback())
}

#[test]
fn require_auth_false_is_not_honoured_off_loopback() {
    let Some(ip) = non_loopback_ipv4() else {
        support::require_feature("no non-loopback IPv4 address to connect through");
        return;
    };
    let config = tempfile::tempdir().unwrap();
    let mut cmd = zeroclaw(config.path());
    cmd.arg("daemon")
        .env("ZEROCLAW_gateway__listen", r#"["tcp:0.0.0.0:0"]"#)
        .env("ZEROCLAW_gateway__require_auth", "false");
    let mut launched = Launched::spawn(cmd);
    // Either the daemon refuses to start, or it starts and demands a token off loopback.
    let refused_start = loop {
        if let Ok(Some(status)) = launched.try_wait() {
            break Some(status);
        }
        if launched.text().contains("listening on tcp:") {
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    match refused_start {
        Some(status) => {
            assert!(!status.success(), "exit {status}");
            let log = launched.text();
            assert!(log.contains("require_auth"), "{log}");
        }
        None => {
            let port = launched.wait_tcp().port();
            let outside = TcpStream::connect((ip, port)).expect("connect via eth");
            assert_refused(
                &raw_get(outside, "/acp", &[], true),
                "no token off loopback",
            );
            // The same daemon, reached on loopback, honours require_auth = false.
            let inside = TcpStream::connect(("127.0.0.1", port)).expect("connect via lo");
            let raw = raw_get(inside, "/acp", &[], true);
            assert_eq!(status_of(&raw), 101, "{raw}");
        }
    }
    launched.kill();
}

#[test]
fn health_reports_version_backend_and_active_sessions() {
    let daemon = Daemon::builder().spawn();
    let stream = TcpStream::connect(daemon.tcp()).unwrap();
    let raw = raw_get(stream, "/health", &[], false);
    assert_eq!(status_of(&raw), 200, "{raw}");
    let body: Value = serde_json::from_str(raw.split_once("\r\n\r\n").unwrap().1.trim())
        .unwrap_or_else(|e| panic!("health body is JSON ({e}): {raw}"));
    assert_eq!(body["version"], env!("CARGO_PKG_VERSION"), "{body}");
    assert!(body["sandbox"]["backend"].is_string(), "{body}");
    assert_eq!(body["sessions"]["active"], 0, "{body}");

    let upgrade = Upgrade::new(tcp(&daemon)).token(TokenAt::Header, daemon.token());
    let client = connect_and_initialize(&upgrade, &daemon);
    let work = tempfile::tempdir().unwrap();
    client.new_session(work.path());
    let stream = UnixStream::connect(daemon.unix()).unwrap();
    let raw = raw_get(stream, "/health", &[], false);
    assert!(raw.contains("\"active\":1"), "{raw}");
}

// --- Unix socket peer credentials ---

/// Whether this process runs as root (the peer-credential tests need to switch uid).
fn running_as_root() -> bool {
    std::fs::metadata("/proc/self")
        .map(|m| m.uid() == 0)
        .unwrap_or(false)
}

/// Skips (printing why) unless the environment allows; under `CI=true` a missing one fails.
fn require(feature: &str, present: bool) -> bool {
    if present {
        return true;
    }
    support::require_feature(&format!("{feature} is missing"));
    false
}

/// Runs the upgrade helper below as `nobody` (gid 0, so the 0660 socket can be opened and only
/// the peer-credential check decides); returns the HTTP status it saw.
fn status_as_nobody(socket: &std::path::Path, token: Option<&str>) -> u16 {
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=0", "--clear-groups", "--"])
        .arg(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            // This file is the module `daemon_auth` of its test binary.
            "daemon_auth::peer_helper",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("ZC_PEER_SOCKET", socket)
        .env("ZC_PEER_TOKEN", token.unwrap_or_default())
        .output()
        .expect("run setpriv");
    let stdout = String::from_utf8_lossy(&out.stdout);
    stdout
        .lines()
        .find_map(|l| l.split_once("PEER-STATUS ").map(|(_, s)| s))
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| {
            panic!(
                "helper gave no status: {stdout}\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        })
}

#[test]
#[ignore = "helper: run by the peer-credential tests as another uid through setpriv"]
fn peer_helper() {
    let socket = std::env::var("ZC_PEER_SOCKET").expect("ZC_PEER_SOCKET");
    let token = std::env::var("ZC_PEER_TOKEN").unwrap_or_default();
    let bearer = format!("Bearer {token}");
    let headers: &[(&str, &str)] = match token.is_empty() {
        true => &[],
        false => &[("Authorization", &bearer)],
    };
    let stream = UnixStream::connect(&socket).expect("connect as nobody");
    let raw = raw_get(stream, "/acp", headers, true);
    println!("PEER-STATUS {}", status_of(&raw));
}

/// The ids `session/list` answers.
fn listed_ids(client: &AcpClient) -> Vec<String> {
    let listed = client.call("session/list", json!({}));
    listed["sessions"]
        .as_array()
        .unwrap_or_else(|| panic!("no sessions array: {listed}"))
        .iter()
        .filter_map(|s| s["sessionId"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn a_token_on_the_unix_socket_is_ignored_and_the_peer_stays_its_uid() {
    let daemon = Daemon::builder().env("ZEROCLAW_LOG", "info").spawn();
    let unix = || Upgrade::new(Endpoint::Unix(daemon.unix().into()));
    let work = tempfile::tempdir().unwrap();
    let owner = connect_and_initialize(&unix(), &daemon);
    let session = owner.new_session(work.path());
    assert_eq!(listed_ids(&owner), [session.as_str()]);
    // A valid token (header) and a wrong one (subprotocol entry): the same uid either way.
    let with_tokens = [
        unix().token(TokenAt::Header, daemon.token()),
        unix().token(TokenAt::Subprotocol, "not-the-token"),
    ];
    for upgrade in &with_tokens {
        let client = connect_and_initialize(upgrade, &daemon);
        assert_eq!(listed_ids(&client), [session.as_str()], "{upgrade:?}");
    }
    let log = daemon.log();
    assert!(
        log.contains("a token presented on the Unix socket is ignored"),
        "{log}"
    );
    assert!(!log.contains("not-the-token"), "the token is logged: {log}");
}

/// Lets `nobody` reach the socket inside the daemon's private temp dir.
fn open_socket_dir(daemon: &Daemon) {
    let dir = daemon.unix().parent().unwrap();
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn the_unix_socket_is_0660_and_admits_the_daemons_own_uid_by_peer_credentials() {
    let daemon = Daemon::builder().spawn();
    let mode = std::fs::metadata(daemon.unix()).unwrap().mode() & 0o777;
    assert_eq!(mode, 0o660, "socket mode {mode:o}");
    let raw = raw_get(
        UnixStream::connect(daemon.unix()).unwrap(),
        "/acp",
        &[],
        true,
    );
    assert_eq!(status_of(&raw), 101, "same uid admitted: {raw}");
}

#[test]
fn another_uid_on_the_unix_socket_needs_an_allowed_uid_and_a_token_does_not_help() {
    if !require("root (to run a client as nobody)", running_as_root())
        || !require(
            "setpriv",
            Command::new("setpriv").arg("--version").output().is_ok(),
        )
    {
        return;
    }
    let daemon = Daemon::builder().spawn();
    open_socket_dir(&daemon);
    assert_eq!(
        status_as_nobody(daemon.unix(), None),
        401,
        "{}",
        daemon.log()
    );
    // Peer credentials are the principal on the socket: a valid token is ignored there.
    assert_eq!(status_as_nobody(daemon.unix(), Some(daemon.token())), 401);
    drop(daemon);

    let allowed = Daemon::builder()
        .env("ZEROCLAW_gateway__allowed_uids", "[65534]")
        .spawn();
    open_socket_dir(&allowed);
    assert_eq!(
        status_as_nobody(allowed.unix(), None),
        101,
        "{}",
        allowed.log()
    );
}

// --- Isolation between principals ---

#[test]
fn another_principal_gets_session_not_found_and_the_owner_can_reconnect() {
    let model = ModelServer::start_blocking(vec![text_reply("mine"), text_reply("again")]);
    let daemon = Daemon::builder().model(model.base_url()).spawn();
    let alice = create_token(daemon.config_dir(), "alice");
    let bob = create_token(daemon.config_dir(), "bob");
    let as_alice = Upgrade::new(tcp(&daemon)).token(TokenAt::Header, &alice);
    let as_bob = Upgrade::new(tcp(&daemon)).token(TokenAt::Header, &bob);
    let work = tempfile::tempdir().unwrap();

    let first = connect_and_initialize(&as_alice, &daemon);
    let session = first.new_session(work.path());
    assert_eq!(first.prompt(&session, "hi")["result"]["content"], "mine");

    let intruders = [
        connect_and_initialize(&as_bob, &daemon),
        // The Unix peer (uid:0) is another principal than token:alice.
        connect_and_initialize(&Upgrade::new(Endpoint::Unix(daemon.unix().into())), &daemon),
    ];
    for other in &intruders {
        for (method, params) in [
            ("session/load", json!({"sessionId": session})),
            ("session/prompt", prompt_params(&session, "steal")),
            ("session/close", json!({"sessionId": session})),
        ] {
            let error = other.call_err(method, params);
            assert_eq!(
                error["code"], -32000,
                "{method} by another principal: {error}"
            );
        }
    }
    // The session outlives its connection and the owner loads it from a new one.
    drop(first);
    let again = connect_and_initialize(&as_alice, &daemon);
    let from = again.message_count();
    again.call("session/load", json!({"sessionId": session}));
    let replay = again.messages_between(from, usize::MAX);
    assert!(
        replay
            .iter()
            .any(|m| m["params"]["update"]["content"]["text"] == "mine"),
        "replayed: {replay:?}"
    );
    assert_eq!(again.prompt(&session, "more")["result"]["content"], "again");
    assert_eq!(model.requests().len(), 2, "the intruders reached the model");
}
