//! Each agent tool's normal path end to end through `zeroclaw acp`: the loopback model calls
//! the tool, the client sees a `tool_call` with the right kind, title, locations and diff,
//! the tool does its work on the real filesystem inside the sandbox, and the model's next
//! request carries the result (or the failure reason). Level `full` so no approval is involved
//! (the approval flow is `policy_approval.rs`).

use crate::support;
use crate::tools_support;

use std::fs;
use std::process::Command;

use base64::Engine as _;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use support::acp_client::Permission;
use support::acp_client::prompt_params;
use tools_support::{Outcome, Scene, Setup};

fn scene() -> Scene {
    Scene::start(Setup::level("full"))
}

#[test]
fn shell_reports_exit_code_stdout_and_stderr() {
    let s = scene();
    let out = s.call(
        "shell",
        json!({"command": "echo to-stdout; echo to-stderr >&2; pwd; exit 3"}),
    );
    assert_eq!(out.call["kind"], "execute", "{}", out.describe());
    let title = out.call["title"].as_str().unwrap_or_default();
    assert!(
        title.contains("to-stdout"),
        "the title shows the command: {title}"
    );
    assert_eq!(
        out.call["rawInput"]["command"]
            .as_str()
            .map(|c| c.contains("to-stdout")),
        Some(true)
    );
    out.assert_result_contains("to-stdout")
        .assert_result_contains("to-stderr")
        .assert_result_contains("3");
    let ws = s.ws().canonicalize().expect("ws");
    out.assert_result_contains(&ws.to_string_lossy());
}

#[test]
fn shell_runs_ordinary_pipes_redirects_and_python() {
    let s = scene();
    let script = "printf 'b\\na\\n' | sort > sorted.txt && python3 -c 'print(6*7)'";
    let out = s.call("shell", json!({"command": script}));
    out.assert_completed().assert_result_contains("42");
    assert_eq!(
        fs::read_to_string(s.ws().join("sorted.txt")).unwrap(),
        "a\nb\n"
    );
}

#[test]
fn shell_output_is_capped_with_a_truncation_marker() {
    let s = scene();
    let out = s.call(
        "shell",
        json!({"command": "yes abcdefgh | head -c 2000000"}),
    );
    out.assert_result_contains("truncated");
    assert!(
        out.model_saw.len() < 2_000_000,
        "the model gets a capped output, {} bytes",
        out.model_saw.len()
    );
}

#[test]
fn file_read_honours_offset_and_limit() {
    let s = scene();
    let lines: Vec<String> = (1..=10).map(|i| format!("row-{i:02}")).collect();
    fs::write(s.ws().join("notes.txt"), lines.join("\n") + "\n").unwrap();
    let out = s.call(
        "file_read",
        json!({"path": "notes.txt", "offset": 3, "limit": 2}),
    );
    out.assert_completed()
        .assert_result_contains("row-03")
        .assert_result_contains("row-04");
    for absent in ["row-02", "row-05"] {
        assert!(
            !out.model_saw.contains(absent),
            "{absent}: {}",
            out.describe()
        );
    }
    assert_eq!(out.call["kind"], "read");
    let location = assert_location(&out, &s.ws().join("notes.txt"));
    assert_eq!(location["line"], 3, "the location is the first line read");
}

#[test]
fn file_write_creates_the_file_and_shows_a_diff() {
    let s = scene();
    let out = s.call(
        "file_write",
        json!({"path": "src/new.txt", "content": "hello tools\n"}),
    );
    out.assert_completed();
    assert_eq!(
        fs::read_to_string(s.ws().join("src/new.txt")).unwrap(),
        "hello tools\n"
    );
    assert_eq!(out.call["kind"], "edit");
    assert_location(&out, &s.ws().join("src/new.txt"));
    let diff = find_diff(&out.call, &out.updates).unwrap_or_else(|| panic!("{}", out.describe()));
    assert_eq!(diff["newText"], "hello tools\n");
}

#[test]
fn file_edit_replaces_one_occurrence_and_shows_a_diff() {
    let s = scene();
    fs::write(s.ws().join("a.rs"), "fn old() {}\nfn keep() {}\n").unwrap();
    let out = s.call(
        "file_edit",
        json!({"path": "a.rs", "old_string": "old", "new_string": "renamed"}),
    );
    out.assert_completed();
    assert_eq!(
        fs::read_to_string(s.ws().join("a.rs")).unwrap(),
        "fn renamed() {}\nfn keep() {}\n"
    );
    assert_eq!(out.call["kind"], "edit");
    let diff = find_diff(&out.call, &out.updates).unwrap_or_else(|| panic!("{}", out.describe()));
    assert!(
        diff["oldText"].as_str().unwrap_or_default().contains("old"),
        "{diff}"
    );
    assert!(
        diff["newText"]
            .as_str()
            .unwrap_or_default()
            .contains("renamed"),
        "{diff}"
    );
}

#[test]
fn file_edit_fails_clearly_when_the_old_string_is_absent() {
    let s = scene();
    fs::write(s.ws().join("a.txt"), "one two\n").unwrap();
    let out = s.call(
        "file_edit",
        json!({"path": "a.txt", "old_string": "three", "new_string": "x"}),
    );
    out.assert_failed().assert_result_contains("not found");
    assert_eq!(
        fs::read_to_string(s.ws().join("a.txt")).unwrap(),
        "one two\n"
    );
}

#[test]
fn file_edit_fails_clearly_when_the_old_string_is_ambiguous_unless_replace_all() {
    let s = scene();
    fs::write(s.ws().join("a.txt"), "dup and dup\n").unwrap();
    let out = s.call(
        "file_edit",
        json!({"path": "a.txt", "old_string": "dup", "new_string": "x"}),
    );
    out.assert_failed().assert_result_contains("2");
    assert_eq!(
        fs::read_to_string(s.ws().join("a.txt")).unwrap(),
        "dup and dup\n"
    );
    let all = s.call(
        "file_edit",
        json!({"path": "a.txt", "old_string": "dup", "new_string": "x", "replace_all": true}),
    );
    all.assert_completed();
    assert_eq!(
        fs::read_to_string(s.ws().join("a.txt")).unwrap(),
        "x and x\n"
    );
}

#[test]
fn glob_search_lists_matching_paths() {
    let s = scene();
    fs::create_dir_all(s.ws().join("sub")).unwrap();
    for f in ["top.rs", "sub/deep.rs", "readme.txt"] {
        fs::write(s.ws().join(f), "x").unwrap();
    }
    let out = s.call("glob_search", json!({"pattern": "**/*.rs"}));
    out.assert_completed()
        .assert_result_contains("top.rs")
        .assert_result_contains("deep.rs");
    assert!(!out.model_saw.contains("readme.txt"), "{}", out.describe());
    assert_eq!(out.call["kind"], "search");
}

#[test]
fn content_search_finds_matches_and_respects_gitignore() {
    let s = scene();
    let ws = s.ws();
    let git = Command::new("git")
        .args(["init", "-q"])
        .current_dir(&ws)
        .env("GIT_CEILING_DIRECTORIES", s.root.path())
        .status()
        .expect("git init");
    assert!(git.success());
    fs::create_dir_all(ws.join("src")).unwrap();
    fs::create_dir_all(ws.join("build")).unwrap();
    fs::write(ws.join(".gitignore"), "build/\n").unwrap();
    fs::write(ws.join("src/kept.rs"), "let needle_7q = 1;\n").unwrap();
    fs::write(ws.join("build/ignored.rs"), "let needle_7q = 2;\n").unwrap();
    let out = s.call("content_search", json!({"pattern": "needle_[0-9]q"}));
    out.assert_completed().assert_result_contains("kept.rs");
    assert!(!out.model_saw.contains("ignored.rs"), "{}", out.describe());
    assert_eq!(out.call["kind"], "search");
    let scoped = s.call(
        "content_search",
        json!({"pattern": "needle", "path_glob": "*.md"}),
    );
    assert!(
        !scoped.model_saw.contains("kept.rs"),
        "{}",
        scoped.describe()
    );
}

#[test]
fn deliver_file_embeds_the_file_as_a_content_addressed_resource() {
    let s = scene();
    let bytes: Vec<u8> = (0..=255u8).cycle().take(5000).collect();
    fs::write(s.ws().join("report.pdf"), &bytes).unwrap();
    let out = s.call("deliver_file", json!({"path": "report.pdf"}));
    out.assert_completed();
    let digest = hex::encode(Sha256::digest(&bytes));
    let uri = format!("attachment://deliver/{digest}.pdf");
    let resource = out
        .updates
        .iter()
        .flat_map(|u| u["content"].as_array().cloned().unwrap_or_default())
        .find(|c| c["content"]["type"] == "resource")
        .unwrap_or_else(|| panic!("no embedded resource: {}", out.describe()));
    let resource = &resource["content"]["resource"];
    assert_eq!(resource["uri"], uri.as_str());
    let blob = resource["blob"].as_str().expect("blob");
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(blob)
        .expect("base64 blob");
    assert_eq!(decoded, bytes, "the blob decodes to the file");
    let titled = out.updates.iter().any(|u| u["title"] == "report.pdf");
    assert!(titled, "title defaults to the filename: {}", out.describe());
    assert!(
        !out.model_saw.contains(blob),
        "the model gets a short summary, not the blob"
    );
    assert!(out.model_saw.contains(&uri), "{}", out.describe());
}

#[test]
fn ask_user_with_choices_asks_the_client_and_returns_the_choice() {
    let s = Scene::start(Setup::level("full").permission(Permission::Ignore));
    s.model.push(support::model_server::tool_reply(
        "ask-1",
        "ask_user",
        &json!({"question": "Which colour?", "choices": ["red", "blue"]}),
    ));
    s.model.push(support::model_server::text_reply("done"));
    let id = s
        .client
        .send_request("session/prompt", prompt_params(&s.session, "go"));
    let request = s
        .client
        .wait_for(|m| m["method"] == "session/request_permission");
    let options = request["params"]["options"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let names: Vec<&str> = options.iter().filter_map(|o| o["name"].as_str()).collect();
    assert!(
        names.contains(&"red") && names.contains(&"blue"),
        "{request}"
    );
    let blue = options.iter().find(|o| o["name"] == "blue").expect("blue");
    s.client
        .send_json(&json!({"jsonrpc": "2.0", "id": request["id"],
        "result": {"outcome": {"outcome": "selected", "optionId": blue["optionId"]}}}));
    s.client.wait_response(&id);
    let answer = s.tool_message(1, "ask-1");
    assert!(
        answer.contains("blue"),
        "the model gets the choice: {answer:?}"
    );
}

#[test]
fn ask_user_without_choices_fails_fast_without_asking() {
    let s = scene();
    let out = s.call("ask_user", json!({"question": "Anything?"}));
    out.assert_failed();
    assert!(out.permission_requests.is_empty(), "no prompt was sent");
    assert!(!out.text.is_empty(), "a clear error: {}", out.describe());
    assert!(
        out.model_saw
            .contains(out.text.lines().next().unwrap_or_default())
    );
}

#[test]
fn todo_write_publishes_a_plan() {
    let s = scene();
    let todos =
        json!({"todos": [{"content": "write tests", "status": "in_progress", "priority": "high"}]});
    let out = s.call("todo_write", todos);
    out.assert_completed();
    let plan = s
        .client
        .updates_for(&s.session)
        .into_iter()
        .find(|u| u["sessionUpdate"] == "plan")
        .expect("plan update");
    assert_eq!(plan["entries"][0]["content"], "write tests");
}

/// The call or one of its updates names `path` in `locations`; returns that location.
fn assert_location(out: &Outcome, path: &std::path::Path) -> Value {
    let want = path.to_string_lossy();
    let canon = path
        .parent()
        .and_then(|p| p.canonicalize().ok())
        .map(|p| p.join(path.file_name().unwrap_or_default()))
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    let found = std::iter::once(&out.call)
        .chain(&out.updates)
        .flat_map(|u| u["locations"].as_array().cloned().unwrap_or_default())
        .find(|l| l["path"] == want.as_ref() || l["path"] == canon.as_str());
    found.unwrap_or_else(|| panic!("locations name {want}: {}", out.describe()))
}

/// The first `diff` content block in the call or its updates.
fn find_diff(call: &Value, updates: &[Value]) -> Option<Value> {
    std::iter::once(call)
        .chain(updates)
        .flat_map(|u| u["content"].as_array().cloned().unwrap_or_default())
        .find(|c| c["type"] == "diff")
}

#[test]
fn deliver_file_refuses_files_over_ten_mebibytes_and_outside_the_workspace() {
    let s = Scene::start(Setup::default());
    let big = s.ws().join("big.bin");
    fs::write(&big, vec![b'x'; 10 * 1024 * 1024 + 1]).unwrap();
    let out = s.call("deliver_file", json!({"path": "big.bin"}));
    out.assert_failed();
    assert!(
        !out.model_saw.is_empty(),
        "the model sees why: {}",
        out.describe()
    );
    fs::write(s.root.path().join("outside.pdf"), b"%PDF-outside").unwrap();
    let outside = s.call("deliver_file", json!({"path": "../outside.pdf"}));
    outside
        .assert_failed()
        .assert_result_contains("denied by policy");
    let embedded = s
        .client
        .updates_for(&s.session)
        .iter()
        .flat_map(|u| u["content"].as_array().cloned().unwrap_or_default())
        .any(|c| c["content"]["type"] == "resource");
    assert!(!embedded, "nothing was embedded");
}

/// `[sandbox] umask` reaches the daemon's tool children (a shell command and the in-process
/// `file_write`), not the daemon's own umask: files `0640`, directories `0750` with `"027"`.
#[test]
fn files_the_tools_create_follow_the_configured_umask() {
    use std::os::unix::fs::PermissionsExt;
    let s = Scene::start(Setup::level("full").extra("[sandbox]\numask = \"027\""));
    s.call(
        "shell",
        json!({"command": "echo made > by-shell.txt && mkdir by-shell.d"}),
    )
    .assert_completed();
    s.call(
        "file_write",
        json!({"path": "by-tool.txt", "content": "made\n"}),
    )
    .assert_completed();
    let mode = |name: &str| {
        fs::metadata(s.ws().join(name))
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(mode("by-shell.txt"), 0o640);
    assert_eq!(mode("by-shell.d"), 0o750);
    assert_eq!(mode("by-tool.txt"), 0o640);
}
