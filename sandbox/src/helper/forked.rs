//! A single-threaded caller's way into the child side (`zeroclaw sandbox run`, no re-executed
//! binary): the helper stages in a child forked from the caller or, on the namespace backend,
//! the pid namespace's init cloned by the caller itself ([`super::namespaces::start_init`]);
//! and the clean-up the caller owes each once the run has ended.

use nix::errno::Errno;
use nix::sys::wait::{WaitPidFlag, waitpid};
use nix::unistd::Pid;

use super::{cgroup, mounts, namespaces};
use crate::error::{SetupError, Stage};
use crate::plan::Plan;
use crate::wire::{LIFELINE_FD, REPORT_FD};

/// What the caller started: its pid, and which kind it is.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Started {
    /// A forked helper, which kills and reaps the tree on SIGTERM.
    Helper(i32),
    /// The pid namespace's init, which takes the whole namespace with it on SIGKILL.
    Init(i32),
}

/// Starts `plan` from a single-threaded caller. In the child, `install` runs first: it must put
/// the stdio on 0–2, the report and lifeline pipes on [`REPORT_FD`] and [`LIFELINE_FD`] and a
/// proxy call's plan socket on [`crate::wire::PLAN_FD`] (exiting on failure); every other
/// inherited descriptor is closed after it. The child sends the proxy's listeners back on that
/// socket once it has made the call's network namespace.
pub(crate) fn start(plan: &Plan, install: impl FnOnce()) -> Result<Started, SetupError> {
    // The namespace backend needs no helper between us and the init: one process fewer.
    if namespaces::can_start_init(plan) {
        return namespaces::start_init(plan, install).map(Started::Init);
    }
    match crate::sys::fork().map_err(|e| SetupError::os(Stage::Spawn, "fork()", &e))? {
        None => {
            install();
            // Only 0–2, the report, the lifeline (and a proxy call's plan socket) stay: fd 3
            // and up may be anything of the caller's.
            let mut keep = vec![REPORT_FD, LIFELINE_FD];
            keep.extend(super::egress::channel_fd(plan));
            let _ = crate::sys::close_from_except(3, &keep);
            super::run_forked(plan)
        }
        Some(pid) => Ok(Started::Helper(pid)),
    }
}

impl Started {
    /// The started process.
    pub(crate) fn pid(self) -> i32 {
        match self {
            Started::Helper(pid) | Started::Init(pid) => pid,
        }
    }

    /// Once the run has ended: the clean-up from outside, and the reaping.
    pub(crate) fn finish(self, plan: &Plan) {
        match self {
            // The init scrubbed inside, unless it was killed: again from outside.
            Started::Init(pid) => {
                mounts::scrub(&plan.scrub);
                // Reaped here if it has ended by now; otherwise when the caller exits.
                let _ = waitpid(Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG));
            }
            Started::Helper(pid) => {
                // The helper scrubs the workspace again from outside after the tree has
                // ended: wait for it, so that nothing of the run still changes the workspace
                // once we have returned (a path the caller creates next must stay).
                while let Err(Errno::EINTR) = waitpid(Pid::from_raw(pid), None) {}
                cgroup::remove_after(pid as u32);
            }
        }
    }
}
