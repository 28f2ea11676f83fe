//! Lifetime: reaping in the pid namespace's init, and for the Landlock-only backend a child
//! subreaper that kills every descendant when the command ends or on SIGTERM (timeout,
//! cancellation, launcher death), `setsid`/double-forked orphans included.

use nix::errno::Errno;
use nix::sys::signal::{Signal, kill};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;

use super::report::{send, shell_code};
use super::seccomp_notify as notify;
use crate::error::{SetupError, Stage};
use crate::wire::{ExitInfo, Message};

/// Reaps every child until `main` exits; returns how it ended.
pub fn reap_until(main: Pid) -> ExitInfo {
    loop {
        match waitpid(None, None) {
            Ok(WaitStatus::Exited(pid, code)) if pid == main => return ExitInfo::Code(code),
            Ok(WaitStatus::Signaled(pid, sig, _)) if pid == main => {
                return ExitInfo::Signal(sig as i32);
            }
            Ok(_) | Err(Errno::EINTR) => continue,
            Err(_) => return ExitInfo::Code(crate::wire::SETUP_FAILED),
        }
    }
}

/// As [`reap_until`], for an init whose launcher is its parent (no helper between them, see
/// `namespaces::start_init`): `None` once the lifeline hangs up — the launcher died, and the
/// clean-up is ours. Children are reaped as SIGCHLD arrives (through a signalfd; it stays
/// blocked afterwards).
pub fn reap_until_or_hangup(main: Pid) -> Option<ExitInfo> {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use nix::sys::signal::SigSet;
    use nix::sys::signalfd::{SfdFlags, SignalFd};
    use std::os::fd::AsFd;
    let mut sigchld = SigSet::empty();
    sigchld.add(Signal::SIGCHLD);
    // Blocked before the first reaping round: a SIGCHLD after it waits in the signalfd.
    let signals = sigchld.thread_block().ok().and_then(|_| {
        SignalFd::with_flags(&sigchld, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC).ok()
    });
    // Installed before the init starts and never closed by it.
    let lifeline = crate::sys::borrow_inherited(crate::wire::LIFELINE_FD);
    loop {
        loop {
            match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::Exited(pid, code)) if pid == main => {
                    return Some(ExitInfo::Code(code));
                }
                Ok(WaitStatus::Signaled(pid, sig, _)) if pid == main => {
                    return Some(ExitInfo::Signal(sig as i32));
                }
                Ok(WaitStatus::StillAlive) => break,
                Ok(_) | Err(Errno::EINTR) => continue,
                Err(_) => return Some(ExitInfo::Code(crate::wire::SETUP_FAILED)),
            }
        }
        let mut fds = vec![PollFd::new(lifeline, PollFlags::POLLIN)];
        if let Some(sfd) = &signals {
            fds.push(PollFd::new(sfd.as_fd(), PollFlags::POLLIN));
        }
        // Without a signalfd, look again every 50 ms.
        let timeout = if signals.is_some() {
            PollTimeout::NONE
        } else {
            PollTimeout::from(50u16)
        };
        if poll(&mut fds, timeout).is_ok()
            && fds[0].revents().is_some_and(|r| {
                r.intersects(PollFlags::POLLIN | PollFlags::POLLHUP | PollFlags::POLLERR)
            })
        {
            return None;
        }
        if let Some(sfd) = &signals {
            while let Ok(Some(_)) = sfd.read_signal() {}
        }
    }
}

/// Makes the helper the reaper of every orphaned descendant and lets SIGTERM (timeout,
/// cancellation, launcher death) interrupt its waits. Call before forking the tree.
pub fn become_subreaper() -> Result<(), SetupError> {
    nix::sys::prctl::set_child_subreaper(true)
        .map_err(|e| SetupError::os(Stage::Init, "prctl(PR_SET_CHILD_SUBREAPER)", &e.into()))?;
    crate::sys::catch_sigterm().map_err(|e| SetupError::os(Stage::Init, "sigaction(SIGTERM)", &e))
}

/// Waits for `main` (or SIGTERM), then kills and reaps every descendant, so when the helper
/// exits nothing it started is left. Returns the shell exit code.
pub fn supervise_child(main: Pid, report_exit: bool) -> i32 {
    finish_tree(wait_main(main, None), report_exit)
}

/// Kills and reaps every descendant, reports how the command ended; the shell exit code.
pub(super) fn finish_tree(exit: Option<ExitInfo>, report_exit: bool) -> i32 {
    kill_descendants();
    match exit {
        Some(info) => {
            if report_exit {
                send(&Message::Exited(info));
            }
            shell_code(info)
        }
        None => 128 + libc::SIGKILL,
    }
}

/// Waits for the command, answering `supervisor`'s notifications meanwhile; `None` when
/// SIGTERM asked us to stop first.
pub(super) fn wait_main(main: Pid, supervisor: Option<&notify::Supervisor>) -> Option<ExitInfo> {
    match wait(main, supervisor, None) {
        Waited::Exited(exit) => exit,
        Waited::Told(code) => Some(ExitInfo::Code(code)),
    }
}

/// How [`wait_init`] ended.
pub(super) enum Waited {
    /// The process exited (`None`: SIGTERM or the launcher's end came first).
    Exited(Option<ExitInfo>),
    /// A namespace's init told us its tree is gone, with the command's shell code; it is
    /// still exiting, and is reaped by [`kill_descendants`].
    Told(i32),
}

/// [`wait_main`] for a namespace's init that says on `told` (a pipe) when it has killed and
/// reaped everything else in its namespace ([`tell_tree_gone`]): its own exit (the
/// namespaces' teardown, about half a millisecond) is then not waited for.
pub(super) fn wait_init(main: Pid, told: std::os::fd::OwnedFd) -> Waited {
    wait(main, None, Some(told))
}

/// In a namespace's init whose helper waits in [`wait_init`]: the tree is gone, the command
/// ended with shell code `code`.
pub(super) fn tell_tree_gone(told: std::os::fd::OwnedFd, code: i32) {
    let _ = nix::unistd::write(&told, &code.to_le_bytes());
}

fn wait(
    main: Pid,
    supervisor: Option<&notify::Supervisor>,
    mut told: Option<std::os::fd::OwnedFd>,
) -> Waited {
    let pidfd = crate::sys::pidfd_open(main.as_raw()).ok();
    let mut supervisor = supervisor;
    loop {
        if crate::sys::terminate_requested() {
            return Waited::Exited(None);
        }
        match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::Exited(pid, code)) if pid == main => {
                return Waited::Exited(Some(ExitInfo::Code(code)));
            }
            Ok(WaitStatus::Signaled(pid, sig, _)) if pid == main => {
                return Waited::Exited(Some(ExitInfo::Signal(sig as i32)));
            }
            Ok(WaitStatus::StillAlive) => {}
            Ok(_) | Err(Errno::EINTR) => continue,
            Err(_) => return Waited::Exited(None),
        }
        let woke = wake(pidfd.as_ref(), supervisor, told.as_ref());
        // The call's write bound (its layer, `helper::layer`): past it, the tree goes.
        if super::layer::check_bound() {
            let _ = nix::sys::signal::kill(main, nix::sys::signal::Signal::SIGKILL);
        }
        match woke {
            Wake::Told => {
                let mut code = [0u8; 4];
                match told.as_ref().map(|fd| nix::unistd::read(fd, &mut code)) {
                    Some(Ok(4)) => return Waited::Told(i32::from_le_bytes(code)),
                    Some(Err(Errno::EINTR)) => {}
                    // Closed without a word (the init failed or was killed): its exit tells.
                    _ => told = None,
                }
            }
            Wake::LauncherGone => return Waited::Exited(None),
            Wake::Notification => {
                if let Some(s) = supervisor
                    && !s.serve_one()
                {
                    supervisor = None;
                }
            }
            // No task uses the filter any more (or its listener failed): stop polling it; a
            // later call would fail with ENOSYS, never run unsupervised.
            Wake::ListenerDone => supervisor = None,
            Wake::Other => {}
        }
    }
}

/// Why [`wake`] returned.
enum Wake {
    Told,
    LauncherGone,
    Notification,
    ListenerDone,
    Other,
}

/// Sleeps until the command may have ended (its pidfd is readable), the lifeline hangs up or
/// the supervisor's listener has a notification.
fn wake(
    pidfd: Option<&std::os::fd::OwnedFd>,
    supervisor: Option<&notify::Supervisor>,
    told: Option<&std::os::fd::OwnedFd>,
) -> Wake {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use std::os::fd::AsFd;
    // Installed by the launcher and never closed by the supervisor.
    let lifeline = crate::sys::borrow_inherited(crate::wire::LIFELINE_FD);
    let mut fds = vec![PollFd::new(lifeline, PollFlags::POLLIN)];
    // The launcher's pidfd beside it: a copy of the lifeline's write end left in some other
    // process cannot keep the tree alive once the launcher has ended.
    let launcher_at = super::inherited::launcher_pidfd().map(|fd| {
        fds.push(PollFd::new(fd, PollFlags::POLLIN));
        fds.len() - 1
    });
    if let Some(p) = pidfd {
        fds.push(PollFd::new(p.as_fd(), PollFlags::POLLIN));
    }
    let listener_at = supervisor.map(|s| {
        fds.push(PollFd::new(s.fd(), PollFlags::POLLIN));
        fds.len() - 1
    });
    let told_at = told.map(|fd| {
        fds.push(PollFd::new(fd.as_fd(), PollFlags::POLLIN));
        fds.len() - 1
    });
    let timeout = match (pidfd.is_some(), super::layer::bound_due_in()) {
        (true, Some(due)) => PollTimeout::from(due.as_millis().min(50_000) as u16),
        (false, Some(due)) => PollTimeout::from(due.as_millis().min(50) as u16),
        (true, None) => PollTimeout::NONE,
        (false, None) => PollTimeout::from(50u16),
    };
    if poll(&mut fds, timeout).is_err() {
        return Wake::Other;
    }
    let any = PollFlags::POLLIN | PollFlags::POLLHUP | PollFlags::POLLERR;
    let gone = |at: usize| fds[at].revents().is_some_and(|r| r.intersects(any));
    if gone(0) || launcher_at.is_some_and(gone) {
        return Wake::LauncherGone;
    }
    if told_at.is_some_and(gone) {
        return Wake::Told;
    }
    match listener_at.and_then(|at| fds[at].revents()) {
        Some(r) if r.contains(PollFlags::POLLIN) => Wake::Notification,
        Some(r) if r.intersects(PollFlags::POLLHUP | PollFlags::POLLERR | PollFlags::POLLNVAL) => {
            Wake::ListenerDone
        }
        _ => Wake::Other,
    }
}

/// SIGKILLs our children until none is left; orphans re-parent to us (subreaper) and are
/// caught on the next round.
pub fn kill_descendants() {
    let me = std::process::id() as i32;
    loop {
        match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) => {}
            Ok(_) | Err(Errno::EINTR) => continue,
            Err(_) => return, // ECHILD: nothing left
        }
        let mut kids = children_of(me);
        if kids.is_empty() {
            // The children file can miss a child that is forking right now; scan instead.
            kids = scan_children_of(me);
        }
        for pid in kids {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
        let _ = waitpid(None, None);
    }
}

fn children_of(parent: i32) -> Vec<i32> {
    // One read of our own children list (CONFIG_PROC_CHILDREN); the /proc scan is the fallback.
    let own = format!("/proc/{parent}/task/{parent}/children");
    if let Ok(list) = std::fs::read_to_string(own) {
        return list
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect();
    }
    scan_children_of(parent)
}

fn scan_children_of(parent: i32) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| ppid(*pid) == Some(parent))
        .collect()
}

fn ppid(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 2..];
    after.split(' ').nth(1)?.parse().ok()
}
