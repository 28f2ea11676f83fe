//! The daemon side: [`Sandbox`] has its zygote ([`crate::spawner`]) fork a helper with piped
//! stdio, hands it the plan, waits for its "confined" report ([`Confined`]), streams output
//! with a cap, and kills the whole tree on timeout, cancellation, output overflow or drop.

use std::ffi::OsString;
use std::future::Future;
use std::io::Write;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;

use nix::sys::signal::Signal;
use nix::unistd::Pid;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader};

use crate::backend::Backend;
use crate::error::{SandboxError, SetupError, Stage};
use crate::planner::Planner;
use crate::profile::Profile;
use crate::wire::{Enforcement, ExitInfo, Message};

/// Which stream a chunk of output came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// The command's stdout.
    Stdout,
    /// The command's stderr.
    Stderr,
}

/// Why the command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// It exited (or died) on its own.
    Exited,
    /// The wall-time limit killed the tree.
    TimedOut,
    /// The caller cancelled; the tree was killed.
    Cancelled,
    /// The output limit was reached; the tree was killed.
    OutputLimit,
}

/// The result of one confined execution.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Exit code or signal of the command.
    pub exit: ExitInfo,
    /// Why it ended.
    pub end: End,
    /// stdout kept (within the output limit).
    pub stdout: Vec<u8>,
    /// stderr kept (within the output limit).
    pub stderr: Vec<u8>,
    /// Output was cut at the limit.
    pub truncated: bool,
    /// What was enforced.
    pub enforcement: Enforcement,
}

impl Outcome {
    /// The exit code a shell would report (128 + signal for signal deaths).
    pub fn shell_code(&self) -> i32 {
        match self.exit {
            ExitInfo::Code(c) => c,
            ExitInfo::Signal(s) => 128 + s,
        }
    }
}

/// The daemon side's half of a [`crate::Sandbox`]: how a call is planned, the helper
/// executable, its zygote and the warm helpers.
#[derive(Debug, Clone)]
pub(crate) struct Launcher {
    pub(crate) planner: Planner,
    helper: PathBuf,
    spawner: crate::spawner::Spawner,
    warm: crate::warm::Pool,
}

impl Launcher {
    /// A launcher for `helper`, with no zygote or warm helper yet.
    pub(crate) fn new(planner: Planner, helper: PathBuf) -> Launcher {
        Launcher {
            planner,
            helper,
            spawner: crate::spawner::Spawner::default(),
            warm: crate::warm::Pool::default(),
        }
    }

    /// Starts the call; returns once the helper reports the confinement complete.
    pub(crate) async fn start(
        &self,
        profile: &Profile,
        argv: Vec<OsString>,
        op: Option<String>,
    ) -> Result<Confined, SandboxError> {
        let mut plan = self.planner.plan(profile, argv, op)?;
        let bound = crate::egress_launch::bind_on_host(&mut plan)?;
        let json = serde_json::to_vec(&plan).map_err(|e| SandboxError::Profile(e.to_string()))?;
        // A proxy call's listeners come back over its plan socket: always a cold helper.
        if self.planner.backend == Backend::Namespaces
            && plan.egress.is_none()
            && let Some(confined) = self.start_warm(profile, &plan, &json).await?
        {
            return Ok(confined);
        }
        let egress = bound.map(crate::egress_launch::Pending::Bound);
        let channel = plan.egress.is_some() && egress.is_none();
        self.start_cold(profile, &json, channel, egress).await
    }

    /// Hands the call to a helper prepared for its shape ([`crate::warm`]), if there is one
    /// and it is still fresh; `None`: start cold.
    async fn start_warm(
        &self,
        profile: &Profile,
        plan: &crate::plan::Plan,
        json: &[u8],
    ) -> Result<Option<Confined>, SandboxError> {
        let Some(warm) = self.warm.take(plan).await else {
            return Ok(None);
        };
        let (stdin_r, stdin) = pipe()?;
        let (stdout, stdout_w) = pipe()?;
        let (stderr, stderr_w) = pipe()?;
        let stdio = [&stdin_r, &stdout_w, &stderr_w].map(|fd| fd.as_raw_fd());
        // Stale or gone: it is told to end.
        let Some(taken) = warm.hand_over(plan, json, stdio) else {
            return Ok(None);
        };
        drop((stdin_r, stdout_w, stderr_w));
        let started = Started {
            stdin,
            stdout,
            stderr,
            forked: taken.forked,
            report: taken.report,
            lifeline: taken.lifeline,
            egress: None,
        };
        match self.confirm(profile, started).await {
            Ok(confined) => Ok(Some(confined)),
            // Nothing of the call ran (the command starts only after "ready"): a helper that
            // died waiting, say with its zygote, costs a cold start.
            Err(e) => {
                tracing::debug!("warm helper failed, starting cold: {e}");
                Ok(None)
            }
        }
    }

    /// Has the zygote fork a helper for the call and hands it the plan.
    async fn start_cold(
        &self,
        profile: &Profile,
        json: &[u8],
        channel: bool,
        bound: Option<crate::egress_launch::Pending>,
    ) -> Result<Confined, SandboxError> {
        let pipes = HelperPipes::new(channel)?;
        let forked = self.spawner.fork(&self.helper, &pipes.child_ends())?;
        let HelperPipes {
            stdin,
            stdout,
            stderr,
            plan: plan_w,
            report,
            lifeline,
            child,
        } = pipes;
        drop(child); // the helper's ends live on in the helper only
        // The helper reads the whole plan first; if it died, the write fails (EPIPE).
        let mut plan_w = std::fs::File::from(plan_w);
        let _ = plan_w.write_all(json);
        let egress = if channel {
            let channel = OwnedFd::from(plan_w);
            crate::egress_launch::plan_sent(&channel);
            Some(crate::egress_launch::Pending::Channel(channel))
        } else {
            drop(plan_w); // end of file: the helper reads the plan to its end
            bound
        };
        let started = Started {
            stdin,
            stdout,
            stderr,
            forked,
            report,
            lifeline,
            egress,
        };
        self.confirm(profile, started).await
    }

    /// Waits for the helper's "confined" report and returns the running command.
    async fn confirm(&self, profile: &Profile, started: Started) -> Result<Confined, SandboxError> {
        let Started {
            stdin,
            stdout,
            stderr,
            forked,
            report,
            lifeline,
            egress,
        } = started;
        let mut reports = Reports::new(report)?;
        let stdout = tokio::net::unix::pipe::Receiver::from_owned_fd(stdout)?;
        let stderr = tokio::net::unix::pipe::Receiver::from_owned_fd(stderr)?;
        let mut first = reports.next().await;
        while let Some(Message::Prepared(_)) = first {
            first = reports.next().await;
        }
        match first {
            Some(Message::Ready(enforcement)) => Ok(Confined {
                egress: egress
                    .map(crate::egress_launch::Pending::listeners)
                    .transpose()?,
                stdin: Some(tokio::net::unix::pipe::Sender::from_owned_fd(stdin)?),
                stdout: Some(stdout),
                stderr: Some(stderr),
                pid: forked.pid,
                pidfd: forked.pidfd,
                backend: self.planner.backend,
                limits: profile.limits.clone(),
                reports,
                enforcement,
                done: false,
                _lifeline: lifeline,
                refill: (self.planner.backend == Backend::Namespaces
                    && profile.network != crate::profile::Network::Proxy)
                    .then(|| Refill {
                        launcher: self.clone(),
                        profile: profile.clone(),
                    }),
            }),
            Some(Message::Failed(e)) => Err(e.into()),
            other => {
                let ended = match other {
                    Some(Message::Ended(info)) => format!("{info:?}"),
                    _ => "without a word".to_string(),
                };
                let mut text = String::new();
                let _ = stderr.take(4096).read_to_string(&mut text).await;
                let stage = if self.planner.backend == Backend::Bubblewrap {
                    Stage::Bubblewrap
                } else {
                    Stage::Spawn
                };
                let call = format!(
                    "helper {} ended ({ended}) before reporting: {}",
                    self.helper.display(),
                    text.trim()
                );
                Err(SetupError::new(stage, call)
                    .hint("a helper binary must call zeroclaw_sandbox::helper::run_if_helper() first in main; \
                           for bubblewrap, its message is quoted above")
                    .into())
            }
        }
    }
}

/// A helper that has its plan: our ends of its pipes.
struct Started {
    stdin: OwnedFd,
    stdout: OwnedFd,
    stderr: OwnedFd,
    forked: crate::spawner::Forked,
    report: OwnedFd,
    lifeline: OwnedFd,
    /// A proxy call's listeners: its plan socket, which brings them back, or the ones we
    /// bound on the host's loopback.
    egress: Option<crate::egress_launch::Pending>,
}

/// A pipe, (read end, write end), both close-on-exec.
fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(std::io::Error::from)
}

/// What a finished namespace-backend call leaves behind: the shape of the next one, for a
/// warm helper ([`crate::warm`]).
struct Refill {
    launcher: Launcher,
    profile: Profile,
}

/// The six pipes of one execution: our ends, and the helper's (in the zygote's order: stdin,
/// stdout, stderr, plan, report, lifeline), which close here once the zygote has them.
struct HelperPipes {
    stdin: OwnedFd,
    stdout: OwnedFd,
    stderr: OwnedFd,
    plan: OwnedFd,
    report: OwnedFd,
    lifeline: OwnedFd,
    child: [OwnedFd; 6],
}

impl HelperPipes {
    /// `egress`: the plan channel is a socket pair (`crate::egress_launch`).
    fn new(egress: bool) -> Result<Self, SandboxError> {
        let pipe =
            || nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(std::io::Error::from);
        let (in_r, in_w) = pipe()?;
        let (out_r, out_w) = pipe()?;
        let (err_r, err_w) = pipe()?;
        let (plan_w, plan_r) = if egress {
            crate::egress_launch::plan_channel()?
        } else {
            let (r, w) = pipe()?;
            (w, r)
        };
        let (rep_r, rep_w) = pipe()?;
        let (life_r, life_w) = pipe()?;
        Ok(HelperPipes {
            stdin: in_w,
            stdout: out_r,
            stderr: err_r,
            plan: plan_w,
            report: rep_r,
            lifeline: life_w,
            child: [in_r, out_w, err_w, plan_r, rep_w, life_r],
        })
    }

    fn child_ends(&self) -> [std::os::fd::RawFd; 6] {
        self.child.each_ref().map(|fd| fd.as_raw_fd())
    }
}

/// The helper's report lines.
struct Reports {
    reader: BufReader<tokio::net::unix::pipe::Receiver>,
    done: bool,
}

impl Reports {
    fn new(fd: OwnedFd) -> std::io::Result<Self> {
        let rx = tokio::net::unix::pipe::Receiver::from_owned_fd(fd)?;
        Ok(Reports {
            reader: BufReader::new(rx),
            done: false,
        })
    }

    /// The next message; `None` at EOF (the helper and all its stages are gone).
    async fn next(&mut self) -> Option<Message> {
        let mut line = String::new();
        while !self.done {
            line.clear();
            match self.reader.read_line(&mut line).await {
                Ok(0) | Err(_) => self.done = true,
                Ok(_) => {
                    if let Some(m) = Message::decode(line.as_bytes()) {
                        return Some(m);
                    }
                }
            }
        }
        None
    }
}

/// A running confined command.
pub struct Confined {
    /// The command's stdin (take it to write, drop it to close).
    pub stdin: Option<tokio::net::unix::pipe::Sender>,
    stdout: Option<tokio::net::unix::pipe::Receiver>,
    stderr: Option<tokio::net::unix::pipe::Receiver>,
    pid: i32,
    /// The helper's pidfd: signals reach it and never a recycled pid.
    pidfd: OwnedFd,
    backend: Backend,
    limits: crate::profile::Limits,
    reports: Reports,
    enforcement: Enforcement,
    done: bool,
    /// While open, the helper keeps the command alive; closing it (drop) kills the tree.
    _lifeline: OwnedFd,
    /// Set for the namespace backend: once the call ended cleanly, prepare the next.
    refill: Option<Refill>,
    /// A proxy call's listeners, until taken ([`Confined::take_egress`]).
    egress: Option<crate::egress_launch::EgressListeners>,
}

/// Output collected so far.
#[derive(Default)]
struct Collected {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    truncated: bool,
}

impl Collected {
    /// Keeps what fits under `cap`; returns false once the cap is exceeded.
    fn keep(&mut self, stream: Stream, chunk: &[u8], cap: u64) -> (bool, usize) {
        let used = (self.stdout.len() + self.stderr.len()) as u64;
        let room = cap.saturating_sub(used) as usize;
        let n = chunk.len().min(room);
        match stream {
            Stream::Stdout => self.stdout.extend_from_slice(&chunk[..n]),
            Stream::Stderr => self.stderr.extend_from_slice(&chunk[..n]),
        }
        if n < chunk.len() {
            self.truncated = true;
        }
        (n == chunk.len(), n)
    }
}

async fn read_some<R: AsyncRead + Unpin>(r: &mut Option<R>, buf: &mut [u8]) -> usize {
    match r {
        Some(r) => r.read(buf).await.unwrap_or(0),
        None => std::future::pending().await,
    }
}

impl Confined {
    /// A `network = proxy` call's listeners inside its network namespace (once): the caller
    /// serves the egress proxy on them for the life of the call.
    pub fn take_egress(&mut self) -> Option<crate::egress_launch::EgressListeners> {
        self.egress.take()
    }

    /// What the helper enforced.
    pub fn enforcement(&self) -> &Enforcement {
        &self.enforcement
    }

    /// The helper's pid (the root of the confined tree, outside any namespace).
    pub fn id(&self) -> u32 {
        self.pid as u32
    }

    /// Takes the command's stdin.
    pub fn take_stdin(&mut self) -> Option<tokio::net::unix::pipe::Sender> {
        self.stdin.take()
    }

    /// Hook for long-lived servers (an MCP server speaking over its stdio): takes the
    /// command's stdout and stderr as raw pipes. [`Confined::wait`] then neither reads nor
    /// keeps them (no output cap applies to them), and still kills the tree on its deadline,
    /// on `cancel` and on drop.
    pub fn take_output(
        &mut self,
    ) -> (
        Option<tokio::net::unix::pipe::Receiver>,
        Option<tokio::net::unix::pipe::Receiver>,
    ) {
        (self.stdout.take(), self.stderr.take())
    }

    /// Streams output to `on_output` (within the output limit) until the command ends; kills
    /// the whole tree on timeout, when `cancel` completes, or when the output limit is hit.
    pub async fn wait(
        mut self,
        mut on_output: impl FnMut(Stream, &[u8]),
        cancel: impl Future<Output = ()>,
    ) -> Result<Outcome, SandboxError> {
        let deadline = tokio::time::sleep(self.limits.wall_time);
        tokio::pin!(deadline, cancel);
        let (mut out, mut err) = (self.stdout.take(), self.stderr.take());
        let (mut obuf, mut ebuf) = (vec![0u8; 32 * 1024], vec![0u8; 32 * 1024]);
        let mut kept = Collected::default();
        let (mut end, mut status, mut exit_msg, mut failed) = (End::Exited, None, None, None);
        let cap = self.limits.output_bytes;
        // On the namespace backend the pid namespace's init reports the end first, and its
        // helper, which may still scrub the workspace from outside, once it is done: the call
        // has ended when both have (or the pipe is closed), so that nothing of it changes the
        // workspace after we return.
        let ends_needed = if self.backend == Backend::Namespaces {
            2
        } else {
            1
        };
        let (mut ends, mut past_deadline) = (0, false);
        loop {
            // `status`: the helper ended (the zygote reaped it) — so did everything it started.
            let streams_done = out.is_none() && err.is_none();
            let helper_done = ends >= ends_needed || self.reports.done || past_deadline;
            if status.is_some() && (streams_done || end != End::Exited) && helper_done {
                break;
            }
            tokio::select! {
                n = read_some(&mut out, &mut obuf) => {
                    if n == 0 { out = None; continue; }
                    let (all, k) = kept.keep(Stream::Stdout, &obuf[..n], cap);
                    on_output(Stream::Stdout, &obuf[..k]);
                    if !all && end == End::Exited { end = End::OutputLimit; self.kill_tree(status.is_none()); }
                }
                n = read_some(&mut err, &mut ebuf) => {
                    if n == 0 { err = None; continue; }
                    let (all, k) = kept.keep(Stream::Stderr, &ebuf[..n], cap);
                    on_output(Stream::Stderr, &ebuf[..k]);
                    if !all && end == End::Exited { end = End::OutputLimit; self.kill_tree(status.is_none()); }
                }
                m = self.reports.next(), if !self.reports.done => match m {
                    Some(Message::Exited(info)) => exit_msg = Some(info),
                    Some(Message::Failed(e)) => failed = Some(e),
                    Some(Message::Ended(info)) => { ends += 1; status.get_or_insert(info); }
                    // Git hook: validation's refusals, logged and told as stderr (see `crate::git::stage`).
                    Some(Message::Git(lines)) => {
                        let text = crate::git::stage::logged_text(&lines);
                        let (_, k) = kept.keep(Stream::Stderr, &text, cap);
                        on_output(Stream::Stderr, &text[..k]);
                    }
                    Some(Message::Ready(_) | Message::Prepared(_)) => {}
                    // End of file without a word from the zygote: it died; the helper is gone.
                    None => { status.get_or_insert(ExitInfo::Code(crate::wire::SETUP_FAILED)); }
                },
                _ = &mut deadline, if end == End::Exited || status.is_some() => {
                    if status.is_some() { out = None; err = None; past_deadline = true; continue; }
                    end = End::TimedOut;
                    self.kill_tree(true);
                }
                _ = &mut cancel, if end == End::Exited => { end = End::Cancelled; self.kill_tree(status.is_none()); }
            }
        }
        self.done = true;
        if let Some(e) = failed {
            return Err(e.into());
        }
        // The helper has been reaped, so its whole tree is gone: no confined process is
        // left to race the next call's preparation.
        if let (Some(r), End::Exited, true) = (self.refill.take(), end, status.is_some()) {
            let Refill { launcher, profile } = r;
            let (pool, spawner, helper) = (
                launcher.warm.clone(),
                launcher.spawner.clone(),
                launcher.helper.clone(),
            );
            pool.refill(&spawner, &helper, move || {
                launcher.planner.plan(&profile, Vec::new(), None).ok()
            });
        }
        let exit = exit_msg
            .or(status)
            .unwrap_or(ExitInfo::Code(crate::wire::SETUP_FAILED));
        Ok(Outcome {
            exit,
            end,
            stdout: kept.stdout,
            stderr: kept.stderr,
            truncated: kept.truncated,
            enforcement: std::mem::take(&mut self.enforcement),
        })
    }

    /// Kills the confined tree: the helper gets SIGTERM, kills every descendant (the pid
    /// namespace's init, or each process under its subreaper) and exits once all are reaped,
    /// so the helper's exit means nothing is left.
    fn kill_tree(&self, alive: bool) {
        if !alive {
            return;
        }
        kill_tree(self.backend, self.pid, Some(&self.pidfd));
    }
}

/// Kills the tree of the helper `pid`: SIGTERM asks a supervising helper to kill and reap
/// every descendant before it exits, sent through its pidfd (so never to a process that
/// reused the pid); `None` only before one exists, when `pid` is our own unreaped child, which
/// no other process can have. The exec-only backends are killed as a process group (`killpg`:
/// a pidfd reaches one process only); their helper leads the group and is our unreaped child
/// too, so the group id cannot have been reused.
pub(crate) fn kill_tree(backend: Backend, pid: i32, pidfd: Option<&OwnedFd>) {
    if pid <= 0 {
        return;
    }
    match (backend, pidfd) {
        (Backend::None | Backend::Seatbelt, _) => {
            let _ = nix::sys::signal::killpg(Pid::from_raw(pid), Signal::SIGKILL);
        }
        (_, Some(pidfd)) => {
            let _ = crate::sys::pidfd_signal(pidfd, libc::SIGTERM);
        }
        (_, None) => {
            let _ = nix::sys::signal::kill(Pid::from_raw(pid), Signal::SIGTERM);
        }
    }
}

impl Drop for Confined {
    fn drop(&mut self) {
        if !self.done {
            // Through the pidfd: harmless if the helper has already ended.
            self.kill_tree(true);
        }
    }
}
