//! `zeroclaw sessions list | show | delete` on the real binary, against a real store file
//! written through the store API at the configured location.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::json;
use zeroclaw::config::Config;
use zeroclaw::store::{SessionRecord, Store, StoredEntry};

fn zeroclaw(config_dir: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_zeroclaw"));
    for (name, _) in std::env::vars().filter(|(k, _)| k.starts_with("ZEROCLAW_")) {
        cmd.env_remove(name);
    }
    cmd.args(args).arg("--config-dir").arg(config_dir);
    cmd.output().expect("run zeroclaw")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn store_path(config_dir: &Path) -> PathBuf {
    let env = std::iter::empty::<(String, String)>();
    Config::load_with_env(config_dir, env).unwrap().store_path()
}

fn entry(kind: &str, payload: serde_json::Value) -> StoredEntry {
    StoredEntry {
        kind: kind.into(),
        payload,
    }
}

/// Two sessions: `sess-old` (no owner) with one turn, `sess-new` (more recent, owned by the
/// token `ci`) with two.
async fn seed(config_dir: &Path) {
    let store = Store::open(&store_path(config_dir)).unwrap();
    for (id, alias, at, owner) in [
        ("sess-old", "coder", 1_700_000_000_000, None),
        ("sess-new", "writer", 1_700_000_100_000, Some("token:ci")),
    ] {
        store
            .create_session(SessionRecord {
                id: id.into(),
                agent_alias: alias.into(),
                workspace_dir: PathBuf::from(format!("/projects/{id}")),
                mcp_servers: json!([{"name": "fs-server", "command": "x", "args": [], "env": []}]),
                owner: owner.map(str::to_owned),
                created_at: at,
                last_activity: at,
            })
            .await
            .unwrap();
    }
    let turn = |n: u32| {
        vec![
            entry("user", json!({"text": format!("question {n}")})),
            entry(
                "tool_call",
                json!({"id": "c1", "name": "todo_write", "arguments": "{\"todos\":[]}"}),
            ),
            entry("assistant", json!({"text": format!("answer {n}")})),
        ]
    };
    store.append_turn("sess-old", turn(1)).await.unwrap();
    store.append_turn("sess-new", turn(1)).await.unwrap();
    store.append_turn("sess-new", turn(2)).await.unwrap();
}

#[tokio::test]
async fn list_shows_every_session_with_agent_workspace_owner_times_and_turns() {
    let dir = tempfile::tempdir().unwrap();
    seed(dir.path()).await;
    let out = zeroclaw(dir.path(), &["sessions", "list"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        lines[0].starts_with("ID") && lines[0].contains("TURNS"),
        "{stdout}"
    );
    assert_eq!(lines.len(), 3, "{stdout}");
    let cells = |line: &str| {
        line.split_whitespace()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let (first, second) = (cells(lines[1]), cells(lines[2]));
    assert_eq!(first[0], "sess-new", "most recently active first: {stdout}");
    assert_eq!(first[1], "writer");
    assert_eq!(first[2], "/projects/sess-new");
    assert!(lines[0].contains("OWNER"), "{stdout}");
    assert_eq!(first[3], "token:ci", "the owner column: {stdout}");
    assert_eq!(first.last().unwrap(), "2");
    assert_eq!(second[0], "sess-old");
    assert_eq!(second[3], "-", "no recorded owner: {stdout}");
    assert_eq!(second.last().unwrap(), "1");
    assert!(
        lines[2].contains("2023-11-14 22:13:20 UTC"),
        "created time shown: {stdout}"
    );
}

#[tokio::test]
async fn show_prints_metadata_and_a_history_summary() {
    let dir = tempfile::tempdir().unwrap();
    seed(dir.path()).await;
    let out = zeroclaw(dir.path(), &["sessions", "show", "sess-new"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    for expected in [
        "sess-new",
        "writer",
        "/projects/sess-new",
        "fs-server",
        "6 entries in 2 turns",
        "turn 1\n",
        "turn 2\n",
        "token:ci",
        "question 1",
        "todo_write",
        "answer 2",
    ] {
        assert!(
            stdout.contains(expected),
            "missing {expected:?} in:\n{stdout}"
        );
    }
    assert!(stdout.find("question 2").unwrap() < stdout.find("answer 2").unwrap());
}

#[tokio::test]
async fn delete_removes_the_session_and_only_it() {
    let dir = tempfile::tempdir().unwrap();
    seed(dir.path()).await;
    let out = zeroclaw(dir.path(), &["sessions", "delete", "sess-old"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let store = Store::open(&store_path(dir.path())).unwrap();
    assert!(store.get_session("sess-old").await.unwrap().is_none());
    assert!(store.history("sess-old").await.unwrap().is_empty());
    assert_eq!(store.history("sess-new").await.unwrap().len(), 6);
    let again = zeroclaw(dir.path(), &["sessions", "delete", "sess-old"]);
    assert!(!again.status.success());
    assert!(
        text(&again.stderr).contains("sess-old"),
        "{}",
        text(&again.stderr)
    );
}

#[tokio::test]
async fn show_of_an_unknown_id_fails_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    seed(dir.path()).await;
    let out = zeroclaw(dir.path(), &["sessions", "show", "no-such-session"]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("no-such-session"));
}

#[test]
fn without_a_store_list_is_empty_and_nothing_is_created() {
    let dir = tempfile::tempdir().unwrap();
    let out = zeroclaw(dir.path(), &["sessions", "list"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("no sessions"));
    assert!(!store_path(dir.path()).exists());
    assert!(
        !zeroclaw(dir.path(), &["sessions", "delete", "x"])
            .status
            .success()
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "nothing was created"
    );
}

#[tokio::test]
async fn the_cli_reads_and_deletes_while_a_server_keeps_writing() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    let dir = tempfile::tempdir().unwrap();
    seed(dir.path()).await;
    let store = Store::open(&store_path(dir.path())).unwrap();
    let cli_done = Arc::new(AtomicBool::new(false));
    let writer = {
        let (store, cli_done) = (store.clone(), cli_done.clone());
        tokio::spawn(async move {
            let mut turns = 0;
            while !cli_done.load(Ordering::SeqCst) || turns == 0 {
                let turn = vec![entry("user", json!({"text": format!("busy {turns}")}))];
                store.append_turn("sess-new", turn).await.unwrap();
                turns += 1;
            }
            turns
        })
    };
    let dir_path = dir.path().to_owned();
    let cli = tokio::task::spawn_blocking(move || {
        let listed = (0..5)
            .map(|_| zeroclaw(&dir_path, &["sessions", "list"]))
            .all(|o| o.status.success());
        let deleted = zeroclaw(&dir_path, &["sessions", "delete", "sess-old"]);
        cli_done.store(true, Ordering::SeqCst);
        (listed, deleted)
    });
    let (listed, deleted) = cli.await.unwrap();
    let turns = writer.await.unwrap();
    assert!(
        listed,
        "every list succeeded while the store was being written"
    );
    assert!(deleted.status.success(), "{}", text(&deleted.stderr));
    assert!(store.get_session("sess-old").await.unwrap().is_none());
    assert_eq!(store.history("sess-new").await.unwrap().len(), 6 + turns);
}

/// A line `sessions list` would print, smuggled in after a newline.
const FORGED_ROW: &str = "sess-forged  coder  /projects/x  -  2023-11-14 22:13:20 UTC";
/// A window title, a clipboard write (OSC 52) and a C1 CSI colour.
const TERMINAL_ATTACK: &str = "\u{1b}]0;pwned\u{7}\u{1b}]52;c;cHduZWQ=\u{7}\u{9b}31m";

/// Raw bytes a terminal acts on: ESC, BEL, CSI (C1).
fn terminal_controls(text: &str) -> bool {
    text.contains(['\u{1b}', '\u{7}', '\u{9b}'])
}

/// A session whose workspace, agent, history and file records carry newlines, forged lines
/// and escape sequences, as a client (its cwd) and the model (tool calls, text) could choose.
async fn seed_hostile(config_dir: &Path) {
    let store = Store::open(&store_path(config_dir)).unwrap();
    store
        .create_session(SessionRecord {
            id: "sess-hostile".into(),
            agent_alias: format!("coder{TERMINAL_ATTACK}"),
            workspace_dir: PathBuf::from(format!("/projects/a\n{FORGED_ROW}\n{TERMINAL_ATTACK}")),
            mcp_servers: json!([{"name": format!("fs\n{TERMINAL_ATTACK}"), "command": "x"}]),
            owner: None,
            created_at: 1_700_000_000_000,
            last_activity: 1_700_000_000_000,
        })
        .await
        .unwrap();
    let turn = vec![
        entry("user", json!({"text": format!("hi {TERMINAL_ATTACK}")})),
        entry(
            "tool_call",
            json!({"id": "c1", "name": "shell", "arguments": format!("{{\"command\":\"printf '{TERMINAL_ATTACK}'\"}}")}),
        ),
        entry(
            "assistant",
            json!({"text": format!("done\n{FORGED_ROW}\r{TERMINAL_ATTACK}")}),
        ),
    ];
    store.append_turn("sess-hostile", turn).await.unwrap();
}

#[tokio::test]
async fn list_and_show_escape_what_the_client_and_model_chose() {
    let dir = tempfile::tempdir().unwrap();
    seed(dir.path()).await;
    seed_hostile(dir.path()).await;

    let out = zeroclaw(dir.path(), &["sessions", "list"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let list = text(&out.stdout);
    assert_eq!(
        list.lines().count(),
        4,
        "a header and one line per session:\n{list}"
    );
    assert!(!terminal_controls(&list), "raw controls in:\n{list:?}");
    assert!(
        list.contains(&format!("/projects/a\\n{FORGED_ROW}\\n\\x1b]0;pwned\\x07")),
        "{list}"
    );

    let out = zeroclaw(dir.path(), &["sessions", "show", "sess-hostile"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let show = text(&out.stdout);
    assert!(!terminal_controls(&show), "raw controls in:\n{show:?}");
    // id, agent, workspace, owner, created, last activity, mcp servers, history; the turn
    // heading and its three entries.
    assert_eq!(show.lines().count(), 8 + 1 + 3, "{show}");
    assert!(
        show.contains("agent:         coder\\x1b]0;pwned\\x07\\x1b]52;c;cHduZWQ=\\x07\\u{9b}31m\n"),
        "{show}"
    );
    assert!(
        !show.lines().any(|l| l.starts_with("sess-forged")),
        "{show}"
    );
}
