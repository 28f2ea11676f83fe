//! Test-side launcher of the real `zeroclaw daemon`: a private config dir, a Unix socket in its
//! own temp dir plus `tcp:127.0.0.1:0`, a bearer token made with `zeroclaw token create`, the
//! bound TCP port read from the daemon's `listening on tcp:` stderr line, and SIGTERM/exit
//! helpers. Every daemon is killed and reaped on drop; its temp dirs go with it.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tempfile::TempDir;

use super::acp_client::model_env;
use super::acp_inbox::spawn_stderr_collector;

/// How long a wait may block before the test is declared hung (not a timing assertion).
pub const HANG_GUARD: Duration = Duration::from_secs(90);

/// `Command` for a `zeroclaw` subcommand with the developer's `ZEROCLAW_*` variables removed.
pub fn zeroclaw(config_dir: &Path) -> Command {
    scrubbed(env!("CARGO_BIN_EXE_zeroclaw"), config_dir)
}

/// `Command` for `program` without the developer's `ZEROCLAW_*`, `LISTEN_*` and notify
/// variables, with `ZEROCLAW_CONFIG_DIR` set.
pub fn scrubbed(program: &str, config_dir: &Path) -> Command {
    let mut cmd = Command::new(program);
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy().into_owned();
        if key.starts_with("ZEROCLAW_") || key == "OPENROUTER_API_KEY" || key.starts_with("LISTEN_")
        {
            cmd.env_remove(key);
        }
    }
    cmd.env_remove("NOTIFY_SOCKET").env_remove("WATCHDOG_USEC");
    cmd.env("ZEROCLAW_CONFIG_DIR", config_dir);
    cmd.envs(super::store_under_test::env());
    cmd
}

/// Runs `zeroclaw token create --name NAME` in this config dir; returns the printed token.
pub fn create_token(config_dir: &Path, name: &str) -> String {
    let out = run_ok(zeroclaw(config_dir).args(["token", "create", "--name", name]));
    let token = String::from_utf8(out.stdout).expect("token is UTF-8");
    let token = token.trim().to_string();
    assert!(
        !token.is_empty() && !token.contains(char::is_whitespace),
        "token {token:?}"
    );
    token
}

/// Runs `zeroclaw token revoke NAME` in this config dir.
pub fn revoke_token(config_dir: &Path, name: &str) {
    run_ok(zeroclaw(config_dir).args(["token", "revoke", name]));
}

/// Runs a command to completion, failing the test (with its stderr) unless it exits 0.
pub fn run_ok(cmd: &mut Command) -> Output {
    let out = cmd.stdin(Stdio::null()).output().expect("run zeroclaw");
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// What a launched daemon listens on.
pub struct Endpoints {
    /// The Unix socket (absent when only TCP is configured, e.g. under socket activation).
    pub unix: Option<PathBuf>,
    /// The bound TCP address.
    pub tcp: Option<SocketAddr>,
}

/// The bytes a process wrote, collected by background threads.
pub type Collected = Arc<Mutex<Vec<u8>>>;

/// A running daemon process with its collected stderr (and stdout, which must stay empty of
/// anything but logs' absence; both land in one buffer).
pub struct Launched {
    /// Taken out only by [`Launched::into_parts`].
    child: Option<Child>,
    pub output: Collected,
    pub threads: Vec<JoinHandle<()>>,
}

impl Launched {
    /// Spawns `cmd` with piped output collected in the background.
    pub fn spawn(mut cmd: Command) -> Launched {
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn zeroclaw daemon");
        let output = Arc::new(Mutex::new(Vec::new()));
        let threads = vec![
            spawn_stderr_collector(child.stdout.take().expect("stdout"), Arc::clone(&output)),
            spawn_stderr_collector(child.stderr.take().expect("stderr"), Arc::clone(&output)),
        ];
        Launched {
            child: Some(child),
            output,
            threads,
        }
    }

    /// The process and its output collectors, for an owner that reaps them itself.
    pub fn into_parts(self) -> (Child, Collected, Vec<JoinHandle<()>>) {
        let mut this = self;
        let threads = std::mem::take(&mut this.threads);
        let child = this.child.take().expect("child");
        (child, Arc::clone(&this.output), threads)
    }

    /// Everything the daemon wrote so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.output.lock().unwrap_or_else(|e| e.into_inner())).into()
    }

    /// Waits (hang-guarded) until the output contains `needle`; fails if the daemon exits first.
    pub fn wait_text(&mut self, needle: &str) -> String {
        let start = Instant::now();
        loop {
            let text = self.text();
            if text.contains(needle) {
                return text;
            }
            if let Ok(Some(status)) = self.try_wait() {
                self.join();
                panic!(
                    "daemon exited ({status}) before printing {needle:?}:\n{}",
                    self.text()
                );
            }
            assert!(
                start.elapsed() < HANG_GUARD,
                "hang guard: daemon never printed {needle:?}:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Waits for the `listening on tcp:` line and returns the bound address.
    pub fn wait_tcp(&mut self) -> SocketAddr {
        let text = self.wait_text("listening on tcp:");
        tcp_from_log(&text).unwrap_or_else(|| panic!("no TCP address in:\n{text}"))
    }

    /// Waits for the `listening on unix:` line.
    pub fn wait_unix(&mut self) {
        self.wait_text("listening on unix:");
    }

    /// Sends a signal (e.g. `libc::SIGTERM`) to the daemon.
    pub fn signal(&self, sig: i32) {
        let status = Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(self.pid().to_string())
            .status()
            .expect("kill");
        assert!(status.success(), "kill -{sig} failed");
    }

    /// Waits (hang-guarded) for the daemon to exit on its own.
    pub fn wait_exit(&mut self) -> ExitStatus {
        let start = Instant::now();
        loop {
            if let Some(status) = self.try_wait().expect("try_wait") {
                self.join();
                return status;
            }
            assert!(
                start.elapsed() < HANG_GUARD,
                "hang guard: daemon did not exit:\n{}",
                self.text()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("child").id()
    }

    /// The exit status, if the process ended.
    pub fn try_wait(&mut self) -> std::io::Result<Option<ExitStatus>> {
        self.child.as_mut().expect("child").try_wait()
    }

    /// SIGKILL and reap (a no-op once the process was handed over by `into_parts`).
    pub fn kill(&mut self) {
        if let Some(child) = self.child.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
        self.join();
    }

    fn join(&mut self) {
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for Launched {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The address of the last `listening on tcp:HOST:PORT` line.
pub fn tcp_from_log(text: &str) -> Option<SocketAddr> {
    let (_, rest) = text.rsplit_once("listening on tcp:")?;
    let addr: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | ':' | '[' | ']'))
        .collect();
    addr.parse().ok()
}

/// Options for a [`Daemon`].
#[derive(Default)]
pub struct DaemonBuilder {
    config_dir: Option<PathBuf>,
    config_toml: Option<String>,
    model_url: Option<String>,
    env: Vec<(String, String)>,
    args: Vec<String>,
    tcp: bool,
    unix: bool,
    token: bool,
}

impl DaemonBuilder {
    pub fn config_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.config_dir = Some(dir.into());
        self
    }
    pub fn config_toml(mut self, toml: impl Into<String>) -> Self {
        self.config_toml = Some(toml.into());
        self
    }
    pub fn model(mut self, base_url: impl Into<String>) -> Self {
        self.model_url = Some(base_url.into());
        self
    }
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }
    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        self.args.push(arg.into());
        self
    }
    /// Listen on TCP only (no Unix socket).
    pub fn tcp_only(mut self) -> Self {
        self.unix = false;
        self
    }
    /// Do not create a token before starting.
    pub fn no_token(mut self) -> Self {
        self.token = false;
        self
    }

    /// Starts the daemon and waits until every configured listener is up.
    pub fn spawn(self) -> Daemon {
        let (config_dir, temp) = match self.config_dir {
            Some(dir) => (dir, None),
            None => {
                let temp = tempfile::tempdir().expect("temp config dir");
                (temp.path().to_path_buf(), Some(temp))
            }
        };
        std::fs::create_dir_all(&config_dir).expect("config dir");
        if let Some(toml) = &self.config_toml {
            std::fs::write(config_dir.join("config.toml"), toml).expect("write config.toml");
        }
        let token = self.token.then(|| create_token(&config_dir, "test"));
        let sock_dir = tempfile::tempdir().expect("socket dir");
        let unix = self.unix.then(|| sock_dir.path().join("zc.sock"));
        let mut cmd = zeroclaw(&config_dir);
        cmd.arg("daemon").args(&self.args);
        cmd.env(
            "ZEROCLAW_gateway__listen",
            listen_value(unix.as_deref(), self.tcp),
        );
        if let Some(url) = &self.model_url {
            cmd.envs(model_env(url));
        }
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
        cmd.current_dir(&config_dir);
        let mut launched = Launched::spawn(cmd);
        let tcp = self.tcp.then(|| launched.wait_tcp());
        if unix.is_some() {
            launched.wait_unix();
        }
        Daemon {
            launched,
            endpoints: Endpoints { unix, tcp },
            token,
            config_dir,
            _sock_dir: sock_dir,
            _temp: temp,
        }
    }
}

/// The `[gateway].listen` array as a TOML value for the environment overlay.
pub fn listen_value(unix: Option<&Path>, tcp: bool) -> String {
    let mut entries = Vec::new();
    if let Some(path) = unix {
        entries.push(format!("\"unix:{}\"", path.display()));
    }
    if tcp {
        entries.push("\"tcp:127.0.0.1:0\"".to_string());
    }
    format!("[{}]", entries.join(", "))
}

/// A running `zeroclaw daemon`; killed and reaped on drop.
pub struct Daemon {
    pub launched: Launched,
    pub endpoints: Endpoints,
    /// The token made before start (name `test`), if any.
    pub token: Option<String>,
    config_dir: PathBuf,
    _sock_dir: TempDir,
    _temp: Option<TempDir>,
}

impl Daemon {
    /// Options; by default TCP and a Unix socket, with a token named `test`.
    pub fn builder() -> DaemonBuilder {
        DaemonBuilder {
            tcp: true,
            unix: true,
            token: true,
            ..DaemonBuilder::default()
        }
    }

    pub fn config_dir(&self) -> &Path {
        &self.config_dir
    }
    pub fn tcp(&self) -> SocketAddr {
        self.endpoints.tcp.expect("daemon listens on TCP")
    }
    pub fn unix(&self) -> &Path {
        self.endpoints
            .unix
            .as_deref()
            .expect("daemon listens on a Unix socket")
    }
    pub fn token(&self) -> &str {
        self.token.as_deref().expect("daemon has a token")
    }
    pub fn pid(&self) -> u32 {
        self.launched.pid()
    }
    pub fn log(&self) -> String {
        self.launched.text()
    }
    /// SIGTERM, then wait for the exit.
    pub fn terminate(&mut self) -> ExitStatus {
        self.launched.signal(libc::SIGTERM);
        self.launched.wait_exit()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.launched.kill();
        if std::thread::panicking() {
            eprintln!("--- zeroclaw daemon output ---\n{}", self.launched.text());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tcp_address_is_read_from_the_last_listening_line() {
        let log =
            "INFO listening on unix:/tmp/a.sock\nINFO listening on tcp:127.0.0.1:40123 more\n";
        assert_eq!(tcp_from_log(log), Some("127.0.0.1:40123".parse().unwrap()));
        assert_eq!(tcp_from_log("nothing"), None);
    }

    #[test]
    fn the_listen_value_is_a_toml_array() {
        let v = listen_value(Some(Path::new("/tmp/x/zc.sock")), true);
        assert_eq!(v, r#"["unix:/tmp/x/zc.sock", "tcp:127.0.0.1:0"]"#);
    }
}
