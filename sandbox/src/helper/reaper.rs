//! Lifetime: reaping in the pid namespace's init, and for the Landlock-only backend a child
//! subreaper that kills every descendant when the command ends or on SIGTERM (timeout,
//! cancellation, launcher death), `setsid`/double-forked orphans included.

use nix::errno::Errno;
use nix::sys::signal::{Signal, kill};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;

use super::{exec, scratch, send, shell_code};
use crate::error::{SetupError, Stage};
use crate::plan::Plan;
use crate::protocol::{Enforcement, ExitInfo, Message};

/// Reaps every child until `main` exits; returns how it ended.
pub fn reap_until(main: Pid) -> ExitInfo {
    loop {
        match waitpid(None, None) {
            Ok(WaitStatus::Exited(pid, code)) if pid == main => return ExitInfo::Code(code),
            Ok(WaitStatus::Signaled(pid, sig, _)) if pid == main => {
                return ExitInfo::Signal(sig as i32);
            }
            Ok(_) | Err(Errno::EINTR) => continue,
            Err(_) => return ExitInfo::Code(super::SETUP_FAILED),
        }
    }
}

/// Landlock-only backend: subreaper, scratch dirs, the confined command as a child.
pub fn run_landlock(plan: &Plan) -> Result<i32, SetupError> {
    let scratch_dir = plan
        .scratch
        .clone()
        .ok_or_else(|| SetupError::new(Stage::Scratch, "no scratch directory in the plan"))?;
    scratch::create(&scratch_dir)?;
    let result = supervise(plan);
    scratch::remove(&scratch_dir);
    super::mounts::scrub(&plan.scrub);
    result
}

fn supervise(plan: &Plan) -> Result<i32, SetupError> {
    become_subreaper()?;
    let child = crate::sys::fork().map_err(|e| SetupError::os(Stage::Init, "fork()", &e))?;
    let Some(pid) = child else {
        let report = Enforcement {
            notes: vec![
                "landlock backend: no namespaces; /tmp is not private (TMPDIR is), other processes' \
                 /proc/<pid>/cmdline are readable, all sockets are denied when network is denied"
                    .into(),
                "protected paths (.git/hooks, .git/config) are NOT enforced on this backend".into(),
            ],
            ..Enforcement::default()
        };
        if let Err(e) = nix::sys::prctl::set_pdeathsig(Signal::SIGKILL) {
            return Err(SetupError::os(
                Stage::DieWithParent,
                "prctl(PR_SET_PDEATHSIG)",
                &e.into(),
            ));
        }
        super::finish(exec::confine_and_exec(plan, report));
    };
    Ok(supervise_child(Pid::from_raw(pid), true))
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
    let exit = wait_main(main);
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

/// Waits for the command; `None` when SIGTERM asked us to stop first.
fn wait_main(main: Pid) -> Option<ExitInfo> {
    let pidfd = crate::sys::pidfd_open(main.as_raw()).ok();
    loop {
        if crate::sys::terminate_requested() {
            return None;
        }
        match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::Exited(pid, code)) if pid == main => return Some(ExitInfo::Code(code)),
            Ok(WaitStatus::Signaled(pid, sig, _)) if pid == main => {
                return Some(ExitInfo::Signal(sig as i32));
            }
            Ok(WaitStatus::StillAlive) => {}
            Ok(_) | Err(Errno::EINTR) => continue,
            Err(_) => return None,
        }
        if launcher_gone(pidfd.as_ref()) {
            LAUNCHER_GONE.store(true, std::sync::atomic::Ordering::Relaxed);
            return None;
        }
    }
}

/// Set when the lifeline hung up: the launcher will not clean up after us.
pub static LAUNCHER_GONE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Sleeps until the command may have ended (its pidfd is readable) or the lifeline hangs
/// up; true when the launcher is gone.
fn launcher_gone(pidfd: Option<&std::os::fd::OwnedFd>) -> bool {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use std::os::fd::{AsFd, BorrowedFd};
    // SAFETY: LIFELINE_FD is installed by the launcher and never closed by the supervisor.
    let lifeline = unsafe { BorrowedFd::borrow_raw(super::LIFELINE_FD) };
    let mut fds = vec![PollFd::new(lifeline, PollFlags::POLLIN)];
    if let Some(p) = pidfd {
        fds.push(PollFd::new(p.as_fd(), PollFlags::POLLIN));
    }
    let timeout = if pidfd.is_some() {
        PollTimeout::NONE
    } else {
        PollTimeout::from(50u16)
    };
    match poll(&mut fds, timeout) {
        Ok(_) => fds[0].revents().is_some_and(|r| {
            r.intersects(PollFlags::POLLIN | PollFlags::POLLHUP | PollFlags::POLLERR)
        }),
        Err(_) => false,
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
