//! The daemon under systemd's protocols without systemd as PID 1: socket activation through
//! `systemd-socket-activate` (Debian package `systemd`) with named sockets, a `NOTIFY_SOCKET`
//! datagram listener that must see `READY=1`, `STATUS=`, `WATCHDOG=1` and `STOPPING=1` in that
//! order, an activated socket that is never unlinked, and `--idle-exit`.

use crate::support;

use std::net::SocketAddr;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use support::acp_client::{AcpClient, model_env};
use support::ws_conn::{Endpoint, TokenAt, Upgrade};
use support::ws_daemon::{HANG_GUARD, Launched, create_token};

/// Skips (printing why) unless present; under `CI=true` a missing tool fails the test.
fn have_socket_activate() -> bool {
    let present = Command::new("systemd-socket-activate")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !present {
        support::require_feature("systemd-socket-activate (Debian package systemd) is missing");
    }
    present
}

/// Every line of every datagram received on the notify socket, in order.
struct Notifications {
    lines: Arc<(Mutex<Vec<String>>, Condvar)>,
    _thread: std::thread::JoinHandle<()>,
}

impl Notifications {
    fn listen(path: &Path) -> Notifications {
        let socket = UnixDatagram::bind(path).expect("bind NOTIFY_SOCKET");
        socket
            .set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let lines = Arc::new((Mutex::new(Vec::new()), Condvar::new()));
        let sink = Arc::clone(&lines);
        let thread = std::thread::spawn(move || {
            let mut buf = vec![0u8; 4096];
            // Ends when the test's temp dir (and so the socket path) is gone and the owner dropped.
            while Arc::strong_count(&sink) > 1 {
                let Ok(n) = socket.recv(&mut buf) else {
                    continue;
                };
                let text = String::from_utf8_lossy(&buf[..n]).into_owned();
                let (list, changed) = &*sink;
                list.lock()
                    .unwrap()
                    .extend(text.lines().map(str::to_string));
                changed.notify_all();
            }
        });
        Notifications {
            lines,
            _thread: thread,
        }
    }

    fn snapshot(&self) -> Vec<String> {
        self.lines.0.lock().unwrap().clone()
    }

    /// Waits (hang-guarded) for a line starting with `prefix` at or after index `from`.
    fn wait(&self, from: usize, prefix: &str) -> usize {
        let start = Instant::now();
        let (list, changed) = &*self.lines;
        let mut lines = list.lock().unwrap();
        loop {
            if let Some(i) = lines.iter().skip(from).position(|l| l.starts_with(prefix)) {
                return from + i;
            }
            assert!(
                start.elapsed() < HANG_GUARD,
                "hang guard: no {prefix:?} after {from} in {lines:?}"
            );
            lines = changed
                .wait_timeout(lines, Duration::from_millis(100))
                .unwrap()
                .0;
        }
    }
}

/// A loopback address with a port that was free a moment ago (systemd-socket-activate cannot
/// listen on port 0).
fn free_loopback_port() -> SocketAddr {
    let probe = std::net::TcpListener::bind("127.0.0.1:0").expect("probe port");
    probe.local_addr().unwrap()
}

/// `systemd-socket-activate` with a named Unix socket (`acp`) and TCP socket (`acp-tcp`) in
/// front of `zeroclaw daemon`; the variables the daemon needs are passed with `-E`. Dropping it
/// kills and reaps the process (`Launched`).
struct Activated {
    launched: Launched,
    unix: PathBuf,
    tcp: SocketAddr,
}

fn activate(
    dir: &Path,
    config: &Path,
    env: &[(String, String)],
    daemon_args: &[&str],
) -> Activated {
    let unix = dir.join("acp.sock");
    let mut cmd = Command::new("systemd-socket-activate");
    cmd.arg(format!("--listen={}", unix.display()))
        .arg(format!("--listen={}", free_loopback_port()))
        .arg("--fdname=acp:acp-tcp");
    let mut vars: Vec<(String, String)> = vec![
        ("ZEROCLAW_CONFIG_DIR".into(), config.display().to_string()),
        ("PATH".into(), std::env::var("PATH").unwrap_or_default()),
        ("HOME".into(), config.display().to_string()),
    ];
    vars.extend_from_slice(env);
    for (k, v) in &vars {
        cmd.arg(format!("--setenv={k}={v}"));
    }
    cmd.arg(env!("CARGO_BIN_EXE_zeroclaw"))
        .arg("daemon")
        .args(daemon_args);
    cmd.env_clear();
    let mut launched = Launched::spawn(cmd);
    // systemd-socket-activate announces each socket before waiting for the first connection.
    let text = launched.wait_text("as 4");
    let tcp = text
        .lines()
        .filter(|l| l.contains("as 4"))
        .find_map(|l| {
            l.split_whitespace()
                .find_map(|w| w.parse::<SocketAddr>().ok())
        })
        .unwrap_or_else(|| panic!("no TCP address announced:\n{text}"));
    Activated {
        launched,
        unix,
        tcp,
    }
}

#[test]
fn socket_activated_daemon_notifies_ready_status_watchdog_and_stopping_in_order() {
    if !have_socket_activate() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config");
    std::fs::create_dir_all(&config).unwrap();
    let token = create_token(&config, "ci");
    let notify_path = dir.path().join("notify.sock");
    let notes = Notifications::listen(&notify_path);
    let env = [
        (
            "NOTIFY_SOCKET".to_string(),
            notify_path.display().to_string(),
        ),
        ("WATCHDOG_USEC".to_string(), "400000".to_string()),
    ];
    let mut act = activate(dir.path(), &config, &env, &[]);

    // The first connection makes systemd-socket-activate exec the daemon on the same pid.
    let over_unix = AcpClient::connect(&Upgrade::new(Endpoint::Unix(act.unix.clone())), &config)
        .unwrap_or_else(|e| panic!("{e}\n{}", act.launched.text()));
    assert_eq!(over_unix.initialize()["protocolVersion"], 1);
    let over_tcp = Upgrade::new(Endpoint::Tcp(act.tcp)).token(TokenAt::Header, &token);
    let over_tcp = AcpClient::connect(&over_tcp, &config)
        .unwrap_or_else(|e| panic!("{e}\n{}", act.launched.text()));
    assert_eq!(over_tcp.initialize()["protocolVersion"], 1);

    let ready = notes.wait(0, "READY=1");
    let status = notes.wait(0, "STATUS=");
    let watchdog = notes.wait(ready, "WATCHDOG=1");
    let before_term = notes.snapshot().len();
    assert!(
        !notes.snapshot().iter().any(|l| l.starts_with("STOPPING=1")),
        "STOPPING before SIGTERM: {:?}",
        notes.snapshot()
    );
    act.launched.signal(libc::SIGTERM);
    let stopping = notes.wait(before_term, "STOPPING=1");
    let exit = act.launched.wait_exit();
    assert!(exit.success(), "exit {exit}\n{}", act.launched.text());
    assert!(ready < watchdog && watchdog < stopping && status < stopping);
    let lines = notes.snapshot();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("STATUS=") && l.len() > "STATUS=".len()),
        "{lines:?}"
    );
    assert!(act.unix.exists(), "the activated socket was unlinked");
    drop((over_unix, over_tcp));
}

#[test]
fn idle_exit_ends_a_socket_activated_daemon_with_no_connections() {
    if !have_socket_activate() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config");
    std::fs::create_dir_all(&config).unwrap();
    let env = model_env("http://127.0.0.1:9/v1");
    let mut act = activate(dir.path(), &config, &env, &["--idle-exit", "1"]);
    let client = AcpClient::connect(&Upgrade::new(Endpoint::Unix(act.unix.clone())), &config)
        .unwrap_or_else(|e| panic!("{e}\n{}", act.launched.text()));
    assert_eq!(client.initialize()["protocolVersion"], 1);
    drop(client);
    // No timing assertion: the daemon exits on its own (hang-guarded wait), successfully.
    let exit = act.launched.wait_exit();
    assert!(exit.success(), "exit {exit}\n{}", act.launched.text());
    assert!(act.unix.exists(), "the activated socket was unlinked");
}
