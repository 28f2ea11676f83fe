//! The client's stdio MCP servers through `zeroclaw acp`: the scripted model calls a tool of
//! a small Python MCP server (`mcp_support/server.py`) given in `session/new`'s
//! `mcpServers`; the client sees it as a tool call whose kind comes from the annotations,
//! supervised asks first, and the server runs confined — its attempts to read `~/.ssh`, write
//! outside the workspace and connect to a loopback listener of the test are each refused by
//! the kernel, judged from outside. The server dies with the session and with a `kill -9`ed
//! process; a server that crashes, hangs or never starts fails the call and the session
//! lives on.

use crate::support;
use crate::tools_support;

use std::net::TcpListener;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use support::model_server::text_reply;
use tools_support::{ENV_CANARY, KEY_CANARY, Scene, Setup};

const SERVER: &str = include_str!("../mcp_support/server.py");

/// A stdio `mcpServers` entry running the test server with `marker` in its argv.
fn entry(name: &str, marker: &str, mode: &str, env: Value) -> Value {
    json!({
        "name": name,
        "command": "/usr/bin/python3",
        "args": ["-c", SERVER, marker, mode],
        "env": env,
    })
}

/// A unique argv marker, to find the server's processes from outside.
fn marker(what: &str) -> String {
    format!("zc-mcp-{what}-{}-{}", std::process::id(), rand_suffix())
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default()
}

/// Makes a session with these servers the scene's session.
pub(crate) fn with_servers(scene: &mut Scene, servers: Value) {
    let result = scene.client.call(
        "session/new",
        json!({"cwd": scene.ws(), "mcpServers": servers}),
    );
    scene.session = result["sessionId"].as_str().expect("sessionId").to_owned();
}

/// Pids of processes whose command line contains `marker`.
fn pids_with(marker: &str) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| String::from_utf8_lossy(&c).contains(marker))
                .unwrap_or(false)
        })
        .collect()
}

fn wait_gone(marker: &str, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if pids_with(marker).is_empty() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    pids_with(marker).is_empty()
}

fn tool_names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn a_client_server_runs_confined_and_its_tool_is_a_gated_tool_call() {
    // Under /var/tmp, not the temp dir the sandbox replaces with its own: "outside" is then
    // a host path the server can name.
    let mut s = Scene::start(Setup::level("supervised").under("/var/tmp"));
    let listener = TcpListener::bind("127.0.0.1:0").expect("loopback listener");
    listener.set_nonblocking(true).expect("nonblocking");
    let port = listener.local_addr().unwrap().port();
    let outside = s.root.path().join("outside");
    let secret = s.home.path().join(".ssh/id_ed25519");
    let mark = marker("probe");
    let env = json!([
        {"name": "PROBE_SECRET", "value": secret},
        {"name": "PROBE_OUTSIDE", "value": outside},
        {"name": "PROBE_PORT", "value": port.to_string()},
        {"name": "MCP_GIVEN", "value": "given-by-client"},
    ]);
    with_servers(&mut s, json!([entry("t", &mark, "ok", env)]));
    assert!(
        pids_with(&mark).is_empty(),
        "started lazily, at the first prompt"
    );
    let out = s.call("mcp__t__probe", json!({"note": "hi"}));
    out.assert_completed();
    assert_eq!(out.call["kind"], "read", "readOnlyHint: {}", out.describe());
    assert_eq!(out.permission_requests.len(), 1, "supervised asks first");
    let asked = &out.permission_requests[0]["params"]["toolCall"];
    assert!(
        asked["title"].as_str().unwrap().contains("mcp__t__probe"),
        "{asked}"
    );
    out.assert_result_contains("secret:denied")
        .assert_result_contains("outside:denied")
        .assert_result_contains("connect:denied")
        .assert_result_contains("given:given-by-client")
        .assert_result_contains("canary:-");
    let ws = s.ws().canonicalize().unwrap();
    out.assert_result_contains(&format!("cwd:{}", ws.display()));
    // Judged from outside too: nothing reached the listener, nothing was written, no leak.
    assert!(
        matches!(listener.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "the listener saw a connection"
    );
    assert!(!outside.exists(), "the server wrote outside the workspace");
    let seen = s.everything_seen();
    assert!(!seen.contains(KEY_CANARY), "the secret leaked");
    assert!(
        !seen.contains(ENV_CANARY),
        "the daemon's environment leaked"
    );
    // The model was offered the tool with its schema.
    let first = &s.model.requests()[0];
    assert!(
        tool_names(first).contains(&"mcp__t__probe".to_owned()),
        "{first}"
    );
    let offered = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "mcp__t__probe")
        .unwrap();
    assert_eq!(
        offered["function"]["parameters"]["properties"]["note"]["type"],
        "string"
    );
    // Alive for the session's life, gone with it.
    assert!(
        !pids_with(&mark).is_empty(),
        "the server lives with the session"
    );
    s.client
        .call("session/close", json!({"sessionId": s.session}));
    assert!(
        wait_gone(&mark, Duration::from_secs(10)),
        "the server outlived its closed session: {:?}",
        pids_with(&mark)
    );
}

#[test]
fn media_results_map_to_acp_content_and_blobs_land_in_uploads() {
    let mut s = Scene::start(Setup::level("full"));
    let mark = marker("media");
    with_servers(&mut s, json!([entry("m", &mark, "ok", json!([]))]));
    let out = s.call("mcp__m__media", json!({}));
    out.assert_completed().assert_result_contains("media-ok");
    assert_eq!(out.call["kind"], "other");
    let last = out.updates.last().unwrap();
    let content = last["content"].as_array().unwrap();
    assert!(
        content
            .iter()
            .any(|c| c["content"]["type"] == "image" && c["content"]["mimeType"] == "image/png"),
        "{last}"
    );
    let uploads: Vec<_> = std::fs::read_dir(s.ws().join("uploads"))
        .expect("uploads/")
        .filter_map(|e| e.ok())
        .collect();
    assert_eq!(uploads.len(), 1, "{uploads:?}");
    assert_eq!(std::fs::read(uploads[0].path()).unwrap(), b"%PDF-zc-mcp");
    assert!(uploads[0].path().extension().is_some_and(|e| e == "pdf"));
    out.assert_result_contains(&uploads[0].path().display().to_string());
}

#[test]
fn crashing_hanging_and_dead_servers_fail_the_call_and_the_session_lives_on() {
    let setup = Setup::level("full").extra("[sandbox.limits]\nwall_time_secs = 3\n");
    let mut s = Scene::start(setup);
    let (crash, hang, dead) = (marker("crash"), marker("hang"), marker("dead"));
    with_servers(
        &mut s,
        json!([
            entry("c", &crash, "ok", json!([])),
            entry("h", &hang, "ok", json!([])),
            entry("d", &dead, "die", json!([])),
        ]),
    );
    let out = s.call("mcp__c__crash", json!({}));
    out.assert_failed()
        .assert_result_contains("exited with code 3")
        .assert_result_contains("crashing now");
    assert!(wait_gone(&crash, Duration::from_secs(5)));
    let again = s.call("mcp__c__probe", json!({}));
    again.assert_failed().assert_result_contains("not running");
    let started = Instant::now();
    let out = s.call("mcp__h__hang", json!({}));
    out.assert_failed().assert_result_contains("timed out");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    let out = s.call("mcp__d__anything", json!({}));
    out.assert_failed()
        .assert_result_contains("not available")
        .assert_result_contains("boom");
    s.model.push(text_reply("still here"));
    let response = s.client.prompt(&s.session, "are you there?");
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    s.client.assert_valid();
    drop(s);
    assert!(
        wait_gone(&hang, Duration::from_secs(10)),
        "the hanging server outlived the process"
    );
}

#[test]
fn the_server_dies_with_a_killed_process() {
    let mut s = Scene::start(Setup::level("full"));
    let mark = marker("kill9");
    with_servers(&mut s, json!([entry("k", &mark, "ok", json!([]))]));
    s.call("mcp__k__media", json!({})).assert_completed();
    assert!(!pids_with(&mark).is_empty(), "running");
    s.client.kill9();
    assert!(
        wait_gone(&mark, Duration::from_secs(10)),
        "the server survived kill -9 of zeroclaw: {:?}",
        pids_with(&mark)
    );
}

#[test]
fn bad_entries_are_invalid_params_and_http_is_refused_clearly() {
    let s = Scene::start(Setup::level("full"));
    let ws = s.ws();
    for (servers, needle) in [
        (json!([{"name": "x y", "command": "/bin/true"}]), "letters"),
        (
            json!([{"type": "sse", "name": "h", "url": "http://127.0.0.1:1/sse", "headers": []}]),
            "not supported",
        ),
        (
            json!([{"type": "http", "name": "h", "url": "http://127.0.0.1:1/mcp", "headers": []}]),
            "network",
        ),
        (json!({"name": "a"}), "array"),
    ] {
        let error = s
            .client
            .call_err("session/new", json!({"cwd": ws, "mcpServers": servers}));
        assert_eq!(error["code"], -32602, "{error}");
        assert!(
            error["message"].as_str().unwrap().contains(needle),
            "{error}"
        );
    }
}

#[test]
fn an_operator_server_reaches_every_session_of_its_agent_and_trusted_means_no_question() {
    let mark = marker("operator");
    let toml = format!(
        "[[mcp.servers]]\nname = \"ops\"\ncommand = \"/usr/bin/python3\"\n\
         args = [\"-c\", '''\n{SERVER}''', \"{mark}\", \"ok\"]\ntrusted = true\nagents = [\"coder\"]\n"
    );
    let s = Scene::start(Setup::level("supervised").extra(&toml));
    let out = s.call("mcp__ops__media", json!({}));
    out.assert_completed().assert_result_contains("media-ok");
    assert!(
        out.permission_requests.is_empty(),
        "a trusted server's call runs without asking"
    );
    let error = s.client.call_err(
        "session/new",
        json!({"cwd": s.ws(), "mcpServers": [entry("ops", &marker("clash"), "ok", json!([]))]}),
    );
    assert_eq!(error["code"], -32602, "{error}");
    assert!(
        error["message"].as_str().unwrap().contains("operator"),
        "{error}"
    );
    drop(s);
    assert!(wait_gone(&mark, Duration::from_secs(10)));
}

#[test]
fn a_daemon_connection_that_closes_takes_its_sessions_servers_with_it() {
    use support::acp_client::AcpClient;
    use support::model_server::{ModelServer, tool_reply};
    use support::ws_conn::{Endpoint, TokenAt, Upgrade};
    use support::ws_daemon::Daemon;

    let model = ModelServer::start_blocking(vec![
        tool_reply("call-1", "mcp__d__media", &json!({})),
        text_reply("done"),
    ]);
    let daemon = Daemon::builder()
        .model(model.base_url())
        .config_toml("[autonomy]\nlevel = \"full\"\n")
        .spawn();
    let upgrade = Upgrade::new(Endpoint::Tcp(daemon.tcp())).token(TokenAt::Header, daemon.token());
    let client = AcpClient::connect(&upgrade, daemon.config_dir())
        .unwrap_or_else(|e| panic!("{e}\n{}", daemon.log()));
    client.initialize();
    let work = tempfile::tempdir().unwrap();
    let mark = marker("daemon");
    let result = client.call(
        "session/new",
        json!({"cwd": work.path(), "mcpServers": [entry("d", &mark, "ok", json!([]))]}),
    );
    let session = result["sessionId"].as_str().unwrap().to_owned();
    let response = client.prompt(&session, "go");
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    let done = client
        .updates_for(&session)
        .into_iter()
        .any(|u| u["toolCallId"] == "call-1" && u["status"] == "completed");
    assert!(
        done,
        "the MCP call completed: {:?}",
        client.updates_for(&session)
    );
    client.assert_valid();
    assert!(!pids_with(&mark).is_empty(), "running while connected");
    drop(client);
    assert!(
        wait_gone(&mark, Duration::from_secs(10)),
        "the server outlived its connection: {:?}\n{}",
        pids_with(&mark),
        daemon.log()
    );
}

/// The loopback http MCP server of `mcp_support/http_server.py`; killed on drop.
pub(crate) struct HttpServer {
    child: std::process::Child,
    pub(crate) port: u16,
}

impl HttpServer {
    pub(crate) fn start() -> HttpServer {
        use std::io::BufRead;
        let mut child = std::process::Command::new("/usr/bin/python3")
            .args(["-c", include_str!("../mcp_support/http_server.py")])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("start the http MCP server");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .expect("its port");
        let port = line.trim().parse().expect("a port number");
        HttpServer { child, port }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn an_http_server_is_used_when_the_network_is_allowed() {
    let http = HttpServer::start();
    let mut s = Scene::start(Setup::level("full").autonomy("network = \"allow\""));
    let url = format!("http://127.0.0.1:{}/mcp", http.port);
    with_servers(
        &mut s,
        json!([{"type": "http", "name": "web", "url": url,
                "headers": [{"name": "X-Zc", "value": "from-client"}]}]),
    );
    let out = s.call("mcp__web__hello", json!({}));
    out.assert_completed()
        .assert_result_contains("hello over http")
        .assert_result_contains("x-zc=from-client")
        .assert_result_contains("session=zc-session-1");
    assert_eq!(out.call["kind"], "fetch", "{}", out.describe());
}
