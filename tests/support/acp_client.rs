//! Test-side ACP client: spawns the real `zeroclaw acp` binary with a private config dir, talks
//! NDJSON JSON-RPC over its stdio (or, under `ws_transport::with_transport`, spawns
//! `zeroclaw daemon` and talks one message per WebSocket frame via `ws_conn`), and checks that every line it writes is JSON-RPC that is
//! valid against the ACP v1 schema (see `acp_schema`).
//!
//! A reader thread (`acp_inbox`) collects and checks every stdout line; helpers send requests, notifications and raw
//! bytes, wait for messages, answer `session/request_permission`, and kill the process. Waits
//! carry a generous hang guard (not a timing assertion): a test that would hang fails instead,
//! printing the server's stderr.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

pub use super::acp_inbox::Permission;
use super::acp_inbox::{Inbox, Outgoing, Shared, spawn_reader, spawn_stderr_collector};
use super::ws_conn::{Endpoint, TokenAt, Upgrade};
use super::ws_daemon;
pub use super::ws_transport::Transport;

/// How long a wait may block before the test is declared hung.
pub const HANG_GUARD: Duration = Duration::from_secs(90);
/// How long `wait_exit` lets the pipe readers catch up with an exited process.
const DRAIN_GUARD: Duration = Duration::from_secs(5);

/// Spawn options for [`AcpClient`].
pub struct Builder {
    config_dir: Option<PathBuf>,
    model_url: Option<String>,
    env: Vec<(String, String)>,
    config_toml: Option<String>,
    args: Vec<String>,
    current_dir: Option<PathBuf>,
}

impl Builder {
    /// Points the `coder` agent (provider `local`, model `m`) at this model server base URL.
    pub fn model(mut self, base_url: impl Into<String>) -> Self {
        self.model_url = Some(base_url.into());
        self
    }

    /// Uses this config dir (e.g. to restart on the same store) instead of a fresh temp dir.
    pub fn config_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.config_dir = Some(dir.into());
        self
    }

    /// Sets an environment variable for the server.
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Writes `config.toml` into the config dir before spawning.
    pub fn config_toml(mut self, toml: impl Into<String>) -> Self {
        self.config_toml = Some(toml.into());
        self
    }

    /// Appends a command-line argument after `acp`.
    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// The server's working directory (the default `cwd` of sessions).
    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.current_dir = Some(dir.into());
        self
    }

    /// Spawns `zeroclaw acp` (or, under a WebSocket transport, `zeroclaw daemon`).
    pub fn spawn(self) -> AcpClient {
        let (config_dir, temp) = match self.config_dir.clone() {
            Some(dir) => (dir, None),
            None => {
                let temp = tempfile::tempdir().expect("temp config dir");
                (temp.path().to_path_buf(), Some(temp))
            }
        };
        if let Some(toml) = &self.config_toml {
            std::fs::create_dir_all(&config_dir).expect("config dir");
            std::fs::write(config_dir.join("config.toml"), toml).expect("write config.toml");
        }
        let transport = super::ws_transport::current();
        if transport != Transport::Stdio {
            return self.spawn_daemon(transport, config_dir, temp);
        }
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_zeroclaw"));
        cmd.arg("acp").args(&self.args);
        scrub_env(&mut cmd);
        cmd.env("ZEROCLAW_CONFIG_DIR", &config_dir);
        if let Some(url) = &self.model_url {
            for (k, v) in model_env(url) {
                cmd.env(k, v);
            }
        }
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
        cmd.current_dir(self.current_dir.as_deref().unwrap_or(&config_dir));
        AcpClient::start(cmd, config_dir, temp)
    }

    /// Spawns `zeroclaw daemon` with the same config (the acp session flags become their env
    /// keys) and connects over WebSocket: TCP with a fresh token, or the Unix socket.
    fn spawn_daemon(
        self,
        transport: Transport,
        config_dir: PathBuf,
        temp: Option<tempfile::TempDir>,
    ) -> AcpClient {
        let (args, flag_env) = daemon_args(&self.args);
        let token_dir = flag_value(&args, "--config-dir").map_or(config_dir.clone(), PathBuf::from);
        let sock_dir = tempfile::tempdir().expect("socket dir");
        let unix = sock_dir.path().join("zc.sock");
        let tcp = transport == Transport::WsTcp;
        std::fs::create_dir_all(&token_dir).expect("config dir");
        let token = tcp.then(|| token_for(&token_dir));
        let mut cmd = ws_daemon::zeroclaw(&config_dir);
        cmd.arg("daemon").args(&args);
        cmd.env(
            "ZEROCLAW_gateway__listen",
            ws_daemon::listen_value(Some(&unix), tcp),
        );
        if let Some(url) = &self.model_url {
            cmd.envs(model_env(url));
        }
        cmd.envs(flag_env)
            .envs(self.env.iter().map(|(k, v)| (k, v)));
        cmd.current_dir(self.current_dir.as_deref().unwrap_or(&config_dir));
        let mut launched = ws_daemon::Launched::spawn(cmd);
        let endpoint = match tcp {
            true => Endpoint::Tcp(launched.wait_tcp()),
            false => {
                launched.wait_unix();
                Endpoint::Unix(unix)
            }
        };
        let mut upgrade = Upgrade::new(endpoint);
        if let Some(token) = &token {
            upgrade = upgrade.token(TokenAt::Header, token);
        }
        AcpClient::start_ws(launched, &upgrade, config_dir, temp, sock_dir)
    }
}

/// `zeroclaw acp` flags translated for `zeroclaw daemon`: the session flags become env keys.
fn daemon_args(args: &[String]) -> (Vec<String>, Vec<(String, String)>) {
    let mut kept = Vec::new();
    let mut env = Vec::new();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let key = match arg.as_str() {
            "--max-sessions" => "ZEROCLAW_acp__max_sessions",
            "--session-timeout" => "ZEROCLAW_acp__session_timeout_secs",
            _ => {
                kept.push(arg.clone());
                continue;
            }
        };
        let value = it.next().cloned().unwrap_or_default();
        env.push((key.to_string(), value));
    }
    (kept, env)
}

fn flag_value(args: &[String], flag: &str) -> Option<String> {
    let at = args.iter().position(|a| a == flag)?;
    args.get(at + 1).cloned()
}

/// One token per config dir, so a restarted daemon sees the same principal (`token:suite`).
fn token_for(config_dir: &Path) -> String {
    static TOKENS: Mutex<Vec<(PathBuf, String)>> = Mutex::new(Vec::new());
    let mut tokens = TOKENS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, token)) = tokens.iter().find(|(dir, _)| dir == config_dir) {
        return token.clone();
    }
    let token = ws_daemon::create_token(config_dir, "suite");
    tokens.push((config_dir.to_path_buf(), token.clone()));
    token
}

/// The env variables that point the `coder` agent at a loopback model server.
pub fn model_env(base_url: &str) -> Vec<(String, String)> {
    [
        ("ZEROCLAW_providers__local__kind", "openai"),
        ("ZEROCLAW_providers__local__base_url", base_url),
        ("ZEROCLAW_providers__local__api_key", "test"),
        ("ZEROCLAW_agents__coder__provider", "local"),
        ("ZEROCLAW_agents__coder__model", "m"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// Removes variables of the developer's environment that would change the server's config.
fn scrub_env(cmd: &mut Command) {
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy().into_owned();
        if key.starts_with("ZEROCLAW_") || key == "OPENROUTER_API_KEY" {
            cmd.env_remove(key);
        }
    }
    cmd.envs(super::store_under_test::env());
}

/// A running `zeroclaw acp` process and the client side of its connection.
pub struct AcpClient {
    /// The server process; absent for a client that only connected to a daemon.
    child: Option<Child>,
    shared: Arc<Shared>,
    stderr: Arc<Mutex<Vec<u8>>>,
    threads: Vec<JoinHandle<()>>,
    next_id: AtomicI64,
    config_dir: PathBuf,
    transport: Transport,
    _temp: Option<tempfile::TempDir>,
    _sock_dir: Option<tempfile::TempDir>,
}

impl AcpClient {
    /// Options for spawning a server.
    pub fn builder() -> Builder {
        Builder {
            config_dir: None,
            model_url: None,
            env: Vec::new(),
            config_toml: None,
            args: Vec::new(),
            current_dir: None,
        }
    }

    /// Spawns a server whose `coder` agent talks to the model server at `base_url`.
    pub fn spawn(base_url: &str) -> AcpClient {
        Self::builder().model(base_url).spawn()
    }

    fn start(mut cmd: Command, config_dir: PathBuf, temp: Option<tempfile::TempDir>) -> Self {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn zeroclaw acp");
        let stdin = child.stdin.take().map(|s| Box::new(s) as Outgoing);
        let shared = Arc::new(Shared::new(stdin));
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let stdout = child.stdout.take().expect("stdout");
        let err_pipe = child.stderr.take().expect("stderr");
        let threads = vec![
            spawn_reader(stdout, Arc::clone(&shared)),
            spawn_stderr_collector(err_pipe, Arc::clone(&stderr)),
        ];
        AcpClient {
            child: Some(child),
            shared,
            stderr,
            threads,
            next_id: AtomicI64::new(1),
            config_dir,
            transport: Transport::Stdio,
            _temp: temp,
            _sock_dir: None,
        }
    }

    fn start_ws(
        launched: ws_daemon::Launched,
        upgrade: &Upgrade,
        config_dir: PathBuf,
        temp: Option<tempfile::TempDir>,
        sock_dir: tempfile::TempDir,
    ) -> Self {
        let (mut child, output, mut threads) = launched.into_parts();
        let shared = Arc::new(Shared::new(None));
        let link = match super::ws_conn::open(upgrade, Arc::clone(&shared)) {
            Ok(link) => link,
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                let log =
                    String::from_utf8_lossy(&output.lock().unwrap_or_else(|e| e.into_inner()))
                        .into_owned();
                panic!("WebSocket upgrade failed: {e}\n--- daemon output ---\n{log}");
            }
        };
        *shared.stdin.lock().unwrap_or_else(|e| e.into_inner()) = Some(Box::new(link.sink));
        threads.push(link.thread);
        AcpClient {
            child: Some(child),
            shared,
            stderr: output,
            threads,
            next_id: AtomicI64::new(1),
            config_dir,
            transport: upgrade_transport(upgrade),
            _temp: temp,
            _sock_dir: Some(sock_dir),
        }
    }

    /// Runs any stdio ACP command (e.g. `zeroclaw-acp-bridge`) as the server end.
    pub fn spawn_command(cmd: Command, config_dir: &Path) -> AcpClient {
        AcpClient::start(cmd, config_dir.to_path_buf(), None)
    }

    /// Connects to a running daemon (see `ws_daemon::Daemon`); Err is the refusal (`HTTP 401`).
    pub fn connect(upgrade: &Upgrade, config_dir: &Path) -> Result<AcpClient, String> {
        let shared = Arc::new(Shared::new(None));
        let link = super::ws_conn::open(upgrade, Arc::clone(&shared))?;
        *shared.stdin.lock().unwrap_or_else(|e| e.into_inner()) = Some(Box::new(link.sink));
        Ok(AcpClient {
            child: None,
            shared,
            stderr: Arc::new(Mutex::new(Vec::new())),
            threads: vec![link.thread],
            next_id: AtomicI64::new(1),
            config_dir: config_dir.to_path_buf(),
            transport: upgrade_transport(upgrade),
            _temp: None,
            _sock_dir: None,
        })
    }

    fn process(&self) -> &Child {
        self.child
            .as_ref()
            .expect("this client has no server process")
    }

    fn process_mut(&mut self) -> &mut Child {
        self.child
            .as_mut()
            .expect("this client has no server process")
    }

    /// The transport this client talks over.
    pub fn transport(&self) -> Transport {
        self.transport
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.process().id()
    }

    /// The config dir the server runs with.
    pub fn config_dir(&self) -> &Path {
        &self.config_dir
    }

    /// Everything the server wrote to stderr so far.
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().unwrap_or_else(|e| e.into_inner())).into()
    }

    /// Waits (hang-guarded) until the server's stderr contains `needle` (case-insensitive).
    pub fn wait_stderr(&self, needle: &str) -> String {
        let start = Instant::now();
        let needle = needle.to_lowercase();
        loop {
            let text = self.stderr();
            if text.to_lowercase().contains(&needle) {
                return text;
            }
            if start.elapsed() > HANG_GUARD {
                self.fail(&format!("stderr never mentioned {needle:?}"));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Sets how later `session/request_permission` requests are answered.
    pub fn set_permission(&self, answer: Permission) {
        self.shared.lock().permission = Some(answer);
    }

    /// Sends a request without waiting; returns its id.
    pub fn send_request(&self, method: &str, params: Value) -> Value {
        let id = json!(self.next_id.fetch_add(1, Ordering::SeqCst));
        self.send_request_with_id(id.clone(), method, params);
        id
    }

    /// Sends a request with a caller-chosen id.
    pub fn send_request_with_id(&self, id: Value, method: &str, params: Value) {
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send_json(&msg);
    }

    /// Sends a request and waits for its response (the whole response message).
    pub fn request(&self, method: &str, params: Value) -> Value {
        let id = self.send_request(method, params);
        self.wait_response(&id)
    }

    /// Sends a request and returns its `result`, failing the test on an error response.
    pub fn call(&self, method: &str, params: Value) -> Value {
        let resp = self.request(method, params);
        match resp.get("result") {
            Some(result) => result.clone(),
            None => self.fail(&format!("{method} failed: {resp}")),
        }
    }

    /// Sends a request and returns its `error`, failing the test on success.
    pub fn call_err(&self, method: &str, params: Value) -> Value {
        let resp = self.request(method, params);
        match resp.get("error") {
            Some(error) => error.clone(),
            None => self.fail(&format!("{method} should have failed: {resp}")),
        }
    }

    /// Sends a notification.
    pub fn notify(&self, method: &str, params: Value) {
        self.send_json(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends a JSON value as one line, recording the method of a request for validation.
    pub fn send_json(&self, msg: &Value) {
        let mut line = serde_json::to_vec(msg).expect("serialize");
        line.push(b'\n');
        self.send_raw(&line);
    }

    /// Writes raw bytes to stdin (add the `\n` yourself). Requests in it are recorded.
    pub fn send_raw(&self, bytes: &[u8]) {
        self.record_requests(bytes);
        if let Err(e) = self.shared.write_line(bytes) {
            self.fail(&format!("writing to the server's stdin: {e}"));
        }
    }

    /// Like [`send_raw`](Self::send_raw) but reports a broken pipe instead of failing.
    pub fn try_send_raw(&self, bytes: &[u8]) -> std::io::Result<()> {
        self.record_requests(bytes);
        self.shared.write_line(bytes)
    }

    fn record_requests(&self, bytes: &[u8]) {
        for line in bytes.split(|b| *b == b'\n') {
            let Ok(Value::Object(obj)) = serde_json::from_slice::<Value>(line) else {
                continue;
            };
            // Any object with an id may be answered (method-less ones with an error).
            if let Some(id) = obj.get("id") {
                let method = obj
                    .get("method")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                self.shared
                    .lock()
                    .sent
                    .insert(id.to_string(), method.to_string());
            }
        }
    }

    /// Closes stdin (EOF for the server).
    pub fn close_stdin(&self) {
        self.shared
            .stdin
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
    }

    /// Closes stdin and waits for the process to exit (a daemon is sent SIGTERM after the
    /// connection closed).
    pub fn shutdown(&mut self) -> ExitStatus {
        self.close_stdin();
        if self.transport != Transport::Stdio {
            self.wait_eof();
            let pid = self.process().id().to_string();
            let _ = Command::new("kill").args(["-TERM", &pid]).status();
        }
        let status = self.wait_exit();
        self.join_threads();
        status
    }

    /// Waits (hang-guarded) for the process to exit on its own.
    pub fn wait_exit(&mut self) -> ExitStatus {
        let start = Instant::now();
        loop {
            if let Some(status) = self.process_mut().try_wait().expect("try_wait") {
                self.drain_pipes();
                return status;
            }
            if start.elapsed() > HANG_GUARD {
                self.fail("the server did not exit");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Sends SIGKILL and reaps the process.
    pub fn kill9(&mut self) {
        let child = self.process_mut();
        let _ = child.kill();
        let _ = child.wait();
        self.join_threads();
    }

    /// Whether the process is still running.
    pub fn is_alive(&mut self) -> bool {
        matches!(self.process_mut().try_wait(), Ok(None))
    }

    /// After the exit, lets the stdout and stderr readers reach end of file, so what the
    /// process wrote last is in `stderr()` (bounded: a leftover descendant may hold a pipe).
    fn drain_pipes(&mut self) {
        let start = Instant::now();
        while self.threads.iter().any(|t| !t.is_finished()) && start.elapsed() < DRAIN_GUARD {
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    fn join_threads(&mut self) {
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }

    /// A snapshot of every message received so far, in order.
    pub fn messages(&self) -> Vec<Value> {
        self.shared.lock().messages.clone()
    }

    /// A snapshot of the messages with index in `from..to`.
    pub fn messages_between(&self, from: usize, to: usize) -> Vec<Value> {
        let inbox = self.shared.lock();
        let to = to.min(inbox.messages.len());
        inbox.messages[from.min(to)..to].to_vec()
    }

    /// Number of messages received so far.
    pub fn message_count(&self) -> usize {
        self.shared.lock().messages.len()
    }

    /// Waits for the response with this id.
    pub fn wait_response(&self, id: &Value) -> Value {
        let id = id.clone();
        self.wait_for(move |m| is_response(m) && m.get("id") == Some(&id))
    }

    /// Waits for the first message (from the beginning) matching `pred`.
    pub fn wait_for(&self, pred: impl Fn(&Value) -> bool) -> Value {
        self.wait_for_from(0, pred).1
    }

    /// Waits for the first message at or after index `from` matching `pred`; returns its index.
    pub fn wait_for_from(&self, from: usize, pred: impl Fn(&Value) -> bool) -> (usize, Value) {
        let start = Instant::now();
        let mut inbox = self.shared.lock();
        loop {
            self.fail_on_violations(&inbox);
            let found = inbox
                .messages
                .iter()
                .enumerate()
                .skip(from)
                .find(|(_, m)| pred(m));
            if let Some((i, m)) = found {
                return (i, m.clone());
            }
            if inbox.eof {
                drop(inbox);
                self.fail("the server closed stdout before the awaited message arrived");
            }
            let left = HANG_GUARD.saturating_sub(start.elapsed());
            if left.is_zero() {
                drop(inbox);
                self.fail("hang guard: the awaited message never arrived");
            }
            inbox = self
                .shared
                .changed
                .wait_timeout(inbox, left)
                .expect("condvar")
                .0;
        }
    }

    /// Waits until stdout is closed (the process ended or closed it).
    pub fn wait_eof(&self) {
        let start = Instant::now();
        let mut inbox = self.shared.lock();
        while !inbox.eof {
            if start.elapsed() > HANG_GUARD {
                drop(inbox);
                self.fail("hang guard: stdout never closed");
            }
            inbox = self
                .shared
                .changed
                .wait_timeout(inbox, HANG_GUARD)
                .expect("condvar")
                .0;
        }
    }

    /// The `update` objects of every `session/update` received for this session, in order,
    /// without the session's metadata (see [`is_session_metadata`]).
    pub fn updates_for(&self, session: &str) -> Vec<Value> {
        self.messages()
            .iter()
            .filter(|m| is_update_for(m, session) && !is_session_metadata(&m["params"]["update"]))
            .map(|m| m["params"]["update"].clone())
            .collect()
    }

    /// Outbound `session/request_permission` requests received so far.
    pub fn permission_requests(&self) -> Vec<Value> {
        self.messages()
            .into_iter()
            .filter(|m| m["method"] == "session/request_permission" && m.get("id").is_some())
            .collect()
    }

    /// `initialize` with protocol version 1; returns the result.
    pub fn initialize(&self) -> Value {
        self.initialize_with(json!({}))
    }

    /// `initialize` offering these `clientCapabilities`; returns the result.
    pub fn initialize_with(&self, capabilities: Value) -> Value {
        self.call(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": capabilities}),
        )
    }

    /// Serves later `fs/*` requests from these editor buffers.
    pub fn serve_files(&self, buffers: super::acp_fs::Buffers) {
        self.shared.lock().files = Some(buffers);
    }

    /// The editor buffers as they are now (after the server's writes).
    pub fn buffers(&self) -> super::acp_fs::Buffers {
        self.shared.lock().files.clone().unwrap_or_default()
    }

    /// Outbound `fs/*` requests received so far.
    pub fn fs_requests(&self) -> Vec<Value> {
        self.messages()
            .into_iter()
            .filter(|m| m["method"].as_str().is_some_and(|n| n.starts_with("fs/")))
            .collect()
    }

    /// `session/new` in `cwd` (base-spec shape); returns the session id.
    /// Waits for the session's `available_commands_update` (sent just after the answer), so a
    /// test's message counts start after it.
    pub fn new_session(&self, cwd: &Path) -> String {
        let from = self.message_count();
        let result = self.call("session/new", json!({"cwd": cwd, "mcpServers": []}));
        let id = result["sessionId"].as_str().expect("sessionId").to_string();
        self.wait_for_from(from, |m| {
            is_update_for(m, &id)
                && m["params"]["update"]["sessionUpdate"] == "available_commands_update"
        });
        id
    }

    /// `session/prompt` with one text block; returns the whole response message.
    pub fn prompt(&self, session: &str, text: &str) -> Value {
        self.request("session/prompt", prompt_params(session, text))
    }

    /// Fails the test now if any received message violated the schema.
    pub fn assert_valid(&self) {
        let inbox = self.shared.lock();
        self.fail_on_violations(&inbox);
    }

    fn fail_on_violations(&self, inbox: &Inbox) {
        if let Some(v) = inbox.violations.first() {
            let v = v.clone();
            let n = inbox.violations.len();
            panic!(
                "server wrote {n} invalid message(s); first: {v}\n--- stderr ---\n{}",
                self.stderr()
            );
        }
    }

    /// Panics with the message and the server's stderr.
    pub fn fail(&self, what: &str) -> ! {
        panic!("{what}\n--- server stderr ---\n{}", self.stderr());
    }
}

impl Drop for AcpClient {
    fn drop(&mut self) {
        if let Some(child) = self.child.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        } else {
            self.close_stdin();
        }
        self.join_threads();
        if std::thread::panicking() {
            if let Some(child) = &self.child {
                eprintln!(
                    "--- zeroclaw acp stderr (pid {}) ---\n{}",
                    child.id(),
                    self.stderr()
                );
            }
            return;
        }
        let inbox = self.shared.lock();
        self.fail_on_violations(&inbox);
    }
}

fn upgrade_transport(upgrade: &Upgrade) -> Transport {
    match upgrade.endpoint {
        Endpoint::Tcp(_) => Transport::WsTcp,
        Endpoint::Unix(_) => Transport::WsUnix,
    }
}

/// `session/prompt` params with one text content block.
pub fn prompt_params(session: &str, text: &str) -> Value {
    json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]})
}

/// Whether the message is a response (has an id, no method).
pub fn is_response(m: &Value) -> bool {
    m.get("id").is_some() && m.get("method").is_none()
}

/// Whether the message is a `session/update` notification for this session.
/// Whether an update describes the session (its title, its commands) rather than a turn.
pub fn is_session_metadata(update: &Value) -> bool {
    matches!(
        update["sessionUpdate"].as_str(),
        Some("session_info_update" | "available_commands_update")
    )
}

pub fn is_update_for(m: &Value, session: &str) -> bool {
    m["method"] == "session/update" && m.get("id").is_none() && m["params"]["sessionId"] == session
}

/// Concatenated text of the `agent_message_chunk` updates.
pub fn agent_text(updates: &[Value]) -> String {
    chunk_text(updates, "agent_message_chunk")
}

/// Concatenated text of the updates of this `sessionUpdate` kind.
pub fn chunk_text(updates: &[Value], kind: &str) -> String {
    updates
        .iter()
        .filter(|u| u["sessionUpdate"] == kind)
        .filter_map(|u| u["content"]["text"].as_str())
        .collect()
}

/// Peak and current resident memory of a process, in KiB (`VmHWM`, `VmRSS`).
pub fn memory_kib(pid: u32) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
    };
    Some((field("VmHWM:")?, field("VmRSS:")?))
}
