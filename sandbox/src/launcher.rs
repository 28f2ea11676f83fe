//! The daemon side: [`Sandbox`] has its zygote ([`crate::spawner`]) fork a helper with piped
//! stdio, hands it the plan, waits for its "confined" report ([`Confined`]), then drives the
//! call's [`Supervisor`] from an async loop: it reads the pipes, the deadline and the
//! cancellation, and does what the supervisor answers (pass output on, kill the whole tree);
//! dropping a [`Confined`] kills the tree too.

use std::ffi::OsString;
use std::future::Future;
use std::io::Write;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;

use tokio::io::{AsyncRead, AsyncReadExt};

use crate::backend::Backend;
use crate::error::SandboxError;
use crate::plan::planner::Planner;
use crate::profile::Profile;
use crate::restart::Restarts;
use crate::supervise::{Config, Event, Kill, Reaper, Reply, Start, Supervisor};
pub use crate::supervise::{End, Outcome, Stream};
use crate::wire::Enforcement;

/// The daemon side's half of a [`crate::Sandbox`]: how a call is planned, the helper
/// executable, its zygote and the warm helpers.
#[derive(Debug, Clone)]
pub(crate) struct Launcher {
    pub(crate) planner: Planner,
    helper: PathBuf,
    spawner: crate::spawner::Spawner,
    warm: crate::warm::Pool,
    /// A call returns only once its helper has exited ([`crate::Sandbox::settling`]).
    pub(crate) settle: bool,
}

impl Launcher {
    /// A launcher for `helper`, with no zygote or warm helper yet.
    pub(crate) fn new(planner: Planner, helper: PathBuf) -> Launcher {
        Launcher {
            planner,
            helper,
            spawner: crate::spawner::Spawner::default(),
            warm: crate::warm::Pool::default(),
            settle: false,
        }
    }

    /// The same planner and settling with another helper: a zygote of its own, no warm
    /// helpers yet.
    pub(crate) fn for_helper(&self, helper: PathBuf) -> Launcher {
        Launcher {
            settle: self.settle,
            ..Launcher::new(self.planner.clone(), helper)
        }
    }

    /// Starts the call; returns once the helper reports the confinement complete. A start
    /// whose setup failed because the host changed meanwhile is planned and made again
    /// ([`Restarts`]).
    pub(crate) async fn start(
        &self,
        profile: &Profile,
        argv: Vec<OsString>,
        op: Option<String>,
    ) -> Result<Confined, SandboxError> {
        let mut restarts = Restarts::new();
        loop {
            let plan = self.planner.plan(profile, argv.clone(), op.clone())?;
            match self.start_once(profile, plan).await {
                Err(e) if restarts.again(&e) => {}
                started => return started,
            }
        }
    }

    async fn start_once(
        &self,
        profile: &Profile,
        mut plan: crate::plan::Plan,
    ) -> Result<Confined, SandboxError> {
        let bound = crate::egress::launch::bind_on_host(&mut plan)?;
        let json = serde_json::to_vec(&plan).map_err(|e| SandboxError::Profile(e.to_string()))?;
        // A proxy call's listeners come back over its plan socket: always a cold helper.
        if self.planner.backend == Backend::Namespaces
            && plan.egress.ports.is_none()
            && let Some(confined) = self.start_warm(profile, &plan, &json).await?
        {
            return Ok(confined);
        }
        let egress = bound.map(crate::egress::launch::Pending::Bound);
        let channel = plan.egress.ports.is_some() && egress.is_none();
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
        bound: Option<crate::egress::launch::Pending>,
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
            crate::egress::launch::plan_sent(&channel);
            Some(crate::egress::launch::Pending::Channel(channel))
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
        let backend = self.planner.backend;
        let mut supervisor = Supervisor::new(Config {
            cap: profile.limits.output_bytes,
            keep: true,
            // Settling: every report up to the zygote's word on the helper's exit.
            settle: self.settle,
            reaper: Reaper::Zygote,
            helper: crate::error::HelperNames::of(backend),
        });
        let mut report = tokio::net::unix::pipe::Receiver::from_owned_fd(report)?;
        let stdout = tokio::net::unix::pipe::Receiver::from_owned_fd(stdout)?;
        let stderr = tokio::net::unix::pipe::Receiver::from_owned_fd(stderr)?;
        // Told before the command ran (git refusals come later; kept all the same).
        let mut told = Vec::new();
        let mut buf = vec![0u8; 4096];
        loop {
            match supervisor.start() {
                Start::Waiting => {
                    let n = report.read(&mut buf).await.unwrap_or(0);
                    let event = match n {
                        0 => Event::ReportClosed,
                        n => Event::Report(&buf[..n]),
                    };
                    if let Some((_, text)) = supervisor.feed(event).forward {
                        told.extend_from_slice(&text);
                    }
                }
                Start::Ready => break,
                Start::Failed => return Err(supervisor.not_started(None, None)),
                Start::Gone => {
                    let mut text = String::new();
                    let _ = stderr.take(4096).read_to_string(&mut text).await;
                    return Err(supervisor.not_started(Some(&self.helper), Some(text.trim())));
                }
            }
        }
        Ok(Confined {
            egress: egress
                .map(crate::egress::launch::Pending::listeners)
                .transpose()?,
            stdin: Some(tokio::net::unix::pipe::Sender::from_owned_fd(stdin)?),
            stdout: Some(stdout),
            stderr: Some(stderr),
            pid: forked.pid,
            pidfd: forked.pidfd,
            kill: Kill::for_helper(backend),
            wall_time: profile.limits.wall_time,
            enforcement: supervisor.enforcement().cloned().unwrap_or_default(),
            supervisor,
            report,
            told,
            done: false,
            _lifeline: lifeline,
            refill: (backend == Backend::Namespaces
                && profile.network != crate::profile::Network::Proxy)
                .then(|| Refill {
                    launcher: self.clone(),
                    profile: profile.clone(),
                }),
        })
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
    egress: Option<crate::egress::launch::Pending>,
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
    /// `egress`: the plan channel is a socket pair (`crate::egress::launch`).
    fn new(egress: bool) -> Result<Self, SandboxError> {
        let pipe =
            || nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(std::io::Error::from);
        let (in_r, in_w) = pipe()?;
        let (out_r, out_w) = pipe()?;
        let (err_r, err_w) = pipe()?;
        let (plan_w, plan_r) = if egress {
            crate::egress::launch::plan_channel()?
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

/// A running confined command: the daemon's driver of its [`Supervisor`].
pub struct Confined {
    /// The command's stdin (take it to write, drop it to close).
    pub stdin: Option<tokio::net::unix::pipe::Sender>,
    stdout: Option<tokio::net::unix::pipe::Receiver>,
    stderr: Option<tokio::net::unix::pipe::Receiver>,
    pid: i32,
    /// The helper's pidfd: signals reach it and never a recycled pid.
    pidfd: OwnedFd,
    kill: Kill,
    wall_time: std::time::Duration,
    report: tokio::net::unix::pipe::Receiver,
    supervisor: Supervisor,
    enforcement: Enforcement,
    /// Stderr text the reports brought before [`Confined::wait`] (within the cap).
    told: Vec<u8>,
    done: bool,
    /// While open, the helper keeps the command alive; closing it (drop) kills the tree.
    _lifeline: OwnedFd,
    /// Set for the namespace backend: once the call ended cleanly, prepare the next.
    refill: Option<Refill>,
    /// A proxy call's listeners, until taken ([`Confined::take_egress`]).
    egress: Option<crate::egress::launch::EgressListeners>,
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
    pub fn take_egress(&mut self) -> Option<crate::egress::launch::EgressListeners> {
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
        let deadline = tokio::time::sleep(self.wall_time);
        tokio::pin!(deadline, cancel);
        let (mut out, mut err) = (self.stdout.take(), self.stderr.take());
        for (stream, pipe) in [
            (Stream::Stdout, out.is_none()),
            (Stream::Stderr, err.is_none()),
        ] {
            if pipe {
                self.supervisor.feed(Event::OutputClosed(stream));
            }
        }
        if !self.told.is_empty() {
            on_output(Stream::Stderr, &std::mem::take(&mut self.told));
        }
        let mut bufs = [vec![0u8; 32 * 1024], vec![0u8; 32 * 1024], vec![0u8; 4096]];
        let [obuf, ebuf, rbuf] = &mut bufs;
        let (mut deadline_seen, mut cancel_seen) = (false, false);
        while !self.supervisor.done() {
            if !self.supervisor.wants_output(Stream::Stdout) {
                out = None;
            }
            if !self.supervisor.wants_output(Stream::Stderr) {
                err = None;
            }
            let sup = &mut self.supervisor;
            let reply = tokio::select! {
                n = read_some(&mut out, obuf) => sup.feed(match n {
                    0 => Event::OutputClosed(Stream::Stdout),
                    n => Event::Output(Stream::Stdout, &obuf[..n]),
                }),
                n = read_some(&mut err, ebuf) => sup.feed(match n {
                    0 => Event::OutputClosed(Stream::Stderr),
                    n => Event::Output(Stream::Stderr, &ebuf[..n]),
                }),
                n = self.report.read(rbuf), if sup.wants_reports() => sup.feed(match n {
                    Ok(0) | Err(_) => Event::ReportClosed,
                    Ok(n) => Event::Report(&rbuf[..n]),
                }),
                _ = &mut deadline, if !deadline_seen => {
                    deadline_seen = true;
                    sup.feed(Event::Deadline)
                }
                _ = &mut cancel, if !cancel_seen => {
                    cancel_seen = true;
                    sup.feed(Event::Cancel)
                }
            };
            act(reply, self.kill, &self.pidfd, &mut on_output);
        }
        self.done = true;
        let outcome = self.supervisor.finish();
        // The daemon's log keeps validation's refusals (the caller also sees them as stderr).
        for line in outcome.iter().flat_map(|o| &o.findings.refused) {
            tracing::warn!(target: "zeroclaw_sandbox::git", "{line}");
        }
        // The helper has been reaped, so its whole tree is gone: no confined process is
        // left to race the next call's preparation.
        if let (
            Some(r),
            Ok(Outcome {
                end: End::Exited, ..
            }),
        ) = (self.refill.take(), &outcome)
        {
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
        outcome
    }
}

/// Does what the supervisor answered: passes output on, kills the tree.
fn act(reply: Reply<'_>, kill: Kill, pidfd: &OwnedFd, on_output: &mut impl FnMut(Stream, &[u8])) {
    if let Some((stream, bytes)) = reply.forward {
        on_output(stream, &bytes);
    }
    if reply.kill {
        kill.send(pidfd);
    }
}

impl Drop for Confined {
    fn drop(&mut self) {
        if !self.done {
            // Through the pidfd: harmless if the helper has already ended.
            self.kill.send(&self.pidfd);
        }
    }
}
