//! Several daemons on one PostgreSQL store: a session made on one is listed, loaded and
//! continued on another after the first is `kill -9`ed; while one daemon holds a session's
//! lease the other's prompts get SESSION_BUSY (`leased_elsewhere`); a holder paused past its
//! lease and taken over never writes again. Two daemons appending at once to the database's
//! audit log build one chain that `zeroclaw audit verify` passes. Skipped (printed) without a PostgreSQL server,
//! a failure with `CI=true`.

use crate::support;

use serde_json::json;
use support::acp_client::{AcpClient, is_response, prompt_params};
use support::model_server::{ModelServer, Reply, finish, text, text_reply};
use support::postgres::TestDb;
use support::ws_conn::{Endpoint, Upgrade};
use support::ws_daemon::Daemon;
use zeroclaw::store::{Location, Store};

/// A daemon on the shared database, with a short lease so takeovers are quick.
fn daemon(db: &TestDb, model: &ModelServer) -> Daemon {
    Daemon::builder()
        .model(model.base_url())
        .env("ZEROCLAW_store__url", db.url.clone())
        .env("ZEROCLAW_store__lease_secs", "2")
        .spawn()
}

/// A client of `daemon` over its Unix socket (the same local principal on every daemon).
fn client(daemon: &Daemon) -> AcpClient {
    let unix = Upgrade::new(Endpoint::Unix(daemon.unix().to_path_buf()));
    let client = AcpClient::connect(&unix, daemon.config_dir()).unwrap();
    let init = client.initialize();
    assert_eq!(init["agentCapabilities"]["loadSession"], true, "{init}");
    client
}

/// `session/load` of `session`; the answer must be a load answer (with the session's modes).
fn load(client: &AcpClient, session: &str, cwd: &std::path::Path) -> bool {
    let answer = client.call(
        "session/load",
        json!({"sessionId": session, "cwd": cwd, "mcpServers": []}),
    );
    assert!(answer["modes"].is_object(), "{answer}");
    true
}

/// The users' lines stored for `session`, read from the database itself.
fn stored_user_texts(db: &TestDb, session: &str) -> String {
    db.query_text(&format!(
        "SELECT COALESCE(string_agg(payload, '|' ORDER BY turn, seq), '') FROM messages
         WHERE session_id = '{session}' AND kind = 'user'"
    ))
    .unwrap_or_default()
}

#[test]
fn a_session_continues_on_another_daemon_after_kill_9() {
    let Some(db) = TestDb::create() else { return };
    let model = ModelServer::start_blocking(vec![text_reply("from a"), text_reply("from b")]);
    let work = tempfile::tempdir().unwrap();
    let mut a = daemon(&db, &model);
    let b = daemon(&db, &model);
    let on_a = client(&a);
    let session = on_a.new_session(work.path());
    assert_eq!(on_a.prompt(&session, "one")["result"]["content"], "from a");
    a.launched.kill();

    let list = std::process::Command::new(env!("CARGO_BIN_EXE_zeroclaw"))
        .args(["sessions", "list"])
        .env("ZEROCLAW_store__url", &db.url)
        .env("ZEROCLAW_CONFIG_DIR", b.config_dir())
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&list.stdout).contains(&session),
        "{list:?}"
    );

    let on_b = client(&b);
    assert!(load(&on_b, &session, work.path()));
    let out = on_b.prompt(&session, "two");
    assert_eq!(out["result"]["content"], "from b", "{out}");
    let requests = model.requests();
    let second = requests.last().unwrap().to_string();
    assert!(
        second.contains("from a"),
        "B's model call carries A's turn: {second}"
    );
    let users = stored_user_texts(&db, &session);
    assert!(users.contains("one") && users.contains("two"), "{users}");
}

#[test]
fn prompts_for_one_session_on_two_daemons_run_on_exactly_one() {
    let Some(db) = TestDb::create() else { return };
    let slow = Reply::Sse(vec![
        text("held "),
        text("by a").delayed(800),
        finish("stop"),
    ]);
    let model = ModelServer::start_blocking(vec![slow]);
    let work = tempfile::tempdir().unwrap();
    let a = daemon(&db, &model);
    let b = daemon(&db, &model);
    let on_a = client(&a);
    let on_b = client(&b);
    let session = on_a.new_session(work.path());
    assert!(load(&on_b, &session, work.path()), "B can read it");
    let from_a = on_a.send_request("session/prompt", prompt_params(&session, "on a"));
    let from_b = on_b.send_request("session/prompt", prompt_params(&session, "on b"));
    let b_answer = on_b.wait_response(&from_b);
    assert_eq!(b_answer["error"]["code"], -32003, "{b_answer}");
    assert_eq!(
        b_answer["error"]["data"]["reason"], "leased_elsewhere",
        "{b_answer}"
    );
    assert!(
        b_answer["error"]["data"]["holder"].is_string(),
        "{b_answer}"
    );
    let a_answer = on_a.wait_response(&from_a);
    assert_eq!(a_answer["result"]["content"], "held by a", "{a_answer}");
    assert_eq!(
        model.requests().len(),
        1,
        "exactly one turn reached the model"
    );
    let users = stored_user_texts(&db, &session);
    assert!(users.contains("on a") && !users.contains("on b"), "{users}");
}

#[test]
fn a_paused_holder_taken_over_never_writes_again() {
    let Some(db) = TestDb::create() else { return };
    let model = ModelServer::start_blocking(vec![
        text_reply("a first"),
        text_reply("b after takeover"),
        text_reply("a stale"),
    ]);
    let work = tempfile::tempdir().unwrap();
    let a = daemon(&db, &model);
    let b = daemon(&db, &model);
    let on_a = client(&a);
    let session = on_a.new_session(work.path());
    on_a.prompt(&session, "first on a");
    let pid = nix::unistd::Pid::from_raw(a.pid() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGSTOP).unwrap();
    // Resumed whatever happens, so a failing assertion never leaves A stopped (the clients'
    // clean-up would wait for it).
    struct Resume(nix::unistd::Pid);
    impl Drop for Resume {
        fn drop(&mut self) {
            let _ = nix::sys::signal::kill(self.0, nix::sys::signal::Signal::SIGCONT);
        }
    }
    let resume = Resume(pid);
    // A is alive but silent: B must wait for the 2 s lease to expire.
    let on_b = client(&b);
    assert!(load(&on_b, &session, work.path()));
    let started = std::time::Instant::now();
    let taken = loop {
        let out = on_b.prompt(&session, "on b");
        if out.get("result").is_some() {
            break out;
        }
        assert_eq!(out["error"]["data"]["reason"], "leased_elsewhere", "{out}");
        assert!(started.elapsed().as_secs() < 15, "the lease never expired");
        std::thread::sleep(std::time::Duration::from_millis(300));
    };
    assert_eq!(taken["result"]["content"], "b after takeover");
    drop(resume);
    let from = on_a.message_count();
    let id = on_a.send_request("session/prompt", prompt_params(&session, "stale on a"));
    let (_, stale) = on_a.wait_for_from(from, |m| is_response(m) && m["id"] == id);
    assert!(
        stale.get("error").is_some(),
        "the stale holder's turn fails: {stale}"
    );
    let users = stored_user_texts(&db, &session);
    assert!(
        users.contains("first on a") && users.contains("on b"),
        "{users}"
    );
    assert!(
        !users.contains("stale on a"),
        "nothing of the stale turn: {users}"
    );
}

/// A private PostgreSQL server (`.ci/postgres.sh`) this test may stop and restart.
struct PrivateServer {
    dir: std::path::PathBuf,
    port: u16,
    url: String,
}

impl PrivateServer {
    fn start() -> Option<PrivateServer> {
        // Only where the shared server runs too (so the tools are there); skipped otherwise.
        TestDb::create()?;
        let dir =
            std::path::PathBuf::from(format!("/var/tmp/zeroclaw-test-pg-{}", std::process::id()));
        let port = 55_000 + (std::process::id() % 5_000) as u16;
        let out = script(&["start", dir.to_str().unwrap(), &port.to_string()]);
        let url = String::from_utf8(out.stdout).unwrap().trim().to_owned();
        Some(PrivateServer { dir, port, url })
    }
    fn halt(&self) {
        script(&["halt", self.dir.to_str().unwrap()]);
    }
    fn run(&self) {
        script(&["run", self.dir.to_str().unwrap(), &self.port.to_string()]);
    }
}

impl Drop for PrivateServer {
    fn drop(&mut self) {
        script(&["stop", self.dir.to_str().unwrap()]);
    }
}

fn script(args: &[&str]) -> std::process::Output {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/.ci/postgres.sh");
    let out = std::process::Command::new("bash")
        .arg(path)
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "postgres.sh {args:?}: {out:?}");
    out
}

#[test]
fn turns_fail_cleanly_while_postgres_is_down_and_work_after() {
    let Some(server) = PrivateServer::start() else {
        return;
    };
    let model = ModelServer::start_blocking(vec![
        text_reply("before"),
        text_reply("during"),
        text_reply("after"),
    ]);
    let work = tempfile::tempdir().unwrap();
    let daemon = Daemon::builder()
        .model(model.base_url())
        .env("ZEROCLAW_store__url", server.url.clone())
        .spawn();
    let on = client(&daemon);
    let session = on.new_session(work.path());
    assert_eq!(on.prompt(&session, "one")["result"]["content"], "before");
    server.halt();
    let down = on.prompt(&session, "two");
    let message = down["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("not saved"), "{down}");
    server.run();
    let mut after = on.prompt(&session, "three");
    for _ in 0..20 {
        if after.get("result").is_some() {
            break;
        }
        // The pool's broken connections are replaced on the next checkout.
        std::thread::sleep(std::time::Duration::from_millis(250));
        after = on.prompt(&session, "three");
    }
    assert_eq!(after["result"]["content"], "after", "{after}");
    let fresh = client(&daemon);
    let _ = fresh.call("session/new", json!({"cwd": work.path(), "mcpServers": []}));
    drop(daemon);
    // The audit log reconnected too: the session made after the outage is in the one chain.
    let audit = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_zeroclaw"))
            .arg("audit")
            .args(args)
            .env("ZEROCLAW_store__url", &server.url)
            .env("ZEROCLAW_CONFIG_DIR", work.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let creates = audit(&["list", "--kind", "session.create"]);
    assert_eq!(creates.lines().count(), 2, "{creates}");
    assert!(audit(&["verify"]).starts_with("ok: "));
    let db = Store::open_location(&Location::Postgres(server.url.clone()), 1).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let turns = runtime.block_on(db.turns(&session)).unwrap();
    let users: Vec<String> = turns
        .iter()
        .map(|t| t.entries[0].payload.to_string())
        .collect();
    assert_eq!(
        turns.len(),
        2,
        "the turn during the outage left nothing: {users:?}"
    );
    assert!(
        users[0].contains("one") && users[1].contains("three"),
        "{users:?}"
    );
}

/// The head of the `/acp` upgrade response for a client naming `session`.
fn upgrade_head(daemon: &Daemon, session: &str) -> String {
    use std::io::{Read, Write};
    let mut tcp = std::net::TcpStream::connect(daemon.tcp()).unwrap();
    let request = format!(
        "GET /acp HTTP/1.1\r\nHost: zeroclaw\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
         Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
         Authorization: Bearer {}\r\nAcp-Session-Id: {session}\r\n\r\n",
        daemon.token()
    );
    tcp.write_all(request.as_bytes()).unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && tcp.read(&mut byte).unwrap() == 1 {
        head.push(byte[0]);
    }
    String::from_utf8(head).unwrap().to_ascii_lowercase()
}

#[test]
fn the_upgrade_names_the_sessions_lease_holder_for_load_balancers() {
    let Some(db) = TestDb::create() else { return };
    let model = ModelServer::start_blocking(Vec::new());
    let work = tempfile::tempdir().unwrap();
    let a = daemon(&db, &model);
    let b = daemon(&db, &model);
    let session = client(&a).new_session(work.path());
    let head = upgrade_head(&b, &session);
    assert!(head.starts_with("http/1.1 101"), "{head}");
    assert!(
        head.contains(&format!("acp-session-id: {session}")),
        "{head}"
    );
    let cookie = head
        .lines()
        .find(|l| l.starts_with("set-cookie: zeroclaw_daemon="))
        .unwrap_or_else(|| panic!("no affinity cookie: {head}"));
    assert!(
        cookie.contains(&format!("/{}/", a.pid())),
        "the cookie names daemon A (pid {}), which holds the lease: {cookie}",
        a.pid()
    );
}

#[test]
fn two_daemons_appending_at_once_build_one_audit_chain_that_verifies() {
    let Some(db) = TestDb::create() else { return };
    let model = ModelServer::start_blocking(vec![]);
    let work = tempfile::tempdir().unwrap();
    let a = daemon(&db, &model);
    let b = daemon(&db, &model);
    let per_client = 10;
    std::thread::scope(|scope| {
        for daemon in [&a, &b, &a, &b] {
            let work = work.path();
            scope.spawn(move || {
                let on = client(daemon);
                // Closed at once: a daemon keeps at most ten sessions active.
                for _ in 0..per_client {
                    let session = on.new_session(work);
                    on.call("session/close", json!({"sessionId": session}));
                }
            });
        }
    });
    let creates = db.query_text(
        "SELECT count(*)::text FROM audit_records WHERE body LIKE '%\"kind\":\"session.create\"%'",
    );
    assert_eq!(creates.as_deref(), Some("40"), "a record was lost");
    let records = db.query_text("SELECT count(*)::text FROM audit_records");
    assert_eq!(records.as_deref(), Some("80"), "a record was lost");
    for daemon in [&a, &b] {
        let verify = std::process::Command::new(env!("CARGO_BIN_EXE_zeroclaw"))
            .args(["audit", "verify"])
            .env("ZEROCLAW_store__url", &db.url)
            .env("ZEROCLAW_CONFIG_DIR", daemon.config_dir())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&verify.stdout);
        assert!(verify.status.success(), "{text}{verify:?}");
        assert!(text.starts_with("ok: "), "{text}");
    }
}

#[test]
fn two_daemons_with_one_key_sign_checkpoints_of_one_tree_that_verify() {
    let Some(db) = TestDb::create() else { return };
    let keys = tempfile::tempdir().unwrap();
    let key = keys.path().join("audit.key");
    let made = std::process::Command::new(env!("CARGO_BIN_EXE_zeroclaw"))
        .args(["audit", "keygen", "--name", "cluster.test/audit", "--out"])
        .arg(&key)
        .env("ZEROCLAW_CONFIG_DIR", keys.path())
        .output()
        .unwrap();
    assert!(made.status.success(), "{made:?}");
    let model = ModelServer::start_blocking(vec![]);
    let work = tempfile::tempdir().unwrap();
    let signing = |db: &TestDb| {
        Daemon::builder()
            .model(model.base_url())
            .env("ZEROCLAW_store__url", db.url.clone())
            .env(
                "ZEROCLAW_audit__signing_key_file",
                key.display().to_string(),
            )
            .spawn()
    };
    let mut a = signing(&db);
    let mut b = signing(&db);
    std::thread::scope(|scope| {
        for daemon in [&a, &b] {
            let work = work.path();
            scope.spawn(move || {
                let on = client(daemon);
                for _ in 0..5 {
                    let session = on.new_session(work);
                    on.call("session/close", json!({"sessionId": session}));
                }
            });
        }
    });
    a.terminate();
    b.terminate();
    let checkpoints = db.query_text("SELECT count(*)::text FROM audit_checkpoints");
    let signed: usize = checkpoints.as_deref().unwrap_or("0").parse().unwrap();
    // One at each session's end, by whichever daemon closed it.
    assert!(signed >= 10, "{signed} checkpoints");
    let verify = std::process::Command::new(env!("CARGO_BIN_EXE_zeroclaw"))
        .args(["audit", "verify", "--all-signed", "--key"])
        .arg(keys.path().join("audit.key.pub"))
        .env("ZEROCLAW_store__url", &db.url)
        .env("ZEROCLAW_CONFIG_DIR", a.config_dir())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&verify.stdout);
    assert!(verify.status.success(), "{text}{verify:?}");
    assert!(text.contains("latest size 20 "), "{text}");
}
