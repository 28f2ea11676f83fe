//! `session/list` and `session/delete` through the real binary: pages newest first with a
//! cursor, the `cwd` filter, ownership between two principals of one daemon, deleting a
//! session whose turn is running, and the uploads a deleted session leaves (only those no
//! other session names are removed).

use crate::support;

use std::collections::HashSet;
use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};
use support::acp_client::{AcpClient, is_update_for, prompt_params};
use support::model_server::{ModelServer, Reply, finish, text, text_reply};
use support::ws_conn::{Endpoint, TokenAt, Upgrade};
use support::ws_daemon::{Daemon, create_token};

/// Every page of `session/list` (with `extra` params), following `nextCursor`.
fn list_all(client: &AcpClient, extra: Value) -> (Vec<Value>, usize) {
    let mut sessions = Vec::new();
    let mut pages = 0;
    let mut cursor: Option<String> = None;
    loop {
        let mut params = extra.clone();
        if let Some(c) = &cursor {
            params["cursor"] = json!(c);
        }
        let page = client.call("session/list", params);
        pages += 1;
        sessions.extend(page["sessions"].as_array().cloned().unwrap_or_default());
        match page["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return (sessions, pages),
        }
        assert!(pages < 10, "the cursor never ends");
    }
}

fn ids(sessions: &[Value]) -> Vec<String> {
    sessions
        .iter()
        .map(|s| s["sessionId"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn the_list_pages_newest_first_and_filters_by_cwd() {
    let model = ModelServer::start_blocking(vec![text_reply("ok")]);
    let client = AcpClient::builder()
        .model(model.base_url())
        .arg("--max-sessions")
        .arg("100")
        .spawn();
    let init = client.initialize();
    let caps = &init["agentCapabilities"]["sessionCapabilities"];
    assert!(
        caps["list"].is_object() && caps["delete"].is_object(),
        "{init}"
    );
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut made: Vec<String> = (0..53).map(|_| client.new_session(a.path())).collect();
    made.extend((0..2).map(|_| client.new_session(b.path())));

    let (all, pages) = list_all(&client, json!({}));
    assert_eq!(pages, 2, "55 sessions in pages of 50");
    let listed = ids(&all);
    assert_eq!(
        listed.iter().collect::<HashSet<_>>(),
        made.iter().collect::<HashSet<_>>(),
        "every session once"
    );
    assert_eq!(listed.len(), made.len(), "no session twice");
    let times: Vec<&str> = all
        .iter()
        .map(|s| s["updatedAt"].as_str().unwrap())
        .collect();
    assert!(
        times.windows(2).all(|w| w[0] >= w[1]),
        "newest first: {times:?}"
    );

    // Activity moves a session to the top.
    let oldest = &made[0];
    assert_eq!(
        client.prompt(oldest, "  Fix the build\nplease ")["result"]["stopReason"],
        "end_turn"
    );
    let first = client.call("session/list", json!({}));
    assert_eq!(first["sessions"][0]["sessionId"], *oldest, "{first}");
    assert_eq!(
        first["sessions"][0]["cwd"],
        a.path().canonicalize().unwrap().to_str().unwrap()
    );

    let (in_b, pages) = list_all(&client, json!({"cwd": b.path()}));
    assert_eq!(pages, 1);
    assert_eq!(
        ids(&in_b).into_iter().collect::<HashSet<_>>(),
        made[53..].iter().cloned().collect::<HashSet<_>>()
    );
    let error = client.call_err("session/list", json!({"cursor": "not a cursor"}));
    assert_eq!(error["code"], -32602, "{error}");
    let error = client.call_err("session/list", json!({"cwd": "relative/dir"}));
    assert_eq!(error["code"], -32602, "{error}");
    client.assert_valid();
}

fn connect(daemon: &Daemon, token: &str) -> AcpClient {
    let upgrade = Upgrade::new(Endpoint::Tcp(daemon.tcp())).token(TokenAt::Header, token);
    let client = AcpClient::connect(&upgrade, daemon.config_dir())
        .unwrap_or_else(|e| panic!("upgrade refused: {e}\n{}", daemon.log()));
    client.initialize();
    client
}

#[test]
fn over_the_daemon_a_second_principal_sees_and_deletes_nothing_of_the_first() {
    let model = ModelServer::start_blocking(vec![]);
    let daemon = Daemon::builder().model(model.base_url()).spawn();
    let alice = connect(&daemon, &create_token(daemon.config_dir(), "alice"));
    let bob = connect(&daemon, &create_token(daemon.config_dir(), "bob"));
    let work = tempfile::tempdir().unwrap();
    let mine = [
        alice.new_session(work.path()),
        alice.new_session(work.path()),
    ];
    let theirs = bob.new_session(work.path());

    let (listed, _) = list_all(&alice, json!({}));
    assert_eq!(
        ids(&listed).into_iter().collect::<HashSet<_>>(),
        mine.iter().cloned().collect::<HashSet<_>>()
    );
    let (listed, _) = list_all(&bob, json!({"cwd": work.path()}));
    assert_eq!(ids(&listed), vec![theirs.clone()]);
    // The daemon's own-uid Unix peer is a third principal: nothing of either token's.
    let unix = AcpClient::connect(
        &Upgrade::new(Endpoint::Unix(daemon.unix().into())),
        daemon.config_dir(),
    )
    .expect("unix upgrade");
    unix.initialize();
    assert_eq!(unix.call("session/list", json!({}))["sessions"], json!([]));

    let error = bob.call_err("session/delete", json!({"sessionId": mine[0]}));
    assert_eq!(error["code"], -32000, "{error}");
    let (listed, _) = list_all(&alice, json!({}));
    assert_eq!(listed.len(), 2, "bob's delete removed nothing");
    assert_eq!(
        alice.call("session/delete", json!({"sessionId": mine[0]})),
        json!({})
    );
    let (listed, _) = list_all(&alice, json!({}));
    assert_eq!(ids(&listed), vec![mine[1].clone()]);
    for client in [&alice, &bob, &unix] {
        client.assert_valid();
    }
}

#[test]
fn deleting_a_session_cancels_its_running_turn_and_forgets_it() {
    let stalling = Reply::Sse(vec![
        text("Hello "),
        text("world"),
        text(" never").delayed(600_000),
        finish("stop"),
    ]);
    let model = ModelServer::start_blocking(vec![stalling]);
    let client = AcpClient::builder().model(model.base_url()).spawn();
    client.initialize();
    let work = tempfile::tempdir().unwrap();
    let session = client.new_session(work.path());
    let prompt = client.send_request("session/prompt", prompt_params(&session, "go"));
    let id = session.clone();
    client
        .wait_for(|m| is_update_for(m, &id) && m["params"]["update"]["content"]["text"] == "world");

    assert_eq!(
        client.call("session/delete", json!({"sessionId": session})),
        json!({})
    );
    let answer = client.wait_response(&prompt);
    assert_eq!(answer["result"]["stopReason"], "cancelled", "{answer}");
    assert_eq!(
        client.call("session/list", json!({}))["sessions"],
        json!([])
    );
    for (method, params) in [
        ("session/load", json!({"sessionId": session})),
        ("session/prompt", prompt_params(&session, "again")),
        ("session/delete", json!({"sessionId": session})),
    ] {
        let error = client.call_err(method, params);
        assert_eq!(error["code"], -32000, "{method}: {error}");
    }
    client.assert_valid();
}

fn blob(name: &str, bytes: &[u8]) -> Value {
    json!({"type": "resource", "resource": {"uri": format!("file:///x/{name}"),
        "mimeType": "application/pdf", "blob": STANDARD.encode(bytes)}})
}

fn uploads(dir: &Path) -> HashSet<String> {
    match std::fs::read_dir(dir.join("uploads")) {
        Ok(entries) => entries
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect(),
        Err(_) => HashSet::new(),
    }
}

#[test]
fn deleting_removes_only_the_uploads_no_other_session_names() {
    let model = ModelServer::start_blocking(vec![text_reply("a"), text_reply("b")]);
    let client = AcpClient::builder().model(model.base_url()).spawn();
    client.initialize();
    let work = tempfile::tempdir().unwrap();
    let (first, second) = (
        client.new_session(work.path()),
        client.new_session(work.path()),
    );
    let prompt = |session: &str, parts: Vec<Value>| {
        let mut all = vec![json!({"type": "text", "text": "read these"})];
        all.extend(parts);
        let answer = client.request(
            "session/prompt",
            json!({"sessionId": session, "prompt": all}),
        );
        assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    };
    prompt(
        &first,
        vec![
            blob("own.pdf", b"%PDF only mine"),
            blob("shared.pdf", b"%PDF shared"),
        ],
    );
    prompt(&second, vec![blob("shared.pdf", b"%PDF shared")]);
    let before = uploads(work.path());
    assert_eq!(before.len(), 2, "{before:?}");
    std::fs::write(work.path().join("uploads").join("notes.txt"), "the user's").unwrap();

    client.call("session/delete", json!({"sessionId": first}));
    let after = uploads(work.path());
    assert_eq!(
        after.len(),
        2,
        "the own upload is gone, the shared one stays: {after:?}"
    );
    assert!(after.contains("notes.txt"));
    client.call("session/delete", json!({"sessionId": second}));
    assert_eq!(
        uploads(work.path()),
        HashSet::from(["notes.txt".to_owned()]),
        "the last session naming it took the shared upload; other files stay"
    );
    client.assert_valid();
}
