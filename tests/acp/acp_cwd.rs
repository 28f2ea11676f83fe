//! Which directory a session may work in, on the real binary: `session/new`, `session/load`
//! and `session/resume` refuse (-32602, naming the denied path) a cwd that equals or lies
//! inside the config directory, `~/.ssh` (a temp HOME) or a configured forbidden path, and
//! `/` unless `[autonomy] allow_root_cwd` says so; a cwd that *holds* the config directory is
//! fine and a `shell` there cannot read the bridge token (judged by output: the canary never
//! appears). A stored session keeps its directory: another `cwd` in load/resume is refused,
//! the same directory spelled through a symlink is not.

use crate::support;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use support::acp_client::{AcpClient, Builder};
use support::model_server::{ModelServer, Reply, text_reply, tool_reply};
use tempfile::TempDir;

const TOKEN_CANARY: &str = "zc-bridge-token-canary-3f9a";
const RAN: &str = "zc-shell-ran-marker";

/// A temp HOME and a config dir holding a bridge token file with the canary.
struct Scene {
    root: TempDir,
    home: PathBuf,
    config: PathBuf,
}

impl Scene {
    fn new() -> Scene {
        let root = tempfile::tempdir().unwrap();
        let base = root.path().canonicalize().unwrap();
        let home = base.join("home");
        let config = base.join("cfg");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&config).unwrap();
        std::fs::write(config.join("acp-bridge-token"), TOKEN_CANARY).unwrap();
        Scene { root, home, config }
    }

    fn base(&self) -> PathBuf {
        self.root.path().canonicalize().unwrap()
    }

    fn builder(&self, model: &ModelServer) -> Builder {
        AcpClient::builder()
            .model(model.base_url())
            .config_dir(&self.config)
            .env("HOME", self.home.display().to_string())
            // The kernel alone decides what the shell reads.
            .env("ZEROCLAW_autonomy__policy_checks", "false")
    }

    fn spawn(&self, model: &ModelServer) -> AcpClient {
        let client = self.builder(model).spawn();
        client.initialize();
        client
    }
}

fn new_in(client: &AcpClient, cwd: &Path) -> Value {
    client.request("session/new", json!({"cwd": cwd, "mcpServers": []}))
}

/// `session/new` in `cwd` must be -32602 naming `denied`. Should it be accepted (the bug), the
/// session's shell tries to print the bridge token, and the failure says whether it leaked.
fn assert_refused(client: &AcpClient, cwd: &Path, denied: &Path) {
    let resp = new_in(client, cwd);
    if let Some(session) = resp["result"]["sessionId"].as_str() {
        let out = client.prompt(session, "read the token");
        let leaked = serde_json::to_string(&client.messages())
            .unwrap()
            .contains(TOKEN_CANARY);
        panic!(
            "session/new accepted cwd {} (inside {}); bridge token leaked through shell: \
             {leaked}; {out}",
            cwd.display(),
            denied.display()
        );
    }
    let error = &resp["error"];
    assert_eq!(error["code"], -32602, "{resp}");
    let message = error["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&*denied.to_string_lossy()),
        "the message names {}: {message}",
        denied.display()
    );
}

/// The model asks for one `shell` call printing the bridge token (relative to the cwd and by
/// its absolute path), then ends the turn.
fn token_reader(config: &Path) -> Vec<Reply> {
    let token = config.join("acp-bridge-token");
    let command = format!(
        "head -c 40 acp-bridge-token; cat {}; echo {RAN}",
        token.display()
    );
    vec![
        tool_reply("call_1", "shell", &json!({"command": command})),
        text_reply("done"),
    ]
}

#[test]
fn a_cwd_at_or_inside_the_config_dir_is_refused_naming_it() {
    let scene = Scene::new();
    let model = ModelServer::start_blocking(token_reader(&scene.config));
    let client = scene.spawn(&model);
    assert_refused(&client, &scene.config, &scene.config);
    let inside = scene.config.join("workspace");
    std::fs::create_dir_all(&inside).unwrap();
    assert_refused(&client, &inside, &scene.config);
    assert_eq!(model.requests().len(), 0, "no turn ran");
}

#[test]
fn a_cwd_inside_home_ssh_or_a_configured_forbidden_path_is_refused() {
    let scene = Scene::new();
    let keys = scene.home.join(".ssh/keys");
    std::fs::create_dir_all(&keys).unwrap();
    let private = scene.base().join("private");
    std::fs::create_dir_all(private.join("project")).unwrap();
    let model = ModelServer::start_blocking(token_reader(&scene.config));
    let client = scene
        .builder(&model)
        .env(
            "ZEROCLAW_autonomy__forbidden_paths",
            format!("[\"{}\"]", private.display()),
        )
        .spawn();
    client.initialize();
    assert_refused(&client, &keys, &scene.home.join(".ssh"));
    assert_refused(&client, &private.join("project"), &private);
    assert_refused(&client, &private, &private);
}

#[test]
fn root_is_refused_unless_the_config_allows_it_by_name() {
    let scene = Scene::new();
    let model = ModelServer::start_blocking(Vec::new());
    let client = scene.spawn(&model);
    let resp = new_in(&client, Path::new("/"));
    assert_eq!(resp["error"]["code"], -32602, "{resp}");
    let message = resp["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("allow_root_cwd"), "{message}");

    let allowed = scene
        .builder(&model)
        .env("ZEROCLAW_autonomy__allow_root_cwd", "true")
        .spawn();
    allowed.initialize();
    let resp = new_in(&allowed, Path::new("/"));
    assert_eq!(resp["result"]["workspaceDir"], "/", "{resp}");
}

#[test]
fn a_cwd_holding_the_config_dir_is_allowed_and_the_token_stays_hidden() {
    let scene = Scene::new();
    let model = ModelServer::start_blocking(token_reader(&scene.config));
    let client = scene.spawn(&model);
    let resp = new_in(&client, &scene.base());
    let session = resp["result"]["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("a cwd holding the config dir is allowed: {resp}"))
        .to_owned();
    let out = client.prompt(&session, "read the token");
    assert_eq!(out["result"]["stopReason"], "end_turn", "{out}");
    let seen = serde_json::to_string(&client.messages()).unwrap();
    let sent_to_model = serde_json::to_string(&model.requests()).unwrap();
    assert!(
        seen.contains(RAN) && sent_to_model.contains(RAN),
        "the shell ran: {seen}"
    );
    assert!(
        !seen.contains(TOKEN_CANARY) && !sent_to_model.contains(TOKEN_CANARY),
        "the bridge token was read through the shell: {seen}"
    );
}

/// A session made in `work` and stored; the process is gone afterwards.
fn stored_session(scene: &Scene, work: &Path) -> String {
    let model = ModelServer::start_blocking(vec![text_reply("stored")]);
    let mut client = scene.spawn(&model);
    let session = new_in(&client, work)["result"]["sessionId"]
        .as_str()
        .expect("session")
        .to_owned();
    client.prompt(&session, "hi");
    client.shutdown();
    session
}

fn store_db(scene: &Scene) -> PathBuf {
    scene.config.join("workspace/sessions/acp-sessions.db")
}

#[test]
fn load_and_resume_refuse_a_stored_cwd_that_is_denied_now() {
    let scene = Scene::new();
    let work = scene.base().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let session = stored_session(&scene, &work);
    let model = ModelServer::start_blocking(Vec::new());

    // The configuration changed: the session's directory is forbidden now.
    let client = scene
        .builder(&model)
        .env(
            "ZEROCLAW_autonomy__forbidden_paths",
            format!("[\"{}\"]", work.display()),
        )
        .spawn();
    client.initialize();
    for method in ["session/load", "session/resume"] {
        for params in [
            json!({"sessionId": session, "mcpServers": []}),
            json!({"sessionId": session, "cwd": work, "mcpServers": []}),
        ] {
            let error = client.call_err(method, params);
            assert_eq!(error["code"], -32602, "{method}: {error}");
            let message = error["message"].as_str().unwrap_or_default();
            assert!(message.contains(&*work.to_string_lossy()), "{message}");
        }
    }
    drop(client);

    // The record was edited to point into the config directory.
    let conn = rusqlite::Connection::open(store_db(&scene)).unwrap();
    let config = scene.config.display().to_string();
    conn.execute(
        "UPDATE sessions SET workspace_dir = ?1 WHERE id = ?2",
        [&config, &session],
    )
    .unwrap();
    drop(conn);
    let client = scene.spawn(&model);
    for method in ["session/load", "session/resume"] {
        let error = client.call_err(method, json!({"sessionId": session, "mcpServers": []}));
        assert_eq!(error["code"], -32602, "{method}: {error}");
        assert!(
            error["message"]
                .as_str()
                .unwrap_or_default()
                .contains(&config),
            "{error}"
        );
    }
}

#[test]
fn load_and_resume_keep_the_stored_cwd_and_refuse_another() {
    let scene = Scene::new();
    let work = scene.base().join("work");
    let other = scene.base().join("other");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::create_dir_all(&other).unwrap();
    let link = scene.base().join("link-to-work");
    std::os::unix::fs::symlink(&work, &link).unwrap();
    let session = stored_session(&scene, &work);
    let model = ModelServer::start_blocking(vec![text_reply("in work")]);
    let client = scene.spawn(&model);
    for method in ["session/resume", "session/load"] {
        let error = client.call_err(
            method,
            json!({"sessionId": session, "cwd": other, "mcpServers": []}),
        );
        assert_eq!(error["code"], -32602, "{method}: {error}");
        let message = error["message"].as_str().unwrap_or_default();
        assert!(
            message.contains(&format!("belongs to {}", work.display())),
            "{method}: {message}"
        );
    }
    let missing = scene.base().join("gone");
    let error = client.call_err(
        "session/load",
        json!({"sessionId": session, "cwd": missing, "mcpServers": []}),
    );
    assert_eq!(error["code"], -32602, "{error}");
    // The same directory through a symlink is the same cwd.
    let loaded = client.call(
        "session/load",
        json!({"sessionId": session, "cwd": link, "mcpServers": []}),
    );
    assert_eq!(loaded["modes"]["currentModeId"], "supervised", "{loaded}");
    assert!(loaded["configOptions"].is_array(), "{loaded}");
    let out = client.prompt(&session, "where");
    assert_eq!(out["result"]["content"], "in work", "{out}");
}
