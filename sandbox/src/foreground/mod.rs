//! Foreground runs for a single-threaded caller such as `zeroclaw sandbox run`, the caller's
//! side: no re-executed binary, the child side is started by `helper::forked` (the pid
//! namespace's init cloned by the caller itself, or the helper stages in a forked child). The caller's stdin is relayed to the command through a
//! pipe (the command never holds the caller's terminal), output goes to the caller within the
//! output limit, and the wall-time limit, the output limit and SIGINT/SIGTERM/SIGHUP kill the
//! whole tree, as with the async [`crate::Sandbox::spawn`]: this poll loop is the second
//! driver of [`crate::supervise::Supervisor`], which decides. A proxy run's listeners come
//! back over a plan socket it watches too ([`crate::foreground::egress`]).

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::time::Instant;

use nix::errno::Errno;
use nix::fcntl::{FcntlArg, OFlag, fcntl};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::{SigSet, SigmaskHow, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;

mod egress;
mod run;

use crate::error::{SandboxError, SetupError, Stage};
use crate::foreground::egress::Egress;
use crate::supervise::{Config, Event, Kill, Outcome, Reaper, Reply, Stream, Supervisor};
use crate::wire::{ExitInfo, LIFELINE_FD, PLAN_FD, REPORT_FD, SETUP_FAILED};

const CHUNK: usize = 32 * 1024;

/// A single-threaded caller prepared for one foreground run: its signals held, the pipes
/// made. [`Caller::install_in_child`] runs in the child the child side starts, then
/// [`Caller::supervise`] in the caller.
pub(crate) struct Caller {
    signals: HeldSignals,
    pipes: Pipes,
}

impl Caller {
    /// Checks the caller is single-threaded, holds SIGINT, SIGTERM and SIGHUP, makes the pipes
    /// (and the child's copy of a proxy run's `plan_socket`, for [`PLAN_FD`]).
    pub(crate) fn prepare(plan_socket: Option<&OwnedFd>) -> Result<Caller, SandboxError> {
        single_threaded()?;
        let signals = HeldSignals::new()?;
        let pipes = Pipes::new(plan_socket)?;
        Ok(Caller { signals, pipes })
    }

    /// In the child: the caller's signal mask back, and the pipes on 0–2, [`REPORT_FD`] and
    /// [`LIFELINE_FD`], a plan socket on [`PLAN_FD`] (exits on failure).
    pub(crate) fn install_in_child(&self) {
        let _ = self.signals.old.thread_set_mask();
        for (fd, target) in &self.pipes.child {
            if crate::sys::dup_onto(fd.as_raw_fd(), *target).is_err() {
                crate::sys::exit_now(SETUP_FAILED);
            }
        }
    }

    /// Supervises the run of `pid` (the init when `init`, else a helper of `backend`) until
    /// it has ended: relays stdin, passes output to `on_output`, enforces the limits, hands a
    /// proxy run's listeners to its `egress` hook.
    pub(crate) fn supervise(
        self,
        pid: i32,
        init: bool,
        backend: crate::Backend,
        profile: &crate::Profile,
        on_output: impl FnMut(Stream, &[u8]),
        egress: Option<Egress<'_>>,
    ) -> Result<Outcome, SandboxError> {
        let kill = if init {
            Kill::Init
        } else {
            Kill::for_helper(backend)
        };
        let supervisor = Supervisor::new(Config {
            cap: profile.limits.output_bytes,
            keep: false,
            settle: false,
            reaper: Reaper::Driver,
            helper: crate::error::HelperNames::of(backend),
        });
        let run = Running::new(kill, pid, self.pipes, self.signals, supervisor)?;
        let mut egress = egress;
        if egress.as_mut().is_some_and(|e| !e.started()) {
            run.kill.send(&run.pidfd);
        }
        let result = run.supervise(profile.limits.wall_time, on_output, egress.as_mut());
        match egress {
            Some(egress) => egress.finish(result),
            None => result,
        }
    }
}

fn spawn_error(call: &str, e: &std::io::Error) -> SandboxError {
    SetupError::os(Stage::Spawn, call, e).into()
}

fn io(e: Errno) -> std::io::Error {
    e.into()
}

fn single_threaded() -> Result<(), SandboxError> {
    let tasks =
        crate::host::thread_count().map_err(|e| spawn_error("read_dir(/proc/self/task)", &e))?;
    if tasks == 1 {
        return Ok(());
    }
    Err(SetupError::new(
        Stage::Spawn,
        format!("run_foreground needs a single-threaded caller; this process has {tasks} threads"),
    )
    .hint("use Sandbox::spawn from async code")
    .into())
}

/// SIGINT, SIGTERM and SIGHUP blocked and readable from a signalfd; the old mask comes back
/// on drop (and in the child before anything runs).
struct HeldSignals {
    fd: SignalFd,
    old: SigSet,
}

impl HeldSignals {
    fn new() -> Result<Self, SandboxError> {
        let mut set = SigSet::empty();
        for s in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
            set.add(s);
        }
        let old = set
            .thread_swap_mask(SigmaskHow::SIG_BLOCK)
            .map_err(|e| spawn_error("sigprocmask(SIG_BLOCK)", &io(e)))?;
        let fd = SignalFd::with_flags(&set, SfdFlags::SFD_CLOEXEC | SfdFlags::SFD_NONBLOCK)
            .map_err(|e| spawn_error("signalfd()", &io(e)));
        match fd {
            Ok(fd) => Ok(HeldSignals { fd, old }),
            Err(e) => {
                let _ = old.thread_set_mask();
                Err(e)
            }
        }
    }
}

impl Drop for HeldSignals {
    fn drop(&mut self) {
        let _ = self.old.thread_set_mask();
    }
}

/// Both ends of the command's stdin, stdout, stderr, report and lifeline pipes (and the child's
/// copy of a plan socket), the child's duplicated high: installing them cannot clobber another.
struct Pipes {
    stdin: OwnedFd,
    stdout: OwnedFd,
    stderr: OwnedFd,
    report: OwnedFd,
    lifeline: OwnedFd,
    /// (child's end, the descriptor it must become)
    child: Vec<(OwnedFd, i32)>,
}

impl Pipes {
    fn new(plan_socket: Option<&OwnedFd>) -> Result<Self, SandboxError> {
        let pipe =
            || nix::unistd::pipe2(OFlag::O_CLOEXEC).map_err(|e| spawn_error("pipe2()", &io(e)));
        let high = |fd: &OwnedFd| {
            crate::sys::dup_high(fd.as_raw_fd()).map_err(|e| spawn_error("fcntl(F_DUPFD)", &e))
        };
        let (in_r, in_w) = pipe()?;
        let (out_r, out_w) = pipe()?;
        let (err_r, err_w) = pipe()?;
        let (rep_r, rep_w) = pipe()?;
        let (life_r, life_w) = pipe()?;
        let mut child = vec![
            (high(&in_r)?, 0),
            (high(&out_w)?, 1),
            (high(&err_w)?, 2),
            (high(&rep_w)?, REPORT_FD),
            (high(&life_r)?, LIFELINE_FD),
        ];
        if let Some(socket) = plan_socket {
            child.push((high(socket)?, PLAN_FD));
        }
        Ok(Pipes {
            stdin: in_w,
            stdout: out_r,
            stderr: err_r,
            report: rep_r,
            lifeline: life_w,
            child,
        })
    }
}

fn nonblocking(fd: &OwnedFd) -> Result<(), SandboxError> {
    fcntl(fd, FcntlArg::F_SETFL(OFlag::O_NONBLOCK))
        .map(drop)
        .map_err(|e| spawn_error("fcntl(O_NONBLOCK)", &io(e)))
}

/// The parent's side of one foreground run.
struct Running {
    kill: Kill,
    pid: i32,
    pidfd: OwnedFd,
    signals: HeldSignals,
    stdin: Option<OwnedFd>,
    stdout: Option<OwnedFd>,
    stderr: Option<OwnedFd>,
    report: Option<OwnedFd>,
    _lifeline: OwnedFd,
    supervisor: Supervisor,
    relay: Relay,
}

/// The caller's stdin on its way to the command.
struct Relay {
    /// Bytes read from the caller's stdin not yet written to the command.
    pending: Vec<u8>,
    caller_stdin_open: bool,
}

impl Running {
    fn new(
        kill: Kill,
        pid: i32,
        pipes: Pipes,
        signals: HeldSignals,
        supervisor: Supervisor,
    ) -> Result<Self, SandboxError> {
        let Pipes {
            stdin,
            stdout,
            stderr,
            report,
            lifeline,
            child,
        } = pipes;
        drop(child);
        for fd in [&stdin, &stdout, &stderr, &report] {
            nonblocking(fd)?;
        }
        let pidfd = match crate::sys::pidfd_open(pid) {
            Ok(fd) => fd,
            Err(e) => {
                // Without a pidfd nothing is signalled (never a bare pid): closing the
                // lifeline tells a supervising helper, or the init, to kill the tree; an
                // exec-only backend's command watches nothing and is waited for with its
                // pipes closed. Reaped here.
                drop((lifeline, stdin, stdout, stderr, report));
                let _ = waitpid(Pid::from_raw(pid), None);
                return Err(spawn_error("pidfd_open()", &e));
            }
        };
        Ok(Running {
            kill,
            pid,
            pidfd,
            signals,
            stdin: Some(stdin),
            stdout: Some(stdout),
            stderr: Some(stderr),
            report: Some(report),
            _lifeline: lifeline,
            supervisor,
            relay: Relay {
                pending: Vec::new(),
                caller_stdin_open: true,
            },
        })
    }

    fn supervise(
        mut self,
        wall_time: std::time::Duration,
        mut on_output: impl FnMut(Stream, &[u8]),
        mut egress: Option<&mut Egress<'_>>,
    ) -> Result<Outcome, SandboxError> {
        let deadline = Instant::now() + wall_time;
        let mut deadline_seen = false;
        let mut buf = vec![0u8; CHUNK];
        while !self.supervisor.done() {
            if !self.supervisor.wants_output(Stream::Stdout) {
                self.stdout = None;
            }
            if !self.supervisor.wants_output(Stream::Stderr) {
                self.stderr = None;
            }
            if !self.supervisor.wants_reports() {
                self.report = None;
            }
            let now = Instant::now();
            if !deadline_seen && now >= deadline {
                deadline_seen = true;
                let reply = self.supervisor.feed(Event::Deadline);
                self.act(reply, &mut on_output);
                continue;
            }
            let wait = if deadline_seen {
                PollTimeout::NONE
            } else {
                let ms = (deadline - now).as_millis().min(i32::MAX as u128) as i32;
                PollTimeout::try_from(ms).unwrap_or(PollTimeout::MAX)
            };
            let channel = egress.as_deref().and_then(Egress::channel);
            for (source, revents) in self.poll_once(wait, channel)? {
                match source {
                    Source::Signal => {
                        while self.signals.fd.read_signal().ok().flatten().is_some() {}
                        let reply = self.supervisor.feed(Event::Cancel);
                        self.act(reply, &mut on_output);
                    }
                    Source::Exit => {
                        let info = self.reap()?;
                        self.supervisor.feed(Event::HelperExited(info));
                    }
                    Source::Report => self.read_report(&mut buf, &mut on_output),
                    Source::Out(stream) => self.read_output(stream, &mut buf, &mut on_output),
                    Source::CallerStdin => self.read_caller_stdin(&mut buf, revents),
                    Source::CommandStdin => self.write_command_stdin(),
                    Source::Egress => {
                        if let Some(egress) = egress.as_deref_mut()
                            && !egress.receive()
                        {
                            self.kill.send(&self.pidfd);
                        }
                    }
                }
            }
        }
        self.supervisor.finish()
    }

    /// Does what the supervisor answered: passes output on, kills the tree.
    fn act(&self, reply: Reply<'_>, on_output: &mut impl FnMut(Stream, &[u8])) {
        if let Some((stream, bytes)) = reply.forward {
            on_output(stream, &bytes);
        }
        if reply.kill {
            self.kill.send(&self.pidfd);
        }
    }

    /// Waits for the next ready descriptors: ours, and a proxy run's plan socket `channel`.
    fn poll_once(
        &self,
        timeout: PollTimeout,
        channel: Option<BorrowedFd<'_>>,
    ) -> Result<Vec<(Source, PollFlags)>, SandboxError> {
        let mut sources = vec![(Source::Signal, self.signals.fd.as_fd())];
        if let Some(fd) = channel {
            sources.push((Source::Egress, fd));
        }
        if !self.supervisor.ended_known() {
            sources.push((Source::Exit, self.pidfd.as_fd()));
        }
        if let Some(fd) = &self.report {
            sources.push((Source::Report, fd.as_fd()));
        }
        if let Some(fd) = &self.stdout {
            sources.push((Source::Out(Stream::Stdout), fd.as_fd()));
        }
        if let Some(fd) = &self.stderr {
            sources.push((Source::Out(Stream::Stderr), fd.as_fd()));
        }
        if let Some(fd) = &self.stdin {
            if !self.relay.pending.is_empty() {
                sources.push((Source::CommandStdin, fd.as_fd()));
            } else if self.relay.caller_stdin_open {
                sources.push((Source::CallerStdin, caller_stdin()));
            }
        }
        let mut fds: Vec<PollFd> = sources
            .iter()
            .map(|(source, fd)| {
                let flags = match source {
                    Source::CommandStdin => PollFlags::POLLOUT,
                    _ => PollFlags::POLLIN,
                };
                PollFd::new(*fd, flags)
            })
            .collect();
        match poll(&mut fds, timeout) {
            Ok(_) | Err(Errno::EINTR) => {}
            Err(e) => return Err(spawn_error("poll()", &io(e))),
        }
        Ok(sources
            .iter()
            .zip(&fds)
            .filter_map(|((source, _), fd)| {
                let r = fd.revents().unwrap_or(PollFlags::empty());
                (!r.is_empty()).then_some((*source, r))
            })
            .collect())
    }

    fn reap(&mut self) -> Result<ExitInfo, SandboxError> {
        loop {
            match waitpid(Pid::from_raw(self.pid), Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::Exited(_, code)) => return Ok(ExitInfo::Code(code)),
                Ok(WaitStatus::Signaled(_, sig, _)) => return Ok(ExitInfo::Signal(sig as i32)),
                Ok(WaitStatus::StillAlive) => {
                    let _ = waitpid(Pid::from_raw(self.pid), None);
                }
                Ok(_) | Err(Errno::EINTR) => {}
                Err(e) => return Err(spawn_error("waitpid()", &io(e))),
            }
        }
    }

    fn read_report(&mut self, buf: &mut [u8], on_output: &mut impl FnMut(Stream, &[u8])) {
        let Some(fd) = &self.report else { return };
        let event = match nix::unistd::read(fd, buf) {
            Ok(0) => Event::ReportClosed,
            Ok(n) => Event::Report(&buf[..n]),
            Err(Errno::EAGAIN | Errno::EINTR) => return,
            Err(_) => Event::ReportClosed,
        };
        let reply = self.supervisor.feed(event);
        self.act(reply, on_output);
    }

    /// Reads one chunk of `stream` for the supervisor.
    fn read_output(
        &mut self,
        stream: Stream,
        buf: &mut [u8],
        on_output: &mut impl FnMut(Stream, &[u8]),
    ) {
        let fd = match stream {
            Stream::Stdout => &self.stdout,
            Stream::Stderr => &self.stderr,
        };
        let Some(fd) = fd else { return };
        let event = match nix::unistd::read(fd, buf) {
            Ok(0) => Event::OutputClosed(stream),
            Ok(n) => Event::Output(stream, &buf[..n]),
            Err(Errno::EAGAIN | Errno::EINTR) => return,
            Err(_) => Event::OutputClosed(stream),
        };
        let reply = self.supervisor.feed(event);
        self.act(reply, on_output);
    }

    fn read_caller_stdin(&mut self, buf: &mut [u8], revents: PollFlags) {
        let relay = &mut self.relay;
        if revents.intersects(PollFlags::POLLNVAL) {
            relay.caller_stdin_open = false;
            self.stdin = None;
            return;
        }
        match nix::unistd::read(caller_stdin(), buf) {
            Ok(0) | Err(Errno::EBADF) => {
                relay.caller_stdin_open = false;
                self.stdin = None; // EOF reaches the command
            }
            Ok(n) => relay.pending.extend_from_slice(&buf[..n]),
            Err(Errno::EAGAIN | Errno::EINTR) => {}
            Err(_) => {
                relay.caller_stdin_open = false;
                self.stdin = None;
            }
        }
    }

    fn write_command_stdin(&mut self) {
        let relay = &mut self.relay;
        let Some(fd) = &self.stdin else {
            relay.pending.clear();
            return;
        };
        match nix::unistd::write(fd, &relay.pending) {
            Ok(n) => {
                relay.pending.drain(..n);
            }
            Err(Errno::EAGAIN | Errno::EINTR) => {}
            Err(_) => {
                // The command closed its stdin: stop relaying.
                relay.pending.clear();
                relay.caller_stdin_open = false;
                self.stdin = None;
            }
        }
    }
}

fn caller_stdin() -> BorrowedFd<'static> {
    // Only used for poll and read; a closed fd 0 reports POLLNVAL/EBADF, handled above.
    crate::sys::borrow_inherited(0)
}

/// What a ready descriptor is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    Signal,
    Exit,
    Report,
    Out(Stream),
    CallerStdin,
    CommandStdin,
    /// A proxy run's plan socket: its listeners, or the child's end.
    Egress,
}
