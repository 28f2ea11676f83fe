//! Persistence across processes: two turns, `kill -9`, restart, `session/load` replays exactly
//! the stored history (and seeds the model with it); a turn in flight at the kill leaves
//! nothing behind; `session/resume` restores without replay; load/resume of an active session;
//! a store that cannot be created runs in memory and says so. The store-independent cases run
//! again on PostgreSQL (`on_postgres::…`).

use crate::support;

use serde_json::{Value, json};
use support::acp_client::{AcpClient, is_response, is_update_for, prompt_params};
use support::acp_fixture::{assert_tool_calls_well_formed, content_text};
use support::model_server::{
    ModelServer, Reply, finish, reasoning, text, text_reply, tool_call_args, tool_call_start,
};
use support::read_only_dir::ReadOnlyDir;
use support::ws_conn::{Endpoint, TokenAt, Upgrade};
use support::ws_daemon::Daemon;
use tempfile::TempDir;

/// One item of a turn as a user sees it, independent of how text was split into chunks.
#[derive(Debug, PartialEq)]
enum Seen {
    Chunk(String, String),
    Tool { id: Value, status: Value },
    Plan(Value),
}

/// Merges consecutive chunks of a kind and folds each tool call into its final status.
fn normalize(updates: &[Value]) -> Vec<Seen> {
    let mut seen: Vec<Seen> = Vec::new();
    for u in updates {
        if support::acp_client::is_session_metadata(u) {
            continue;
        }
        let kind = u["sessionUpdate"].as_str().unwrap_or_default().to_string();
        match kind.as_str() {
            "tool_call" => seen.push(Seen::Tool {
                id: u["toolCallId"].clone(),
                status: u["status"].clone(),
            }),
            "tool_call_update" => {
                let call = seen.iter_mut().rev().find_map(|s| match s {
                    Seen::Tool { id, status } if *id == u["toolCallId"] => Some(status),
                    _ => None,
                });
                let status = call.expect("tool_call_update for an announced call");
                if !u["status"].is_null() {
                    *status = u["status"].clone();
                }
            }
            "plan" => seen.push(Seen::Plan(u["entries"].clone())),
            _ => {
                let piece = u["content"]["text"].as_str().unwrap_or_default();
                match seen.last_mut() {
                    Some(Seen::Chunk(k, text)) if *k == kind => text.push_str(piece),
                    _ => seen.push(Seen::Chunk(kind, piece.to_string())),
                }
            }
        }
    }
    seen
}

fn user(text: &str) -> Seen {
    Seen::Chunk("user_message_chunk".into(), text.into())
}

fn todo_call() -> Reply {
    Reply::Sse(vec![
        tool_call_start(0, "call_p", "todo_write"),
        tool_call_args(0, r#"{"todos": [{"content": "persist", "#),
        tool_call_args(0, r#""status": "completed", "priority": "medium"}]}"#),
        finish("tool_calls"),
    ])
}

fn first_turn() -> Reply {
    Reply::Sse(vec![
        reasoning("pondering"),
        text("first "),
        text("answer"),
        finish("stop"),
    ])
}

struct Durable {
    model: ModelServer,
    config: TempDir,
    work: TempDir,
}

impl Durable {
    fn new(script: Vec<Reply>) -> Durable {
        Durable {
            model: ModelServer::start_blocking(script),
            config: tempfile::tempdir().unwrap(),
            work: tempfile::tempdir().unwrap(),
        }
    }

    fn spawn(&self) -> AcpClient {
        let client = AcpClient::builder()
            .model(self.model.base_url())
            .config_dir(self.config.path())
            .spawn();
        let init = client.initialize();
        assert_eq!(init["agentCapabilities"]["loadSession"], true);
        client
    }

    /// Runs `session/load` and returns the updates it replayed for the session.
    fn load(&self, client: &AcpClient, session: &str) -> Vec<Value> {
        let from = client.message_count();
        let params = json!({"sessionId": session, "cwd": self.work.path(), "mcpServers": []});
        let id = client.send_request("session/load", params);
        let (at, resp) = client.wait_for_from(from, |m| is_response(m) && m["id"] == id);
        assert!(resp["result"]["modes"].is_object(), "{resp}");
        assert!(resp["result"]["configOptions"].is_array(), "{resp}");
        let replayed: Vec<Value> = client
            .messages_between(from, at)
            .into_iter()
            .filter(|m| is_update_for(m, session))
            .map(|m| m["params"]["update"].clone())
            .collect();
        let later = client.messages_between(at, usize::MAX);
        assert!(
            !later.iter().any(|m| is_update_for(m, session)),
            "every replayed update precedes the load response"
        );
        replayed
    }
}

/// Runs the two reference turns; returns the session and what the user saw, as replay should.
fn two_turns(fx: &Durable, client: &AcpClient) -> (String, Vec<Seen>) {
    let session = client.new_session(fx.work.path());
    let mut expected = Vec::new();
    for prompt in ["turn one", "turn two"] {
        let from = client.message_count();
        let resp = client.prompt(&session, prompt);
        assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");
        let live: Vec<Value> = client
            .messages_between(from, usize::MAX)
            .into_iter()
            .filter(|m| is_update_for(m, &session))
            .map(|m| m["params"]["update"].clone())
            .collect();
        expected.push(user(prompt));
        expected.extend(normalize(&live));
    }
    (session, expected)
}

#[test]
fn load_after_kill_9_replays_exactly_the_stored_history_and_seeds_the_model() {
    let fx = Durable::new(vec![first_turn(), todo_call(), text_reply("second answer")]);
    let mut first = fx.spawn();
    let (session, expected) = two_turns(&fx, &first);
    assert!(expected.iter().any(|s| matches!(s, Seen::Plan(_))));
    first.kill9();

    let second = fx.spawn();
    let replayed = fx.load(&second, &session);
    assert_eq!(normalize(&replayed), expected);
    assert_eq!(assert_tool_calls_well_formed(&replayed).len(), 1);

    fx.model.push(text_reply("third answer"));
    let resp = second.prompt(&session, "turn three");
    assert_eq!(resp["result"]["content"], "third answer", "{resp}");
    let requests = fx.model.requests();
    let context: Vec<String> = requests.last().unwrap()["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| content_text(&m["content"]))
        .collect();
    let joined = context.join("\n");
    let order = [
        "turn one",
        "first answer",
        "turn two",
        "second answer",
        "turn three",
    ];
    let positions: Vec<usize> = order
        .iter()
        .map(|t| {
            joined
                .find(t)
                .unwrap_or_else(|| panic!("{t:?} not in {context:?}"))
        })
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{context:?}");
    let last = requests.last().unwrap()["messages"]
        .as_array()
        .unwrap()
        .clone();
    assert!(last.iter().any(|m| m["role"] == "tool"), "tool result kept");
}

#[test]
fn a_turn_in_flight_at_the_kill_leaves_nothing_half_written() {
    let stalled = Reply::Sse(vec![
        text("partial "),
        text("never").delayed(600_000),
        finish("stop"),
    ]);
    let fx = Durable::new(vec![
        first_turn(),
        todo_call(),
        text_reply("second answer"),
        stalled,
    ]);
    let mut first = fx.spawn();
    let (session, expected) = two_turns(&fx, &first);
    first.send_request("session/prompt", prompt_params(&session, "turn three"));
    first.wait_for(|m| {
        is_update_for(m, &session) && m["params"]["update"]["content"]["text"] == "partial "
    });
    first.kill9();

    let second = fx.spawn();
    let replayed = fx.load(&second, &session);
    assert_eq!(normalize(&replayed), expected, "only the completed turns");
}

#[test]
fn a_cancelled_turn_is_stored_with_what_was_streamed() {
    let stalled = Reply::Sse(vec![
        text("Hello world"),
        text("never").delayed(600_000),
        finish("stop"),
    ]);
    let fx = Durable::new(vec![stalled]);
    let mut first = fx.spawn();
    let session = first.new_session(fx.work.path());
    let id = first.send_request("session/prompt", prompt_params(&session, "go"));
    first.wait_for(|m| {
        is_update_for(m, &session)
            && m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    });
    first.notify("session/cancel", json!({"sessionId": session}));
    assert_eq!(
        first.wait_response(&id)["result"]["stopReason"],
        "cancelled"
    );
    first.kill9();

    let second = fx.spawn();
    let replayed = normalize(&fx.load(&second, &session));
    assert_eq!(replayed.first(), Some(&user("go")));
    match replayed.get(1) {
        Some(Seen::Chunk(kind, text)) => {
            assert_eq!(kind, "agent_message_chunk");
            assert!(text.starts_with("Hello world"), "{text:?}");
        }
        other => panic!("partial text not replayed: {other:?}"),
    }
}

#[test]
fn sessions_show_marks_the_cancelled_turn() {
    let stalled = Reply::Sse(vec![
        text("Hello world"),
        text("never").delayed(600_000),
        finish("stop"),
    ]);
    let fx = Durable::new(vec![text_reply("finished normally"), stalled]);
    let mut client = fx.spawn();
    let session = client.new_session(fx.work.path());
    assert_eq!(
        client.prompt(&session, "one")["result"]["stopReason"],
        "end_turn"
    );
    let from = client.message_count();
    let id = client.send_request("session/prompt", prompt_params(&session, "two"));
    client.wait_for_from(from, |m| is_update_for(m, &session));
    client.notify("session/cancel", json!({"sessionId": session}));
    assert_eq!(
        client.wait_response(&id)["result"]["stopReason"],
        "cancelled"
    );
    client.shutdown();

    let show = sessions_cli(fx.config.path(), &["show", &session]);
    let turn = |n: usize| {
        let at = show
            .find(&format!("turn {n}:"))
            .unwrap_or_else(|| panic!("no turn {n} heading in:\n{show}"));
        show[at..].lines().next().unwrap().to_owned()
    };
    assert_eq!(turn(1), "turn 1: end_turn", "{show}");
    assert_eq!(turn(2), "turn 2: cancelled", "{show}");
    let second = show.find("turn 2:").unwrap();
    assert!(
        show[second..].contains("two") && show[second..].contains("Hello world"),
        "the cancelled turn's prompt and partial text are listed under it: {show}"
    );
}

#[test]
fn resume_restores_without_replay_and_active_sessions_cannot_be_loaded_again() {
    let fx = Durable::new(vec![first_turn(), todo_call(), text_reply("second answer")]);
    let mut first = fx.spawn();
    let (session, _) = two_turns(&fx, &first);
    let error = first.call_err("session/load", json!({"sessionId": session}));
    assert_eq!(error["code"], -32602, "load of an active session: {error}");
    let error = first.call_err("session/resume", json!({"sessionId": session}));
    assert_eq!(
        error["code"], -32602,
        "resume of an active session: {error}"
    );
    first.kill9();

    let second = fx.spawn();
    let from = second.message_count();
    let result = second.call("session/resume", json!({"session_id": session}));
    assert!(result["modes"].is_object(), "{result}");
    assert!(result["configOptions"].is_array(), "{result}");
    let replay: Vec<Value> = second
        .messages_between(from, usize::MAX)
        .into_iter()
        .filter(|m| m["method"] == "session/update")
        .collect();
    assert!(replay.is_empty(), "resume replays nothing: {replay:?}");

    fx.model.push(text_reply("resumed"));
    let resp = second.prompt(&session, "after resume");
    assert_eq!(resp["result"]["content"], "resumed", "{resp}");
    let last = fx.model.requests().last().unwrap().to_string();
    assert!(last.contains("first answer") && last.contains("second answer"));

    // Close keeps the record: the same process can load it again.
    second.call("session/close", json!({"sessionId": session}));
    let replayed = fx.load(&second, &session);
    assert!(normalize(&replayed).contains(&user("after resume")));
}

#[test]
fn a_store_that_cannot_be_created_runs_in_memory_without_load() {
    let config = tempfile::tempdir().unwrap();
    let blocker = config.path().join("blocker");
    std::fs::write(&blocker, "a file where a directory should be").unwrap();
    let model = ModelServer::start_blocking(vec![text_reply("in memory")]);
    let client = AcpClient::builder()
        .model(model.base_url())
        .config_dir(config.path())
        .env(
            "ZEROCLAW_workspace_dir",
            blocker.join("ws").display().to_string(),
        )
        .spawn();
    let init = client.initialize();
    let caps = &init["agentCapabilities"];
    assert_eq!(caps["loadSession"], false, "{init}");
    let session_caps = &caps["sessionCapabilities"];
    assert!(
        ["resume", "close", "list", "delete"]
            .iter()
            .all(|c| session_caps[c].is_null()),
        "{init}"
    );
    client.wait_stderr("in memory");

    let work = tempfile::tempdir().unwrap();
    let session = client.new_session(work.path());
    let resp = client.prompt(&session, "hi");
    assert_eq!(resp["result"]["content"], "in memory", "{resp}");
    for method in [
        "session/load",
        "session/resume",
        "session/close",
        "session/delete",
        "session/list",
    ] {
        let error = client.call_err(method, json!({"sessionId": session}));
        assert_eq!(error["code"], -32000, "{method}: {error}");
    }
}

#[test]
fn a_read_only_sessions_directory_runs_in_memory_without_load() {
    let config = tempfile::tempdir().unwrap();
    let workspace = config.path().join("ws");
    let Some(locked) = ReadOnlyDir::new(&workspace.join("sessions")) else {
        return; // printed SKIPPED (a failure with CI=true)
    };
    let client = AcpClient::builder()
        .model("http://127.0.0.1:9/v1")
        .config_dir(config.path())
        .env("ZEROCLAW_workspace_dir", workspace.display().to_string())
        .spawn();
    let init = client.initialize();
    assert_eq!(init["agentCapabilities"]["loadSession"], false, "{init}");
    client.wait_stderr("in memory");
    let work = tempfile::tempdir().unwrap();
    let session = client.new_session(work.path());
    let error = client.call_err("session/load", json!({"sessionId": session}));
    assert_eq!(error["code"], -32000);
    assert_eq!(
        std::fs::read_dir(&locked.path).unwrap().count(),
        0,
        "nothing written"
    );
}

#[test]
fn the_store_lives_under_the_workspace_dir() {
    let fx = Durable::new(vec![text_reply("stored")]);
    let mut client = fx.spawn();
    let session = client.new_session(fx.work.path());
    client.prompt(&session, "hi");
    client.shutdown();
    let db = fx.config.path().join("workspace/sessions/acp-sessions.db");
    assert!(db.is_file(), "{} exists", db.display());
}

fn two_agent_config(base_url: &str, a_enabled: bool, default: &str) -> String {
    format!(
        r#"[acp]
default_agent = "{default}"

[providers.local]
kind = "openai"
base_url = "{base_url}"
api_key = "test"

[agents.a]
provider = "local"
model = "model-a"
enabled = {a_enabled}

[agents.b]
provider = "local"
model = "model-b"
"#
    )
}

#[test]
fn restore_falls_back_when_the_stored_agent_is_no_longer_dispatchable() {
    let model = ModelServer::start_blocking(vec![text_reply("from a"), text_reply("from b")]);
    let config = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let spawn = |a_enabled| {
        let toml = two_agent_config(
            &model.base_url(),
            a_enabled,
            if a_enabled { "a" } else { "b" },
        );
        let client = AcpClient::builder()
            .config_dir(config.path())
            .config_toml(toml)
            .spawn();
        client.initialize();
        client
    };
    let mut first = spawn(true);
    let created = first.call(
        "session/new",
        json!({"cwd": work.path(), "mcpServers": [], "agentAlias": "a"}),
    );
    let session = created["sessionId"].as_str().unwrap().to_string();
    assert_eq!(first.prompt(&session, "one")["result"]["content"], "from a");
    first.kill9();

    let second = spawn(false);
    let result = second.call("session/load", json!({"session_id": session}));
    assert!(result["modes"].is_object(), "{result}");
    assert!(result["configOptions"].is_array(), "{result}");
    assert_eq!(
        second.prompt(&session, "two")["result"]["content"],
        "from b"
    );
    let models: Vec<Value> = model
        .requests()
        .iter()
        .map(|r| r["model"].clone())
        .collect();
    assert_eq!(models, vec![json!("model-a"), json!("model-b")]);
}

/// Runs `zeroclaw sessions <args>` on the config dir; returns stdout.
fn sessions_cli(config: &std::path::Path, args: &[&str]) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_zeroclaw"))
        .arg("sessions")
        .args(args)
        .arg("--config-dir")
        .arg(config)
        .env_remove("ZEROCLAW_CONFIG_DIR")
        .envs(support::store_under_test::env())
        .output()
        .expect("run zeroclaw sessions");
    assert!(out.status.success(), "sessions {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn sessions_made_over_acp_are_kept_with_their_mcp_servers_and_deletable() {
    let fx = Durable::new(vec![text_reply("kept")]);
    let mut client = fx.spawn();
    let mcp = json!([{"name": "fsmcp", "command": "/bin/true", "args": [], "env": []}]);
    let created = client.call(
        "session/new",
        json!({"cwd": fx.work.path(), "mcpServers": mcp}),
    );
    let session = created["sessionId"].as_str().unwrap().to_string();
    client.prompt(&session, "remember me");
    client.shutdown();

    let list = sessions_cli(fx.config.path(), &["list"]);
    assert!(list.contains(&session) && list.contains("coder"), "{list}");
    let show = sessions_cli(fx.config.path(), &["show", &session]);
    assert!(
        show.contains("fsmcp"),
        "mcpServers kept with the session: {show}"
    );
    sessions_cli(fx.config.path(), &["delete", &session]);

    let fresh = fx.spawn();
    let error = fresh.call_err("session/load", json!({"sessionId": session}));
    assert_eq!(error["code"], -32000, "a deleted session is gone: {error}");
}

#[test]
fn a_stdio_session_is_the_local_uids_through_the_daemon_socket_and_no_tokens() {
    let fx = Durable::new(vec![
        text_reply("over stdio"),
        text_reply("over the socket"),
    ]);
    let mut first = fx.spawn();
    let session = first.new_session(fx.work.path());
    first.prompt(&session, "hi");
    let legacy = first.new_session(fx.work.path());
    first.shutdown();
    // A session stored before owners were recorded for stdio has none.
    let db = fx.config.path().join("workspace/sessions/acp-sessions.db");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute("UPDATE sessions SET owner = NULL WHERE id = ?1", [&legacy])
        .unwrap();
    drop(conn);

    let owner = format!("uid:{}", nix::unistd::geteuid().as_raw());
    let list = sessions_cli(fx.config.path(), &["list"]);
    let line = |id: &str| {
        let line = list.lines().find(|l| l.starts_with(id));
        line.unwrap_or_else(|| panic!("{id} not listed: {list}"))
            .split_whitespace()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    assert!(list.lines().next().unwrap().contains("OWNER"), "{list}");
    assert_eq!(line(&session)[3], owner, "{list}");
    assert_eq!(line(&legacy)[3], "-", "{list}");

    let daemon = Daemon::builder()
        .config_dir(fx.config.path())
        .model(fx.model.base_url())
        .spawn();
    let load = |id: &str| json!({"sessionId": id, "cwd": fx.work.path(), "mcpServers": []});
    let tcp = Upgrade::new(Endpoint::Tcp(daemon.tcp())).token(TokenAt::Header, daemon.token());
    let by_token = AcpClient::connect(&tcp, daemon.config_dir()).unwrap();
    by_token.initialize();
    for id in [&session, &legacy] {
        for method in ["session/load", "session/resume"] {
            let error = by_token.call_err(method, load(id));
            assert_eq!(error["code"], -32000, "a token does not own {id}: {error}");
        }
    }
    let unix = Upgrade::new(Endpoint::Unix(daemon.unix().to_path_buf()));
    let by_uid = AcpClient::connect(&unix, daemon.config_dir()).unwrap();
    by_uid.initialize();
    let loaded = by_uid.call("session/load", load(&session));
    assert!(loaded["modes"].is_object(), "{loaded}");
    assert!(loaded["configOptions"].is_array(), "{loaded}");
    assert!(
        normalize(&by_uid.updates_for(&session)).contains(&user("hi")),
        "the stdio history is replayed over the socket"
    );
    let out = by_uid.prompt(&session, "again");
    assert_eq!(out["result"]["content"], "over the socket", "{out}");
    let resumed = by_uid.call("session/resume", load(&legacy));
    assert!(resumed["modes"].is_object(), "{resumed}");
    assert!(resumed["configOptions"].is_array(), "{resumed}");
}

// The same tests over WebSocket to `zeroclaw daemon`, TCP and Unix socket (not the in-memory fallbacks when the store cannot open).
crate::over_websocket!(
    load_after_kill_9_replays_exactly_the_stored_history_and_seeds_the_model,
    a_turn_in_flight_at_the_kill_leaves_nothing_half_written,
    a_cancelled_turn_is_stored_with_what_was_streamed,
    resume_restores_without_replay_and_active_sessions_cannot_be_loaded_again,
    the_store_lives_under_the_workspace_dir,
    restore_falls_back_when_the_stored_agent_is_no_longer_dispatchable,
    sessions_made_over_acp_are_kept_with_their_mcp_servers_and_deletable,
);

// The same suite on a PostgreSQL store (`[store] url`): what it stores, replays and lists is the
// same on both backends.
crate::on_postgres!(
    load_after_kill_9_replays_exactly_the_stored_history_and_seeds_the_model,
    a_turn_in_flight_at_the_kill_leaves_nothing_half_written,
    a_cancelled_turn_is_stored_with_what_was_streamed,
    sessions_show_marks_the_cancelled_turn,
    resume_restores_without_replay_and_active_sessions_cannot_be_loaded_again,
    restore_falls_back_when_the_stored_agent_is_no_longer_dispatchable,
    sessions_made_over_acp_are_kept_with_their_mcp_servers_and_deletable,
);
