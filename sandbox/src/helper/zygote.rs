//! The zygote: one single-threaded helper process per [`crate::Sandbox`], started once, that
//! forks a helper per execution instead of the launcher re-executing the binary each time.
//!
//! Protocol on its control socket (`SOCK_SEQPACKET`, at [`CONTROL_FD`] when it starts): each
//! request is one byte with six descriptors attached — the command's stdin, stdout, stderr, the
//! plan, report and lifeline pipe ends, in that order — or seven for a warm helper, the last
//! being its go socket ([`crate::warm`]). The zygote forks; the child installs them on 0–5
//! (and 6) and runs exactly what a re-executed helper runs (it reads its plan from
//! [`crate::wire::PLAN_FD`]). The reply is the child's pid (4 bytes, little endian) with its pidfd
//! attached. The zygote keeps each child's report pipe until it has reaped the child, then
//! writes [`Message::Ended`] with the child's exit status there and closes it. End of file on
//! the control socket ends the zygote, and so does the launcher's end: the launcher installs a
//! pidfd of itself at [`LAUNCHER_PIDFD`] when it starts the zygote, which the zygote watches
//! and hands to every helper at [`crate::wire::LAUNCHER_FD`]. A pidfd becomes readable when the
//! whole launcher process has ended, by any signal, whoever still holds a copy of one of its
//! descriptors (a leaked end of the control socket or of a lifeline cannot keep anything
//! alive) and whichever of its threads started us (unlike `PR_SET_PDEATHSIG`, which fires
//! when the spawning *thread* exits). Each helper also still has its own lifeline.

use std::collections::HashMap;
use std::io::{IoSlice, IoSliceMut};
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::{SigSet, SigmaskHow, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::socket::{ControlMessage, ControlMessageOwned, MsgFlags, recvmsg, sendmsg};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};

use super::inherited::readable;
use crate::wire::{ExitInfo, Message};

use crate::wire::{
    CONTROL_FD, LAUNCHER_FD, LAUNCHER_PIDFD, REQUEST_FDS, SETUP_FAILED, WARM_REQUEST_FDS,
};

/// What a forked helper runs: the helper proper (never returns).
pub(crate) type HelperMain = fn(inner: bool) -> !;

/// Runs the zygote until the launcher closes the control socket; each forked helper runs
/// `helper`. Never returns.
pub(crate) fn serve(helper: HelperMain) -> ! {
    let code = match Zygote::new(helper).and_then(Zygote::run) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("zeroclaw sandbox zygote: {e}");
            SETUP_FAILED
        }
    };
    crate::sys::exit_now(code)
}

struct Zygote {
    pid: nix::unistd::Pid,
    /// What each forked helper runs.
    helper: HelperMain,
    control: OwnedFd,
    /// The launcher's pidfd (readable once it has ended), installed in every helper.
    launcher: Option<OwnedFd>,
    /// Kept open in forked helpers (see [`super::mounts::warm_up`]).
    inherited: Option<RawFd>,
    children: SignalFd,
    old_mask: SigSet,
    /// Report pipe of each live helper, written once it is reaped.
    reports: HashMap<i32, OwnedFd>,
}

impl Zygote {
    fn new(helper: HelperMain) -> std::io::Result<Zygote> {
        // The launcher installed the control socket at CONTROL_FD before exec.
        let installed = crate::sys::take_inherited(CONTROL_FD);
        // Taken before anything else can be given its number.
        let launcher = crate::sys::adopt_inherited(LAUNCHER_PIDFD);
        // Above the fixed numbers 0–7 the helpers' descriptors are installed on.
        let control = crate::sys::dup_high(installed.as_raw_fd())?;
        let launcher = launcher
            .map(|fd| crate::sys::dup_high(fd.as_raw_fd()))
            .transpose()?;
        drop(installed);
        if launcher.as_ref().is_some_and(|fd| readable(fd.as_fd())) {
            return Err(std::io::Error::other(
                "the launcher ended before the zygote started",
            ));
        }
        let mut set = SigSet::empty();
        set.add(Signal::SIGCHLD);
        let old_mask = set.thread_swap_mask(SigmaskHow::SIG_BLOCK)?;
        let children = SignalFd::with_flags(&set, SfdFlags::SFD_CLOEXEC | SfdFlags::SFD_NONBLOCK)?;
        let inherited = super::mounts::warm_up();
        Ok(Zygote {
            pid: nix::unistd::getpid(),
            helper,
            control,
            launcher,
            inherited,
            children,
            old_mask,
            reports: HashMap::new(),
        })
    }

    fn run(mut self) -> std::io::Result<()> {
        loop {
            let mut fds = vec![
                PollFd::new(self.control.as_fd(), PollFlags::POLLIN),
                PollFd::new(self.children.as_fd(), PollFlags::POLLIN),
            ];
            if let Some(launcher) = &self.launcher {
                fds.push(PollFd::new(launcher.as_fd(), PollFlags::POLLIN));
            }
            match poll(&mut fds, PollTimeout::NONE) {
                Ok(_) | Err(Errno::EINTR) => {}
                Err(e) => return Err(e.into()),
            }
            let ready = |fd: &PollFd| fd.revents().is_some_and(|r| !r.is_empty());
            let (request, exited) = (ready(&fds[0]), ready(&fds[1]));
            if fds.get(2).is_some_and(ready) {
                // The launcher has ended: a request it left queued has nobody to serve.
                return Ok(());
            }
            if exited {
                while self.children.read_signal().ok().flatten().is_some() {}
                self.reap();
            }
            if request && !self.serve_one()? {
                return Ok(());
            }
        }
    }

    /// Handles one request; false once the launcher is gone.
    fn serve_one(&mut self) -> std::io::Result<bool> {
        let mut byte = [0u8; 1];
        let mut iov = [IoSliceMut::new(&mut byte)];
        let mut space = nix::cmsg_space!([RawFd; WARM_REQUEST_FDS]);
        let msg = match recvmsg::<()>(
            self.control.as_raw_fd(),
            &mut iov,
            Some(&mut space),
            MsgFlags::MSG_CMSG_CLOEXEC,
        ) {
            Ok(m) => m,
            Err(Errno::EINTR | Errno::EAGAIN) => return Ok(true),
            Err(_) => return Ok(false),
        };
        if msg.bytes == 0 {
            return Ok(false);
        }
        let mut received: Vec<OwnedFd> = Vec::new();
        for cmsg in msg.cmsgs()? {
            if let ControlMessageOwned::ScmRights(fds) = cmsg {
                received.extend(crate::sys::adopt_received(fds));
            }
        }
        if received.len() != REQUEST_FDS && received.len() != WARM_REQUEST_FDS {
            // A malformed request: answer with pid 0 and no descriptor.
            self.reply(0, None);
            return Ok(true);
        }
        match crate::sys::fork() {
            Ok(None) => self.child(&received),
            Ok(Some(pid)) => {
                let pidfd = crate::sys::pidfd_open(pid).ok();
                self.reply(pid, pidfd.as_ref());
                let report = received.swap_remove(4);
                self.reports.insert(pid, report);
                Ok(true)
            }
            Err(_) => {
                self.reply(0, None);
                Ok(true)
            }
        }
    }

    fn reply(&self, pid: i32, pidfd: Option<&OwnedFd>) {
        let bytes = pid.to_le_bytes();
        let iov = [IoSlice::new(&bytes)];
        let fds: Vec<RawFd> = pidfd.iter().map(|fd| fd.as_raw_fd()).collect();
        let cmsgs: Vec<ControlMessage> = if fds.is_empty() {
            Vec::new()
        } else {
            vec![ControlMessage::ScmRights(&fds)]
        };
        let _ = sendmsg::<()>(
            self.control.as_raw_fd(),
            &iov,
            &cmsgs,
            MsgFlags::empty(),
            None,
        );
    }

    /// The forked helper: the request's descriptors on 0–5 (6), nothing else open, the
    /// caller's signal mask, then the ordinary helper stages.
    fn child(&self, received: &[OwnedFd]) -> ! {
        let _ = self.old_mask.thread_set_mask();
        // High copies first, so installing one cannot clobber another not yet installed.
        let high: Vec<OwnedFd> = received
            .iter()
            .map(|fd| crate::sys::dup_high(fd.as_raw_fd()))
            .collect::<Result<_, _>>()
            .unwrap_or_else(|_| crate::sys::exit_now(SETUP_FAILED));
        for (target, fd) in high.iter().enumerate() {
            if crate::sys::dup_onto(fd.as_raw_fd(), target as RawFd).is_err() {
                crate::sys::exit_now(SETUP_FAILED);
            }
        }
        let mut keep: Vec<RawFd> = self.inherited.iter().copied().collect();
        if let Some(launcher) = &self.launcher {
            if crate::sys::dup_onto(launcher.as_raw_fd(), LAUNCHER_FD).is_err() {
                crate::sys::exit_now(SETUP_FAILED);
            }
            keep.push(LAUNCHER_FD);
            super::inherited::WATCHES_LAUNCHER.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        let _ = crate::sys::close_from_except(high.len() as RawFd, &keep);
        if high.len() == WARM_REQUEST_FDS {
            // A warm helper waits for a call the launcher may never make: it ends with us.
            // Caught first: one still setting up when we end must live on to remove its
            // cgroups (we, their other remover, are gone), and one cleaning up after its call
            // must finish; its waits see the signal (`reaper`).
            if crate::sys::catch_sigterm().is_err()
                || nix::sys::prctl::set_pdeathsig(Signal::SIGTERM).is_err()
                || nix::unistd::getppid() != self.pid
            {
                crate::sys::exit_now(SETUP_FAILED);
            }
        }
        super::inherited::FORKED.store(true, std::sync::atomic::Ordering::Relaxed);
        (self.helper)(false)
    }

    /// Reaps every exited helper and tells its launcher how it ended.
    fn reap(&mut self) {
        loop {
            let (pid, info) = match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::Exited(pid, code)) => (pid, ExitInfo::Code(code)),
                Ok(WaitStatus::Signaled(pid, sig, _)) => (pid, ExitInfo::Signal(sig as i32)),
                Ok(WaitStatus::StillAlive) | Err(_) => return,
                Ok(_) => continue,
            };
            if let Some(report) = self.reports.remove(&pid.as_raw()) {
                let _ = nix::unistd::write(&report, &Message::Ended(info).encode());
            }
            super::cgroup::remove_after(pid.as_raw() as u32);
        }
    }
}
