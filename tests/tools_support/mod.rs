//! Set-up shared by the tools, policy and injection suites: a `zeroclaw acp` process with an
//! `[autonomy]`/`[sandbox]` config and a fake `HOME`, one session whose cwd is `root/ws` (so
//! `root/outside` is a sibling outside the workspace), and [`Scene::call`], which scripts the
//! model to call one tool, runs the turn, and returns what the client and the model saw.
//!
//! Every directory is a fresh temp dir outside any repository; nothing outlives the scene.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use tempfile::TempDir;

use crate::support::acp_client::{AcpClient, Permission, is_response, is_update_for};
use crate::support::acp_fixture::content_text;
use crate::support::model_server::{ModelServer, text_reply, tool_reply};

/// The secret in the fake `~/.ssh/id_ed25519`.
pub const KEY_CANARY: &str = "zc-canary-ssh-6f1d2c";
/// A variable in the `zeroclaw acp` process environment (read via `/proc/<pid>/environ`).
pub const ENV_CANARY: &str = "zc-canary-env-93ab07";

/// What to spawn: config lines and how the client answers permission requests.
pub struct Setup {
    /// Lines under `[autonomy]`.
    pub autonomy: Vec<String>,
    /// Extra TOML appended as is (e.g. `[acp]`).
    pub extra_toml: String,
    /// `[sandbox] backend`; `None` keeps the default (`auto`).
    pub backend: Option<&'static str>,
    pub permission: Permission,
    /// Reuse this config dir (a restart on the same store).
    pub config_dir: Option<PathBuf>,
    /// Where the scene's temp dirs are made (default: the system temp dir).
    pub base: Option<PathBuf>,
    /// The client's `initialize` capabilities.
    pub capabilities: Value,
    /// Extra environment of the `zeroclaw acp` process (e.g. `PATH`).
    pub env: Vec<(String, String)>,
    /// Extra arguments of `zeroclaw acp` (e.g. `--metrics-file PATH`).
    pub args: Vec<String>,
}

impl Default for Setup {
    fn default() -> Self {
        Setup {
            autonomy: Vec::new(),
            extra_toml: String::new(),
            backend: None,
            permission: Permission::Select("allow-once".into()),
            config_dir: None,
            base: None,
            capabilities: json!({}),
            env: Vec::new(),
            args: Vec::new(),
        }
    }
}

impl Setup {
    /// The default setup with `[autonomy] level = level`.
    pub fn level(level: &str) -> Setup {
        Setup::default().autonomy(&format!("level = \"{level}\""))
    }

    /// Adds one line under `[autonomy]`.
    pub fn autonomy(mut self, line: &str) -> Setup {
        self.autonomy.push(line.to_string());
        self
    }

    pub fn backend(mut self, backend: &'static str) -> Setup {
        self.backend = Some(backend);
        self
    }

    pub fn permission(mut self, permission: Permission) -> Setup {
        self.permission = permission;
        self
    }

    /// Makes the scene's dirs (root, fake HOME, config dir) under `dir`.
    pub fn under(mut self, dir: impl Into<PathBuf>) -> Setup {
        self.base = Some(dir.into());
        self
    }

    /// Offers the client's `fs.readTextFile` / `fs.writeTextFile` in `initialize`.
    pub fn client_fs(mut self, read: bool, write: bool) -> Setup {
        self.capabilities = json!({"fs": {"readTextFile": read, "writeTextFile": write}});
        self
    }

    /// Sets a variable in the `zeroclaw acp` process's environment; `{home}` in `value` stands
    /// for the scene's fake home (made when the scene starts).
    pub fn env(mut self, name: &str, value: &str) -> Setup {
        self.env.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Adds an argument of `zeroclaw acp`.
    pub fn arg(mut self, arg: &str) -> Setup {
        self.args.push(arg.to_owned());
        self
    }

    pub fn extra(mut self, toml: &str) -> Setup {
        self.extra_toml.push_str(toml);
        self.extra_toml.push('\n');
        self
    }

    fn toml(&self) -> String {
        let mut toml = format!("[autonomy]\n{}\n", self.autonomy.join("\n"));
        if let Some(backend) = self.backend {
            toml.push_str(&format!("\n[sandbox]\nbackend = \"{backend}\"\n"));
        }
        toml.push('\n');
        toml.push_str(&self.extra_toml);
        toml
    }
}

/// A running server, its temp dirs and one session.
pub struct Scene {
    pub model: ModelServer,
    pub client: AcpClient,
    /// Holds `ws/` (the session cwd) and `outside`.
    pub root: TempDir,
    /// The fake `HOME` with `.ssh/id_ed25519`.
    pub home: TempDir,
    pub session: String,
    config: Option<TempDir>,
}

/// What one scripted tool call produced.
pub struct Outcome {
    /// The `tool_call` announcement.
    pub call: Value,
    /// Every `tool_call_update` of this call, in order.
    pub updates: Vec<Value>,
    /// The last status (`completed` / `failed`).
    pub status: String,
    /// The text content of all updates of this call.
    pub text: String,
    /// What the model was sent as this call's result in its next request.
    pub model_saw: String,
    /// The `session/prompt` response.
    pub response: Value,
    /// Permission requests sent during the turn.
    pub permission_requests: Vec<Value>,
}

impl Scene {
    pub fn start(setup: Setup) -> Scene {
        let model = ModelServer::start_blocking(Vec::new());
        let tempdir = |what: &str| {
            match &setup.base {
                Some(base) => tempfile::Builder::new().prefix("zc-test-").tempdir_in(base),
                None => tempfile::tempdir(),
            }
            .unwrap_or_else(|e| panic!("{what}: {e}"))
        };
        let home = tempdir("fake home");
        plant_home(home.path());
        let root = tempdir("root");
        std::fs::create_dir(root.path().join("ws")).expect("ws");
        let (config, config_dir) = match &setup.config_dir {
            Some(dir) => (None, dir.clone()),
            None => {
                let t = tempdir("config dir");
                let p = t.path().to_path_buf();
                (Some(t), p)
            }
        };
        let client = spawn_client(&setup, &model, &config_dir, home.path(), root.path());
        let session = client.new_session(&root.path().join("ws"));
        Scene {
            model,
            client,
            root,
            home,
            session,
            config,
        }
    }

    /// Stops the server and starts a fresh process on the same config dir (same store), then
    /// `session/load`s the session; returns the replayed updates.
    pub fn respawn(&mut self, setup: &Setup) -> Vec<Value> {
        self.client.shutdown();
        let config_dir = self.config_dir();
        self.client = spawn_client(
            setup,
            &self.model,
            &config_dir,
            self.home.path(),
            self.root.path(),
        );
        let from = self.client.message_count();
        let params = json!({"sessionId": self.session, "cwd": self.ws(), "mcpServers": []});
        let id = self.client.send_request("session/load", params);
        let (at, resp) = self
            .client
            .wait_for_from(from, |m| is_response(m) && m["id"] == id);
        assert!(resp.get("error").is_none(), "session/load: {resp}");
        self.client
            .messages_between(from, at)
            .into_iter()
            .filter(|m| is_update_for(m, &self.session))
            .map(|m| m["params"]["update"].clone())
            .collect()
    }

    /// The session cwd.
    pub fn ws(&self) -> PathBuf {
        self.root.path().join("ws")
    }

    /// The config dir (holds `workspace/sessions/acp-sessions.db`).
    pub fn config_dir(&self) -> PathBuf {
        self.client.config_dir().to_path_buf()
    }

    pub fn session_db(&self) -> PathBuf {
        self.config_dir().join("workspace/sessions/acp-sessions.db")
    }

    /// Scripts the model to call `tool` with `args`, then to answer "done"; runs the turn.
    pub fn call(&self, tool: &str, args: Value) -> Outcome {
        self.call_prompting(tool, args, "go")
    }

    /// Like [`Scene::call`] with this prompt text.
    pub fn call_prompting(&self, tool: &str, args: Value, prompt: &str) -> Outcome {
        let id = format!("call-{}", self.model.requests().len());
        let request_index = self.model.requests().len() + 1;
        let asked_before = self.client.permission_requests().len();
        let seen_before = self.client.updates_for(&self.session).len();
        self.model.push(tool_reply(&id, tool, &args));
        self.model.push(text_reply("done"));
        let response = self.client.prompt(&self.session, prompt);
        self.client.assert_valid();
        let updates = self.client.updates_for(&self.session)[seen_before..].to_vec();
        let permission_requests = self.client.permission_requests()[asked_before..].to_vec();
        self.outcome(&id, &updates, request_index, response, permission_requests)
    }

    fn outcome(
        &self,
        id: &str,
        updates: &[Value],
        request_index: usize,
        response: Value,
        permission_requests: Vec<Value>,
    ) -> Outcome {
        let call = updates
            .iter()
            .find(|u| u["sessionUpdate"] == "tool_call" && u["toolCallId"] == id)
            .cloned()
            .unwrap_or_else(|| {
                self.client
                    .fail(&format!("no tool_call {id} in {updates:?}"))
            });
        let mine: Vec<Value> = updates
            .iter()
            .filter(|u| u["sessionUpdate"] == "tool_call_update" && u["toolCallId"] == id)
            .cloned()
            .collect();
        let status = mine
            .iter()
            .rev()
            .find_map(|u| u["status"].as_str())
            .unwrap_or_default()
            .to_string();
        let text = mine.iter().map(update_text).collect::<Vec<_>>().join("\n");
        Outcome {
            call,
            updates: mine,
            status,
            text,
            model_saw: self.tool_message(request_index, id),
            response,
            permission_requests,
        }
    }

    /// The content of the `tool` message answering `id` in the n-th model request.
    pub fn tool_message(&self, n: usize, id: &str) -> String {
        let requests = self.model.requests();
        let Some(request) = requests.get(n) else {
            return String::new();
        };
        request["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|m| m["role"] == "tool" && m["tool_call_id"] == id)
            .map(|m| content_text(&m["content"]))
            .unwrap_or_default()
    }

    /// Where the conversation is now: (client messages, model requests), for [`Scene::seen_since`].
    pub fn mark(&self) -> (usize, usize) {
        (self.client.message_count(), self.model.requests().len())
    }

    /// Everything the client received and the model was sent since `mark`, as one text.
    pub fn seen_since(&self, mark: (usize, usize)) -> String {
        let client: Vec<String> = self
            .client
            .messages_between(mark.0, usize::MAX)
            .iter()
            .map(Value::to_string)
            .collect();
        let requests = self.model.requests();
        let model: Vec<String> = requests[mark.1.min(requests.len())..]
            .iter()
            .map(Value::to_string)
            .collect();
        format!("{}\n{}", client.join("\n"), model.join("\n"))
    }

    /// Everything the client received and the model was sent, as one text.
    pub fn everything_seen(&self) -> String {
        let client: Vec<String> = self
            .client
            .messages()
            .iter()
            .map(Value::to_string)
            .collect();
        let model: Vec<String> = self.model.requests().iter().map(Value::to_string).collect();
        format!("{}\n{}", client.join("\n"), model.join("\n"))
    }
}

/// Spawns and initializes `zeroclaw acp` with the setup's config, the fake home and a canary
/// variable in its environment.
fn spawn_client(
    setup: &Setup,
    model: &ModelServer,
    config_dir: &Path,
    home: &Path,
    root: &Path,
) -> AcpClient {
    let mut builder = AcpClient::builder()
        .model(model.base_url())
        .config_dir(config_dir)
        .config_toml(setup.toml())
        .env("HOME", home.to_string_lossy())
        .env("ZC_CANARY", ENV_CANARY)
        .env("GIT_CEILING_DIRECTORIES", root.to_string_lossy())
        .current_dir(root);
    for (name, value) in &setup.env {
        builder = builder.env(name, value.replace("{home}", &home.to_string_lossy()));
    }
    for arg in &setup.args {
        builder = builder.arg(arg.as_str());
    }
    let client = builder.spawn();
    client.set_permission(setup.permission.clone());
    client.initialize_with(setup.capabilities.clone());
    client
}

/// The text of a `tool_call(_update)`'s `content` blocks (text and diff paths).
pub fn update_text(update: &Value) -> String {
    update["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["content"]["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The fake home: `.ssh/id_ed25519` with the key canary.
fn plant_home(home: &Path) {
    std::fs::create_dir_all(home.join(".ssh")).expect("fake .ssh");
    std::fs::write(
        home.join(".ssh/id_ed25519"),
        format!("-----BEGIN OPENSSH PRIVATE KEY-----\n{KEY_CANARY}\n"),
    )
    .expect("fake key");
}

impl Outcome {
    /// Panics unless the call ended `completed`.
    pub fn assert_completed(&self) -> &Outcome {
        assert_eq!(
            self.status,
            "completed",
            "call completed: {}",
            self.describe()
        );
        self
    }

    /// Panics unless the call ended `failed`.
    pub fn assert_failed(&self) -> &Outcome {
        assert_eq!(self.status, "failed", "call failed: {}", self.describe());
        self
    }

    /// Panics unless both the client and the model saw `needle` as the result.
    pub fn assert_result_contains(&self, needle: &str) -> &Outcome {
        assert!(
            self.text.contains(needle),
            "client saw {needle:?}: {}",
            self.describe()
        );
        assert!(
            self.model_saw.contains(needle),
            "model saw {needle:?}: {}",
            self.describe()
        );
        self
    }

    pub fn describe(&self) -> String {
        format!(
            "status={:?}\ncall={}\nupdates={:#?}\nmodel_saw={:?}",
            self.status, self.call, self.updates, self.model_saw
        )
    }
}

/// Whether `zeroclaw sandbox run --backend <backend>` confines a command here. A missing
/// backend prints why and returns `false`; with `CI=true` it panics instead.
pub fn backend_available(backend: &str) -> bool {
    // The config dir apart from the workspace: `sandbox run` denies the config dir, and
    // refuses a workspace inside it.
    let (dir, config) = (
        tempfile::tempdir().expect("probe dir"),
        tempfile::tempdir().expect("probe config dir"),
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_zeroclaw"))
        .args(["sandbox", "run", "--backend", backend, "--workspace"])
        .arg(dir.path())
        .args(["--", "/bin/sh", "-c", "echo probe-ok"])
        .current_dir(dir.path())
        .env("ZEROCLAW_CONFIG_DIR", config.path())
        .output()
        .expect("run zeroclaw sandbox run");
    let stdout = String::from_utf8_lossy(&out.stdout);
    if out.status.success() && stdout.contains("probe-ok") {
        return true;
    }
    let reason = format!(
        "backend {backend} unavailable: exit {:?}, stderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).trim()
    );
    crate::support::require_feature(&reason);
    false
}
