//! `zeroclaw sandbox run --network proxy` is a foreground run like `--network deny`, on every
//! rung that serves the proxy: the caller's stdin reaches the command and its exit code comes
//! back, and SIGINT or SIGTERM to zeroclaw end the run promptly as cancelled (exit 130), the
//! confined command killed, nothing of it left (judged by a `/proc` scan for a marker in its
//! command line). Reaching an allowed upstream and the refusal of a denied one, with the
//! refusal line on stderr: `egress_sandbox`.

use crate::sandbox_support;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use sandbox_support::Backend;
use sandbox_support::procs::{Reaper, survivors, survivors_after_grace};

use super::egress_sandbox::serves_proxy;

/// `zeroclaw sandbox run --backend B --network proxy -- ARGV` with an empty configuration.
fn command(
    backend: Backend,
    cfg: &std::path::Path,
    ws: &std::path::Path,
    argv: &[&str],
) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_zeroclaw"));
    for (name, _) in std::env::vars().filter(|(k, _)| k.starts_with("ZEROCLAW_")) {
        cmd.env_remove(name);
    }
    cmd.env("ZEROCLAW_CONFIG_DIR", cfg)
        .args([
            "sandbox",
            "run",
            "--backend",
            backend.name(),
            "--network",
            "proxy",
        ])
        .arg("--workspace")
        .arg(ws)
        .arg("--")
        .args(argv);
    cmd
}

fn stdin_reaches_the_command_and_its_exit_code_comes_back(b: Backend) {
    if !serves_proxy(b, "proxy foreground run", &[]) {
        return;
    }
    let (cfg, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut child = command(b, cfg.path(), ws.path(), &["sh", "-c", "cat; exit 7"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run zeroclaw");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"through the caller's stdin\n").unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "through the caller's stdin\n",
        "{stderr}"
    );
    assert_eq!(out.status.code(), Some(7), "{stderr}");
}
per_proxy_rung!(stdin_reaches_the_command_and_its_exit_code_comes_back);

fn a_signal_ends_the_run_as_cancelled_leaving_nothing(b: Backend) {
    if !serves_proxy(b, "proxy foreground run", &[]) {
        return;
    }
    for (i, signal) in [Signal::SIGINT, Signal::SIGTERM].into_iter().enumerate() {
        let (cfg, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        // `sleep` adds its arguments up: the second makes its command line unique.
        let marker = format!("0.000{}{i}{}", std::process::id(), b as u8);
        let _reaper = Reaper(marker.clone());
        let script = format!("echo started; exec sleep 30 {marker}");
        let mut child = command(b, cfg.path(), ws.path(), &["sh", "-c", &script])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run zeroclaw");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line, "started\n", "{signal}: the command did not start");
        let end = Instant::now() + Duration::from_secs(2);
        while !sleeping(&marker) && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(sleeping(&marker), "{signal}: no confined sleep to kill");
        let sent = Instant::now();
        kill(Pid::from_raw(child.id() as i32), signal).unwrap();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if sent.elapsed() > Duration::from_secs(10) {
                let _ = child.kill();
                panic!("{signal}: zeroclaw still runs 10 s after the signal");
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let took = sent.elapsed();
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(status.code(), Some(130), "{signal}: {status:?} {stderr}");
        assert!(took < Duration::from_secs(3), "{signal}: took {took:?}");
        let left = survivors_after_grace(&marker);
        assert!(left.is_empty(), "{signal}: left behind: {left:?}");
    }
}
per_proxy_rung!(a_signal_ends_the_run_as_cancelled_leaving_nothing);

/// Whether the confined `sleep` carrying `marker` runs (zeroclaw's own command line, and its
/// forked helper's, carry the marker too).
fn sleeping(marker: &str) -> bool {
    survivors(marker).into_iter().any(|pid| {
        std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c.starts_with(b"sleep\0"))
    })
}
