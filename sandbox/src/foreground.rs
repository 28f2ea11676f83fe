//! Foreground runs for a single-threaded caller such as `zeroclaw sandbox run`, the caller's
//! side: no re-executed binary, the child side is started by `helper::forked` (the pid
//! namespace's init cloned by the caller itself, or the helper stages in a forked child). The caller's stdin is relayed to the command through a
//! pipe (the command never holds the caller's terminal), output goes to the caller within the
//! output limit, and the wall-time limit, the output limit and SIGINT/SIGTERM/SIGHUP kill the
//! whole tree, as with the async [`crate::Sandbox::spawn`].

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::time::Instant;

use nix::errno::Errno;
use nix::fcntl::{FcntlArg, OFlag, fcntl};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::{SigSet, SigmaskHow, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;

use crate::error::{SandboxError, SetupError, Stage};
use crate::launcher::{End, Outcome, Stream, kill_tree};
use crate::wire::{Enforcement, ExitInfo, LIFELINE_FD, Message, REPORT_FD, SETUP_FAILED};

const CHUNK: usize = 32 * 1024;

/// A single-threaded caller prepared for one foreground run: its signals held, the pipes
/// made. [`Caller::install_in_child`] runs in the child the child side starts, then
/// [`Caller::supervise`] in the caller.
pub(crate) struct Caller {
    signals: HeldSignals,
    pipes: Pipes,
}

impl Caller {
    /// Checks the caller is single-threaded, holds SIGINT, SIGTERM and SIGHUP, makes the pipes.
    pub(crate) fn prepare() -> Result<Caller, SandboxError> {
        single_threaded()?;
        let signals = HeldSignals::new()?;
        let pipes = Pipes::new()?;
        Ok(Caller { signals, pipes })
    }

    /// In the child: the caller's signal mask back, and the pipes on 0–2, [`REPORT_FD`] and
    /// [`LIFELINE_FD`] (exits on failure).
    pub(crate) fn install_in_child(&self) {
        let _ = self.signals.old.thread_set_mask();
        for (fd, target) in &self.pipes.child {
            if crate::sys::dup_onto(fd.as_raw_fd(), *target).is_err() {
                crate::sys::exit_now(SETUP_FAILED);
            }
        }
    }

    /// Supervises the run of `pid` (the init when `init`, else a helper of `backend`) until
    /// it has ended: relays stdin, passes output to `on_output`, enforces the limits.
    pub(crate) fn supervise(
        self,
        pid: i32,
        init: bool,
        backend: crate::Backend,
        profile: &crate::Profile,
        on_output: impl FnMut(Stream, &[u8]),
    ) -> Result<Outcome, SandboxError> {
        let kill = if init {
            Kill::Init
        } else {
            Kill::Helper(backend)
        };
        let run = Running::new(kill, pid, self.pipes, self.signals, profile)?;
        run.supervise(on_output, backend)
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

/// Both ends of the command's stdin, stdout, stderr and of the report and lifeline pipes;
/// the child's ends are duplicated high so installing them on 0–5 cannot clobber another.
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
    fn new() -> Result<Self, SandboxError> {
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
        let child = vec![
            (high(&in_r)?, 0),
            (high(&out_w)?, 1),
            (high(&err_w)?, 2),
            (high(&rep_w)?, REPORT_FD),
            (high(&life_r)?, LIFELINE_FD),
        ];
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

/// How a run is stopped before its end.
#[derive(Clone, Copy)]
enum Kill {
    /// SIGTERM to the helper, which kills and reaps the tree ([`kill_tree`]).
    Helper(crate::Backend),
    /// SIGKILL to the pid namespace's init, which takes the whole namespace with it.
    Init,
}

impl Kill {
    /// Through `pidfd` once there is one; before, `pid` is our own unreaped child.
    fn run(self, pid: i32, pidfd: Option<&OwnedFd>) {
        match (self, pidfd) {
            (Kill::Helper(backend), _) => kill_tree(backend, pid, pidfd),
            (Kill::Init, Some(pidfd)) => {
                let _ = crate::sys::pidfd_signal(pidfd, libc::SIGKILL);
            }
            (Kill::Init, None) => {
                let _ = nix::sys::signal::kill(Pid::from_raw(pid), Signal::SIGKILL);
            }
        }
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
    limits: crate::Limits,
}

/// What the run has seen so far.
#[derive(Default)]
struct Seen {
    report_text: Vec<u8>,
    enforcement: Option<Enforcement>,
    failed: Option<SetupError>,
    exit: Option<ExitInfo>,
    status: Option<ExitInfo>,
    /// Git refusals not yet passed on (see `crate::git::stage`).
    git: Vec<String>,
    used: u64,
    truncated: bool,
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
        profile: &crate::Profile,
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
                kill.run(pid, None);
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
            limits: profile.limits.clone(),
        })
    }

    fn supervise(
        mut self,
        mut on_output: impl FnMut(Stream, &[u8]),
        backend: crate::Backend,
    ) -> Result<Outcome, SandboxError> {
        let deadline = Instant::now() + self.limits.wall_time;
        let mut seen = Seen {
            caller_stdin_open: true,
            ..Seen::default()
        };
        let mut end = End::Exited;
        let mut buf = vec![0u8; CHUNK];
        loop {
            let streams_done = self.stdout.is_none() && self.stderr.is_none();
            if seen.status.is_some()
                && (streams_done || end != End::Exited)
                && self.report.is_none()
            {
                break;
            }
            let now = Instant::now();
            if now >= deadline {
                if seen.status.is_some() {
                    // The helper is gone; whatever still holds a pipe is not ours to wait for.
                    (self.stdout, self.stderr, self.report) = (None, None, None);
                    continue;
                }
                if end == End::Exited {
                    end = End::TimedOut;
                    self.kill.run(self.pid, Some(&self.pidfd));
                }
            }
            let wait = if now >= deadline {
                PollTimeout::from(50u16)
            } else {
                let ms = (deadline - now).as_millis().min(i32::MAX as u128) as i32;
                PollTimeout::try_from(ms).unwrap_or(PollTimeout::MAX)
            };
            let ready = self.poll_once(wait, &seen)?;
            for (source, revents) in ready {
                match source {
                    Source::Signal => {
                        while self.signals.fd.read_signal().ok().flatten().is_some() {}
                        if end == End::Exited && seen.status.is_none() {
                            end = End::Cancelled;
                            self.kill.run(self.pid, Some(&self.pidfd));
                        }
                    }
                    Source::Exit => seen.status = Some(self.reap()?),
                    Source::Report => {
                        self.read_report(&mut buf, &mut seen);
                        // Git hook: validation's refusals as stderr (see `crate::git::stage`).
                        if !seen.git.is_empty() {
                            let text =
                                crate::git::stage::lines_text(&std::mem::take(&mut seen.git));
                            on_output(Stream::Stderr, &text);
                        }
                    }
                    Source::Out(stream) => {
                        let over = self.read_output(stream, &mut buf, &mut seen, &mut on_output);
                        if over && end == End::Exited {
                            end = End::OutputLimit;
                            self.kill.run(self.pid, Some(&self.pidfd));
                        }
                    }
                    Source::CallerStdin => self.read_caller_stdin(&mut buf, &mut seen, revents),
                    Source::CommandStdin => self.write_command_stdin(&mut seen),
                }
            }
        }
        finish(seen, end, backend)
    }

    fn poll_once(
        &self,
        timeout: PollTimeout,
        seen: &Seen,
    ) -> Result<Vec<(Source, PollFlags)>, SandboxError> {
        let mut sources = vec![(Source::Signal, self.signals.fd.as_fd())];
        if seen.status.is_none() {
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
            if !seen.pending.is_empty() {
                sources.push((Source::CommandStdin, fd.as_fd()));
            } else if seen.caller_stdin_open {
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

    fn read_report(&mut self, buf: &mut [u8], seen: &mut Seen) {
        let Some(fd) = &self.report else { return };
        match nix::unistd::read(fd, buf) {
            Ok(0) => self.report = None,
            Ok(n) => seen.report_text.extend_from_slice(&buf[..n]),
            Err(Errno::EAGAIN | Errno::EINTR) => return,
            Err(_) => self.report = None,
        }
        while let Some(at) = seen.report_text.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = seen.report_text.drain(..=at).collect();
            match Message::decode(&line) {
                Some(Message::Ready(e)) => seen.enforcement = Some(e),
                Some(Message::Failed(e)) => seen.failed = Some(e),
                Some(Message::Exited(info)) => seen.exit = Some(info),
                // The helper's last word: its tree is reaped. Its own exit (tearing down the
                // namespaces, removing its cgroup) need not be waited for.
                Some(Message::Ended(info)) => {
                    seen.status = Some(info);
                    self.report = None;
                    return;
                }
                Some(Message::Git(lines)) => seen.git.extend(lines),
                Some(Message::Prepared(_)) | None => {}
            }
        }
    }

    /// Reads one chunk of `stream`; true once the output limit is exceeded.
    fn read_output(
        &mut self,
        stream: Stream,
        buf: &mut [u8],
        seen: &mut Seen,
        on_output: &mut impl FnMut(Stream, &[u8]),
    ) -> bool {
        let slot = match stream {
            Stream::Stdout => &mut self.stdout,
            Stream::Stderr => &mut self.stderr,
        };
        let Some(fd) = slot else { return false };
        let n = match nix::unistd::read(&*fd, buf) {
            Ok(0) => {
                *slot = None;
                return false;
            }
            Ok(n) => n,
            Err(Errno::EAGAIN | Errno::EINTR) => return false,
            Err(_) => {
                *slot = None;
                return false;
            }
        };
        let room = self.limits.output_bytes.saturating_sub(seen.used) as usize;
        let keep = n.min(room);
        seen.used += keep as u64;
        if keep > 0 {
            on_output(stream, &buf[..keep]);
        }
        if keep < n {
            seen.truncated = true;
            return true;
        }
        false
    }

    fn read_caller_stdin(&mut self, buf: &mut [u8], seen: &mut Seen, revents: PollFlags) {
        if revents.intersects(PollFlags::POLLNVAL) {
            seen.caller_stdin_open = false;
            self.stdin = None;
            return;
        }
        match nix::unistd::read(caller_stdin(), buf) {
            Ok(0) | Err(Errno::EBADF) => {
                seen.caller_stdin_open = false;
                self.stdin = None; // EOF reaches the command
            }
            Ok(n) => seen.pending.extend_from_slice(&buf[..n]),
            Err(Errno::EAGAIN | Errno::EINTR) => {}
            Err(_) => {
                seen.caller_stdin_open = false;
                self.stdin = None;
            }
        }
    }

    fn write_command_stdin(&mut self, seen: &mut Seen) {
        let Some(fd) = &self.stdin else {
            seen.pending.clear();
            return;
        };
        match nix::unistd::write(fd, &seen.pending) {
            Ok(n) => {
                seen.pending.drain(..n);
            }
            Err(Errno::EAGAIN | Errno::EINTR) => {}
            Err(_) => {
                // The command closed its stdin: stop relaying.
                seen.pending.clear();
                seen.caller_stdin_open = false;
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
}

fn finish(seen: Seen, end: End, backend: crate::Backend) -> Result<Outcome, SandboxError> {
    if let Some(e) = seen.failed {
        return Err(e.into());
    }
    let status = seen.status.unwrap_or(ExitInfo::Code(SETUP_FAILED));
    let Some(enforcement) = seen.enforcement else {
        let (stage, hint) = if backend == crate::Backend::Bubblewrap {
            (
                Stage::Bubblewrap,
                "bubblewrap's own message is printed above",
            )
        } else {
            (Stage::Spawn, "the helper's stderr is printed above")
        };
        return Err(SetupError::new(
            stage,
            format!("the helper ended ({status:?}) before confining the command"),
        )
        .hint(hint)
        .into());
    };
    Ok(Outcome {
        exit: seen.exit.unwrap_or(status),
        end,
        stdout: Vec::new(),
        stderr: Vec::new(),
        truncated: seen.truncated,
        enforcement,
    })
}
