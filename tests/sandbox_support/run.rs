//! Runs a real process with a deadline and keeps everything needed to explain a failure.
//!
//! [`Runner`] is a small builder over `std::process::Command` (own process group, stdin closed,
//! stdout/stderr captured on threads); [`Run`] is the outcome, whose `Display` prints the
//! command, cwd, status, stdout and stderr — what a failing assertion shows.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// The `zeroclaw` binary under test.
pub fn zeroclaw() -> &'static str {
    env!("CARGO_BIN_EXE_zeroclaw")
}

/// `argv` run as `nobody` (uid and gid 65534, no groups, a reset environment) from `cwd`,
/// through setpriv (which needs root).
pub fn as_nobody<S: AsRef<OsStr>>(cwd: &Path, argv: impl IntoIterator<Item = S>) -> Run {
    Runner::new("setpriv", cwd)
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--reset-env",
        ])
        .args(argv)
        .run()
}

/// A command about to run.
pub struct Runner {
    program: OsString,
    args: Vec<OsString>,
    envs: Vec<(OsString, OsString)>,
    cwd: PathBuf,
    deadline: Duration,
}

impl Runner {
    /// `program` run from `cwd` with the test's own environment, a 120 s safety deadline.
    pub fn new(program: impl AsRef<OsStr>, cwd: &Path) -> Self {
        Runner {
            program: program.as_ref().to_owned(),
            args: Vec::new(),
            envs: Vec::new(),
            cwd: cwd.to_owned(),
            deadline: Duration::from_secs(120),
        }
    }

    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.envs
            .push((key.as_ref().to_owned(), value.as_ref().to_owned()));
        self
    }

    /// After this long the whole process group is killed and the run marked `timed_out`.
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }

    /// Runs to completion (or to the deadline) and captures everything.
    pub fn run(self) -> Run {
        let display = self.display();
        let started = Instant::now();
        let mut child = self
            .command()
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {display}: {e}"));
        let stdout = drain(child.stdout.take().expect("piped stdout"));
        let stderr = drain(child.stderr.take().expect("piped stderr"));
        let (status, timed_out) = wait_with_deadline(&mut child, self.deadline);
        Run {
            command: display,
            cwd: self.cwd,
            status,
            timed_out,
            elapsed: started.elapsed(),
            stdout: join(stdout),
            stderr: join(stderr),
        }
    }

    fn command(&self) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.args)
            .envs(self.envs.iter().map(|(k, v)| (k, v)))
            .current_dir(&self.cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        cmd
    }

    fn display(&self) -> String {
        let envs = self
            .envs
            .iter()
            .map(|(k, v)| format!("{}={:?} ", k.display(), v));
        let args = self.args.iter().map(|a| format!(" {a:?}"));
        format!(
            "{}{:?}{}",
            envs.collect::<String>(),
            self.program,
            args.collect::<String>()
        )
    }
}

/// Collects a pipe on a thread into a shared buffer.
struct Drain {
    buf: Arc<Mutex<Vec<u8>>>,
    done: JoinHandle<()>,
}

fn drain(mut pipe: impl Read + Send + 'static) -> Drain {
    let buf = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&buf);
    let done = thread::spawn(move || {
        let mut chunk = [0u8; 65536];
        while let Ok(n @ 1..) = pipe.read(&mut chunk) {
            sink.lock()
                .expect("drain buffer")
                .extend_from_slice(&chunk[..n]);
        }
    });
    Drain { buf, done }
}

/// What the pipe carried. When something still holds it open 10 s after the process ended
/// (a descendant that escaped the sandbox's clean-up), returns what arrived so far, marked.
fn join(drain: Drain) -> String {
    let end = Instant::now() + Duration::from_secs(10);
    while !drain.done.is_finished() && Instant::now() < end {
        thread::sleep(Duration::from_millis(5));
    }
    let text = String::from_utf8_lossy(&drain.buf.lock().expect("drain buffer")).into_owned();
    if drain.done.is_finished() {
        text
    } else {
        format!("{text}\n[harness: the pipe is still open: some descendant outlived the command]")
    }
}

fn wait_with_deadline(child: &mut Child, deadline: Duration) -> (ExitStatus, bool) {
    let end = Instant::now() + deadline;
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return (status, false);
        }
        if Instant::now() >= end {
            kill_group(child.id());
            return (child.wait().expect("wait after kill"), true);
        }
        thread::sleep(Duration::from_millis(5));
    }
}

/// SIGKILLs the process group `pgid` (our runner makes every child a group leader).
pub fn kill_group(pgid: u32) {
    let pgid = nix::unistd::Pid::from_raw(pgid as i32);
    let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL);
}

/// What happened when a command ran.
pub struct Run {
    pub command: String,
    pub cwd: PathBuf,
    pub status: ExitStatus,
    pub timed_out: bool,
    pub elapsed: Duration,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// The exit code, `None` when killed by a signal.
    pub fn status_code(&self) -> Option<i32> {
        self.status.code()
    }

    /// stdout and stderr together, for "the canary never appears" checks.
    pub fn output(&self) -> String {
        format!("{}\n{}", self.stdout, self.stderr)
    }

    /// Whether stdout or stderr contains `needle`.
    pub fn shows(&self, needle: &str) -> bool {
        self.stdout.contains(needle) || self.stderr.contains(needle)
    }

    /// Asserts the script printed `marker` on stdout: the attack was really attempted.
    pub fn assert_reached(&self, marker: &str) -> &Self {
        assert!(
            self.stdout.contains(marker),
            "the script never reached its attack (marker {marker:?} missing)\n{self}"
        );
        self
    }
}

impl fmt::Display for Run {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "--- command: {}", self.command)?;
        writeln!(f, "--- cwd: {}", self.cwd.display())?;
        let signal = self.status.signal();
        writeln!(
            f,
            "--- status: {:?} (signal {signal:?}, timed out: {}, {:?})",
            self.status.code(),
            self.timed_out,
            self.elapsed
        )?;
        writeln!(
            f,
            "--- stdout ({} bytes):\n{}",
            self.stdout.len(),
            clip(&self.stdout)
        )?;
        write!(
            f,
            "--- stderr ({} bytes):\n{}",
            self.stderr.len(),
            clip(&self.stderr)
        )
    }
}

fn clip(text: &str) -> &str {
    const MAX: usize = 8000;
    match text.char_indices().nth(MAX) {
        Some((i, _)) => &text[..i],
        None => text,
    }
}
