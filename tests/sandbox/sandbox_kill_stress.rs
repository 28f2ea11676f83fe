//! The agent killed at every point of a tool call's life: `zeroclaw acp` (full autonomy, the
//! loopback model) gets a burst of concurrent `session/prompt`s whose `shell` calls leave a
//! background child beside the foreground one, and is SIGKILLed after a random delay spread
//! over the whole setup window (0–50 ms after the prompts, then later, when the commands run).
//! One second later no process of that run may be alive: judged from outside, by a `/proc`
//! scan for a marker unique to the run in the command line. The same for `zeroclaw daemon`
//! (calls running on several connections) and for `zeroclaw sandbox run` killed mid-setup.
//!
//! Cases: the namespaces and bubblewrap rungs, each cold (the process's first tool calls: the
//! zygote and every helper start while the calls arrive) and warm (after a call has ended: the
//! zygote runs, and on namespaces a helper is prepared for the next call); `sandbox run` also on
//! the Landlock rung, with the network denied and with the egress proxy served by the CLI
//! (`--network proxy`). Every iteration prints nothing; each case prints its iteration count
//! and how many survivors it found. Survivors are killed before the test fails.

use crate::sandbox_support;
use crate::support;
use crate::tools_support;

use std::fs;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::json;

use sandbox_support::procs::survivors;
use support::acp_client::{AcpClient, prompt_params};
use support::model_server::{ModelServer, text_reply, tool_reply};
use support::ws_conn::{Endpoint, TokenAt, Upgrade};
use support::ws_daemon::Daemon;
use tools_support::backend_available;

/// How long after the agent's death nothing it confined may be left.
const GRACE: Duration = Duration::from_secs(1);

/// A small deterministic generator (xorshift), seeded per case and printed, so a failing
/// sequence of delays can be replayed with `ZC_STRESS_SEED`.
struct Rng(u64);

impl Rng {
    fn new(case: &str) -> Rng {
        let seed = std::env::var("ZC_STRESS_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(1, |d| d.as_nanos() as u64)
            })
            | 1;
        eprintln!("{case}: seed {seed}");
        Rng(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A delay for the kill: three in four within `early` (the setup window), the others up to
    /// `late` (the commands run by then).
    fn kill_delay(&mut self, early: Duration, late: Duration) -> Duration {
        let bound = if self.next().is_multiple_of(4) {
            late
        } else {
            early
        };
        Duration::from_micros(self.next() % (bound.as_micros() as u64 + 1))
    }
}

/// A marker unique to one run, and the command carrying it: a background `sleep` beside a
/// foreground one, as the agent ran, and one in a session of its own (re-parented to
/// the reaper once the shell is gone; `sleep` takes the marker as its duration).
fn marker() -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("307{:06}{n:05}", std::process::id() % 1_000_000)
}

fn command(marker: &str) -> String {
    format!("sleep {marker} & setsid sleep {marker} & sleep {marker}; echo never")
}

/// Runs whose agent has been killed, checked once their grace has passed (the next runs go on
/// meanwhile, so the grace costs no time per iteration).
#[derive(Default)]
struct Pending {
    due: Vec<(Instant, String)>,
    iterations: usize,
    survivors: Vec<String>,
}

impl Pending {
    /// The agent of the run `marker` died just now.
    fn killed(&mut self, marker: String) {
        self.iterations += 1;
        self.due.push((Instant::now() + GRACE, marker));
        self.check(false);
    }

    /// Checks every run whose grace has passed (all of them when `all`, after waiting).
    fn check(&mut self, all: bool) {
        let now = Instant::now();
        let (ready, later): (Vec<_>, Vec<_>) =
            self.due.drain(..).partition(|(at, _)| all || *at <= now);
        self.due = later;
        for (at, marker) in ready {
            if let Some(wait) = at.checked_duration_since(Instant::now()) {
                thread::sleep(wait);
            }
            let left = survivors(&marker);
            for pid in &left {
                self.survivors.push(describe(*pid));
            }
            kill_all(&marker);
        }
    }

    /// Waits for the last graces; prints the counts; fails if anything survived.
    fn finish(mut self, case: &str) {
        self.check(true);
        eprintln!(
            "{case}: {} iterations, {} survivors",
            self.iterations,
            self.survivors.len()
        );
        assert!(
            self.survivors.is_empty(),
            "ESCAPE: {case}: {} processes outlived their killed agent by {GRACE:?} \
             ({} iterations):\n{}",
            self.survivors.len(),
            self.iterations,
            self.survivors.join("\n")
        );
    }
}

/// A survivor's pid, command line, parent and pid namespace, for the failure message.
fn describe(pid: u32) -> String {
    let cmdline = fs::read(format!("/proc/{pid}/cmdline"))
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .unwrap_or_default();
    let ppid = fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            let after = s[s.rfind(')')? + 2..].to_string();
            after.split(' ').nth(1).map(str::to_string)
        })
        .unwrap_or_default();
    let parent = fs::read(format!("/proc/{ppid}/cmdline"))
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .unwrap_or_default();
    let ns = fs::read_link(format!("/proc/{pid}/ns/pid"))
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    format!("  pid {pid} ({cmdline}) parent {ppid} ({parent}) {ns}")
}

/// SIGKILLs every process carrying `needle` until none is left (at most two seconds).
fn kill_all(needle: &str) {
    let end = Instant::now() + Duration::from_secs(2);
    loop {
        let left = survivors(needle);
        if left.is_empty() || Instant::now() >= end {
            return;
        }
        for pid in left {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        thread::sleep(Duration::from_millis(5));
    }
}

/// Configuration of the agent: full autonomy on `backend`, room for every session.
fn config(backend: &str) -> String {
    format!(
        "[autonomy]\nlevel = \"full\"\n\n[sandbox]\nbackend = \"{backend}\"\n\n\
         [acp]\nmax_sessions = 64\n"
    )
}

/// When the agent is killed: after a delay, or once every command of the burst runs.
#[derive(Clone, Copy)]
enum Kill {
    After(Duration),
    WhenAllRun,
}

/// One `zeroclaw acp` run: `sessions` sessions in one workspace; with `warm`, one call ran to
/// its end first. Then a burst of one prompt per session, each calling `shell` with the run's
/// command, and SIGKILL as `kill` says.
fn acp_run(backend: &str, sessions: usize, warm: bool, kill: Kill, pending: &mut Pending) {
    let root = tempfile::tempdir().expect("root");
    let ws = root.path().join("ws");
    fs::create_dir(&ws).expect("ws");
    let model = ModelServer::start_blocking(Vec::new());
    let mut client = AcpClient::builder()
        .model(model.base_url())
        .config_toml(config(backend))
        .env("HOME", root.path().to_string_lossy())
        .current_dir(root.path())
        .spawn();
    client.initialize();
    let ids: Vec<String> = (0..sessions).map(|_| client.new_session(&ws)).collect();
    if warm {
        model.push(tool_reply("warm-up", "shell", &json!({"command": "true"})));
        model.push(text_reply("warmed"));
        let done = client.prompt(&ids[0], "warm up");
        assert_eq!(done["result"]["stopReason"], "end_turn", "warm-up: {done}");
        // The next call's helper is made in the background once the call has ended.
        thread::sleep(Duration::from_millis(150));
    }
    let marker = marker();
    let args = json!({ "command": command(&marker) });
    for (n, _) in ids.iter().enumerate() {
        model.push(tool_reply(&format!("burst-{n}"), "shell", &args));
    }
    for id in &ids {
        client.send_request("session/prompt", prompt_params(id, "go"));
    }
    match kill {
        Kill::After(delay) => thread::sleep(delay),
        Kill::WhenAllRun => {
            // Every command of the burst, or as many as run within the bound.
            let end = Instant::now() + Duration::from_secs(20);
            // The shell and its three sleeps, per session.
            while survivors(&marker).len() < 4 * sessions && Instant::now() < end {
                thread::sleep(Duration::from_millis(5));
            }
        }
    }
    client.kill9();
    pending.killed(marker);
}

fn acp_case(backend: &'static str, warm: bool, iterations: usize) {
    if !backend_available(backend) {
        return;
    }
    let case = format!("acp {backend} {}", if warm { "warm" } else { "cold" });
    let mut rng = Rng::new(&case);
    let mut pending = Pending::default();
    for _ in 0..iterations {
        let delay = rng.kill_delay(Duration::from_millis(50), Duration::from_millis(1500));
        acp_run(backend, 8, warm, Kill::After(delay), &mut pending);
    }
    pending.finish(&case);
}

/// The sequence: twenty concurrent first tool calls, the agent killed once every
/// command of the burst runs.
#[test]
fn acp_killed_once_the_burst_runs() {
    for backend in ["namespaces", "bubblewrap"] {
        if !backend_available(backend) {
            continue;
        }
        let case = format!("acp {backend} burst running");
        let mut pending = Pending::default();
        for _ in 0..4 {
            acp_run(backend, 20, false, Kill::WhenAllRun, &mut pending);
        }
        pending.finish(&case);
    }
}

#[test]
fn acp_killed_namespaces_cold() {
    acp_case("namespaces", false, 20);
}

#[test]
fn acp_killed_namespaces_warm() {
    acp_case("namespaces", true, 10);
}

#[test]
fn acp_killed_bubblewrap_cold() {
    acp_case("bubblewrap", false, 20);
}

#[test]
fn acp_killed_bubblewrap_warm() {
    acp_case("bubblewrap", true, 10);
}

/// One `zeroclaw daemon` with calls running on `connections` connections (two sessions
/// each), SIGKILLed after `delay`.
fn daemon_run(backend: &str, connections: usize, delay: Duration, pending: &mut Pending) {
    let root = tempfile::tempdir().expect("root");
    let ws = root.path().join("ws");
    fs::create_dir(&ws).expect("ws");
    let model = ModelServer::start_blocking(Vec::new());
    let mut daemon = Daemon::builder()
        .config_toml(config(backend))
        .model(model.base_url())
        .env("HOME", root.path().to_string_lossy())
        .spawn();
    let clients: Vec<AcpClient> = (0..connections)
        .map(|_| {
            let upgrade =
                Upgrade::new(Endpoint::Tcp(daemon.tcp())).token(TokenAt::Header, daemon.token());
            let client = AcpClient::connect(&upgrade, daemon.config_dir())
                .unwrap_or_else(|e| panic!("{e}\n{}", daemon.log()));
            client.initialize();
            client
        })
        .collect();
    let sessions: Vec<(usize, String)> = clients
        .iter()
        .enumerate()
        .flat_map(|(c, client)| [(c, client.new_session(&ws)), (c, client.new_session(&ws))])
        .collect();
    let marker = marker();
    let args = json!({ "command": command(&marker) });
    for (n, _) in sessions.iter().enumerate() {
        model.push(tool_reply(&format!("burst-{n}"), "shell", &args));
    }
    for (c, id) in &sessions {
        clients[*c].send_request("session/prompt", prompt_params(id, "go"));
    }
    thread::sleep(delay);
    daemon.launched.kill();
    pending.killed(marker);
    drop(clients);
}

#[test]
fn daemon_killed_with_calls_on_several_connections() {
    let mut ran = false;
    for backend in ["namespaces", "bubblewrap"] {
        if !backend_available(backend) {
            continue;
        }
        ran = true;
        let case = format!("daemon {backend}");
        let mut rng = Rng::new(&case);
        let mut pending = Pending::default();
        for _ in 0..6 {
            let delay = rng.kill_delay(Duration::from_millis(50), Duration::from_millis(1500));
            daemon_run(backend, 3, delay, &mut pending);
        }
        pending.finish(&case);
    }
    if !ran {
        eprintln!("SKIP no namespace backend here");
    }
}

/// `zeroclaw sandbox run --network NETWORK` of the run's command, SIGKILLed after `delay`.
fn sandbox_run(
    backend: &str,
    network: &str,
    (ws, config_dir): (&Path, &Path),
    delay: Duration,
    pending: &mut Pending,
) {
    let marker = marker();
    let mut cli: Child = Command::new(env!("CARGO_BIN_EXE_zeroclaw"))
        .args(["sandbox", "run", "--backend", backend, "--network", network])
        .arg("--workspace")
        .arg(ws)
        .args(["--", "/bin/sh", "-c", &command(&marker)])
        .current_dir(ws)
        .env("ZEROCLAW_CONFIG_DIR", config_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn zeroclaw sandbox run");
    thread::sleep(delay);
    let _ = cli.kill();
    let _ = cli.wait();
    pending.killed(marker);
}

fn sandbox_run_case(backend: &'static str, iterations: usize) {
    sandbox_run_network_case(backend, "deny", iterations);
}

/// The same with the egress proxy served by the CLI: its listeners still on their way back
/// from the child, or being served.
fn sandbox_run_network_case(backend: &'static str, network: &str, iterations: usize) {
    if !backend_available(backend) {
        return;
    }
    let case = format!("sandbox run {backend} --network {network}");
    let mut rng = Rng::new(&case);
    let mut pending = Pending::default();
    let ws = tempfile::tempdir().expect("ws");
    // Apart from the workspace: `sandbox run` refuses a workspace inside its config dir.
    let config_dir = tempfile::tempdir().expect("config dir");
    for _ in 0..iterations {
        let delay = rng.kill_delay(Duration::from_millis(30), Duration::from_millis(300));
        let dirs = (ws.path(), config_dir.path());
        sandbox_run(backend, network, dirs, delay, &mut pending);
    }
    pending.finish(&case);
}

#[test]
fn sandbox_run_killed_mid_setup_namespaces() {
    sandbox_run_case("namespaces", 300);
}

#[test]
fn sandbox_run_killed_mid_setup_bubblewrap() {
    sandbox_run_case("bubblewrap", 150);
}

#[test]
fn sandbox_run_killed_mid_setup_landlock() {
    sandbox_run_case("landlock", 150);
}

#[test]
fn sandbox_run_proxied_killed_mid_setup_namespaces() {
    sandbox_run_network_case("namespaces", "proxy", 150);
}

#[test]
fn sandbox_run_proxied_killed_mid_setup_bubblewrap() {
    sandbox_run_network_case("bubblewrap", "proxy", 100);
}

#[test]
fn sandbox_run_proxied_killed_mid_setup_landlock() {
    sandbox_run_network_case("landlock", "proxy", 100);
}
