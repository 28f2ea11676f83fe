//! What every helper inherits from whoever started it: the report, lifeline and (from a
//! zygote) launcher-pidfd descriptors of [`crate::wire`], its stdio, its parent and its
//! session; and the checks that the launcher is still there.

use std::os::fd::{BorrowedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::Signal;

use crate::error::{SetupError, Stage};
use crate::wire::{LAUNCHER_FD, LIFELINE_FD};

/// Set in a helper forked by a zygote that had the launcher's pidfd: it is at [`LAUNCHER_FD`].
pub(crate) static WATCHES_LAUNCHER: AtomicBool = AtomicBool::new(false);
/// Set in a helper forked by the zygote: its parent is the zygote, not the launcher.
pub(crate) static FORKED: AtomicBool = AtomicBool::new(false);

/// A descriptor of [`crate::wire`] the helper was started with, borrowed for one call.
pub(crate) fn borrow(fd: RawFd) -> BorrowedFd<'static> {
    // LAUNCHER_FD only when WATCHES_LAUNCHER is set (see `launcher_pidfd`).
    crate::sys::borrow_inherited(fd)
}

pub(crate) fn set_cloexec(fd: RawFd) -> Result<(), SetupError> {
    use nix::fcntl::{FcntlArg, FdFlag, fcntl};
    fcntl(borrow(fd), FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC))
        .map(drop)
        .map_err(|e| SetupError::os(Stage::Plan, "fcntl(report fd, FD_CLOEXEC)", &e.into()))
}

/// Dies with the launcher: optionally `PR_SET_PDEATHSIG`, then a check that it did not
/// already die (the supervisors also watch [`LIFELINE_FD`]).
pub(crate) fn die_with_parent(launcher: u32, signal: Option<Signal>) -> Result<(), SetupError> {
    if let Some(signal) = signal {
        nix::sys::prctl::set_pdeathsig(signal).map_err(|e| {
            SetupError::os(Stage::DieWithParent, "prctl(PR_SET_PDEATHSIG)", &e.into())
        })?;
    }
    if FORKED.load(Ordering::Relaxed) {
        // Our parent is the zygote; the launcher's liveness is the lifeline's and its pidfd's.
        return if launcher_gone() {
            Err(SetupError::new(
                Stage::DieWithParent,
                "launcher exited before the helper started",
            ))
        } else {
            Ok(())
        };
    }
    if nix::unistd::getppid().as_raw() as u32 != launcher {
        return Err(SetupError::new(
            Stage::DieWithParent,
            "launcher exited before the helper started",
        ));
    }
    Ok(())
}

/// The launcher's pidfd, when the zygote installed one ([`LAUNCHER_FD`]).
pub(crate) fn launcher_pidfd() -> Option<BorrowedFd<'static>> {
    WATCHES_LAUNCHER
        .load(Ordering::Relaxed)
        .then(|| borrow(LAUNCHER_FD))
}

/// Closes the launcher's pidfd in a child of the helper that has no use for it (the pid
/// namespace's init, whose processes could reach its descriptors): a pidfd of the daemon must
/// never be within the confined tree's reach.
pub(crate) fn close_launcher_pidfd() {
    if WATCHES_LAUNCHER.swap(false, Ordering::Relaxed) {
        let _ = nix::unistd::close(LAUNCHER_FD);
    }
}

/// Whether the launcher has let the command go or ended: its lifeline hung up, or its pidfd
/// says the process is gone.
pub(crate) fn launcher_gone() -> bool {
    lifeline_hung_up() || launcher_pidfd().is_some_and(readable)
}

pub(crate) fn lifeline_hung_up() -> bool {
    let mut fds = [PollFd::new(borrow(LIFELINE_FD), PollFlags::POLLIN)];
    poll(&mut fds, PollTimeout::ZERO).is_ok()
        && fds[0]
            .revents()
            .is_some_and(|r| r.intersects(PollFlags::POLLHUP | PollFlags::POLLERR))
}

/// A new session: no controlling terminal, so no TIOCSTI into the user's terminal.
pub(crate) fn new_session() -> Result<(), SetupError> {
    nix::unistd::setsid()
        .map(drop)
        .map_err(|e| SetupError::os(Stage::Session, "setsid()", &e.into()))
}

/// Points our stdin, stdout and stderr at `/dev/null` once the tree has its own copies, so
/// the command's output reaches end of file when the tree is gone, not when we exit.
pub(crate) fn release_stdio() {
    if let Ok(null) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    {
        use std::os::fd::AsRawFd;
        for fd in 0..=2 {
            let _ = crate::sys::dup_onto(null.as_raw_fd(), fd);
        }
    }
}

/// Whether `fd` is readable or hung up, without waiting (a pidfd: its process has ended).
pub(crate) fn readable(fd: BorrowedFd<'_>) -> bool {
    let mut fds = [PollFd::new(fd, PollFlags::POLLIN)];
    poll(&mut fds, PollTimeout::ZERO).is_ok_and(|n| n > 0)
        && fds[0]
            .revents()
            .is_some_and(|r| r.intersects(PollFlags::POLLIN | PollFlags::POLLHUP))
}
