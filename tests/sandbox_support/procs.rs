//! Processes the tests start outside the sandbox, and the search for ones that should be gone.
//!
//! [`Bg`] owns a background child (its own process group) and kills and reaps it on drop, so a
//! failing test leaves nothing running. [`survivors`] lists processes whose command line
//! carries a unique marker; [`Reaper`] kills such leftovers when a test ends.

use std::ffi::OsString;
use std::fs;
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread;
use std::time::{Duration, Instant};

use super::PYTHON;
use super::run::kill_group;

/// A background process started by the test, killed and reaped on drop.
pub struct Bg {
    child: Child,
    lines: Receiver<String>,
}

impl Bg {
    /// Starts `argv` with piped stdout, extra env vars, in its own process group.
    pub fn spawn(argv: &[&str], envs: &[(&str, &str)]) -> Bg {
        let argv: Vec<OsString> = argv.iter().map(OsString::from).collect();
        let envs: Vec<(OsString, OsString)> =
            envs.iter().map(|(k, v)| (k.into(), v.into())).collect();
        Bg::spawn_in(&argv, &envs, Path::new("."))
    }

    /// Starts `argv` from `cwd` with piped stdout and extra env vars, in its own group.
    pub fn spawn_in(argv: &[OsString], envs: &[(OsString, OsString)], cwd: &Path) -> Bg {
        let mut child = Command::new(&argv[0])
            .args(&argv[1..])
            .envs(envs.iter().map(|(k, v)| (k, v)))
            .current_dir(cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {argv:?}: {e}"));
        let (tx, lines) = mpsc::channel();
        if let Some(out) = child.stdout.take() {
            thread::spawn(move || forward_lines(out, tx));
        }
        Bg { child, lines }
    }

    /// `sleep 600`, the "outside process" of the signal tests.
    pub fn sleeper() -> Bg {
        Bg::spawn(&["sleep", "600"], &[])
    }

    /// A stand-in for the daemon: a Python process holding `secret` in its memory, its
    /// environment (`ZC_DAEMON_SECRET`) and its command line. Returns it with the address of
    /// the in-memory copy once it is ready.
    pub fn secret_holder(secret: &str) -> (Bg, u64) {
        let script = "import ctypes, sys, time\n\
             buf = ctypes.create_string_buffer(sys.argv[1].encode())\n\
             print(ctypes.addressof(buf), flush=True)\n\
             time.sleep(600)\n";
        let mut bg = Bg::spawn(
            &[PYTHON, "-c", script, secret],
            &[("ZC_DAEMON_SECRET", secret)],
        );
        let line = bg.read_line();
        let addr = line
            .trim()
            .parse()
            .unwrap_or_else(|e| panic!("holder said {line:?}: {e}"));
        (bg, addr)
    }

    /// Sends `signal` (a `kill -s` name such as `KILL` or `TERM`) to the process alone.
    pub fn signal(&self, signal: &str) {
        let _ = Command::new("kill")
            .args(["-s", signal, &self.child.id().to_string()])
            .status();
    }

    /// Waits for the process to end by itself; `None` if it is still running after `limit`.
    pub fn wait_for_exit(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let end = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return Some(status);
            }
            if Instant::now() >= end {
                return None;
            }
            thread::sleep(Duration::from_millis(10));
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether the process is still running (not exited, not killed).
    pub fn alive(&mut self) -> bool {
        self.child.try_wait().expect("try_wait").is_none()
    }

    /// Whether the process is still running a moment after a signal may have been sent:
    /// polls for up to a second, returning `false` as soon as it is gone.
    pub fn alive_after_grace(&mut self) -> bool {
        let end = Instant::now() + Duration::from_secs(1);
        while Instant::now() < end {
            if !self.alive() {
                return false;
            }
            thread::sleep(Duration::from_millis(10));
        }
        self.alive()
    }

    /// The next line the process printed; empty at end of output or after 60 s of silence
    /// (so a hung sandbox fails the test instead of hanging it).
    pub fn read_line(&mut self) -> String {
        self.lines
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_default()
    }
}

impl Drop for Bg {
    fn drop(&mut self) {
        kill_group(self.child.id());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn forward_lines(out: ChildStdout, tx: Sender<String>) {
    for line in BufReader::new(out).lines() {
        let Ok(line) = line else { return };
        if tx.send(line + "\n").is_err() {
            return;
        }
    }
}

/// PIDs of live processes whose command line contains `marker` (zombies have none).
pub fn survivors(marker: &str) -> Vec<u32> {
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    let own = std::process::id();
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != own)
        .filter(|pid| {
            fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(marker))
        })
        .collect()
}

/// Survivors of `marker` still there after a short grace for the kernel to finish reaping.
pub fn survivors_after_grace(marker: &str) -> Vec<u32> {
    let end = Instant::now() + Duration::from_secs(2);
    loop {
        let left = survivors(marker);
        if left.is_empty() || Instant::now() >= end {
            return left;
        }
        thread::sleep(Duration::from_millis(20));
    }
}

/// Kills every process carrying its marker when dropped (after positive controls that leave
/// daemons behind on purpose, or a failed test).
pub struct Reaper(pub String);

impl Drop for Reaper {
    /// Kills until nothing carrying the marker is left (a pid-hopping process needs several
    /// passes), for at most two seconds. Our own processes carrying it — a `sandbox run` CLI
    /// and the helper it forked, which has the CLI's command line — are killed last, after a
    /// grace to end by themselves once the rest is gone: a helper killed in the middle of its
    /// clean-up would leave its scratch directory behind.
    fn drop(&mut self) {
        let start = Instant::now();
        let (grace, end) = (Duration::from_secs(1), Duration::from_secs(2));
        while start.elapsed() < end {
            let (ours, confined): (Vec<u32>, Vec<u32>) = survivors(&self.0)
                .into_iter()
                .partition(|pid| is_zeroclaw(*pid));
            if ours.is_empty() && confined.is_empty() {
                return;
            }
            let targets = if confined.is_empty() && start.elapsed() >= grace {
                ours
            } else {
                confined
            };
            for pid in targets {
                kill_with_group(pid);
            }
            thread::sleep(Duration::from_millis(5));
        }
    }
}

/// SIGKILLs `pid` and its process group: a process that forks and exits to change its pid
/// keeps its group, and a signal to the group also reaches a child forked meanwhile. Not a
/// group of the test's own or led by one of our binaries (a helper cut short in its clean-up
/// would leave its scratch directory behind).
fn kill_with_group(pid: u32) {
    use nix::unistd::{Pid, getpgid, getpgrp};
    let group = getpgid(Some(Pid::from_raw(pid as i32)));
    let _ = nix::sys::signal::kill(Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGKILL);
    if let Ok(group) = group
        && group.as_raw() > 1
        && group != getpgrp()
        && !is_zeroclaw(group.as_raw() as u32)
    {
        kill_group(group.as_raw() as u32);
    }
}

/// Whether `pid` runs one of our binaries (`zeroclaw`, `zeroclaw-sandbox-helper`).
fn is_zeroclaw(pid: u32) -> bool {
    fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|exe| {
        exe.file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("zeroclaw"))
    })
}
