//! The child side: the binary re-executed with [`HELPER_ARG`] (or forked by its zygote, or by
//! a single-threaded caller) confines itself and runs the command. It reads its [`Plan`] from
//! [`PLAN_FD`] and reports on [`REPORT_FD`] (see [`crate::wire`]). Nothing here imports the
//! daemon side; both depend on the shared modules (plan, wire, error, host, sys).
//!
//! Order (DESIGN.md): die-with-parent, new session, stdio (set up by the launcher),
//! namespaces and mounts, rlimits, chdir, close stray fds, drop capabilities, no_new_privs,
//! Landlock, seccomp last, the check from inside that they hold (`inside_check`), exec with
//! the allowlisted environment.
//!
//! The ways in: [`run_if_helper`] (a re-executed helper, the zygote, bubblewrap's inner
//! stage), the zygote's fork ([`zygote`]), and [`forked`] for a single-threaded caller.

mod backends;
mod bpf;
mod caps;
mod cgroup;
mod discarded;
mod egress;
mod exec;
mod fault;
pub(crate) mod forked;
mod git_global;
mod git_late;
mod idmap;
mod inherited;
mod inside_check;
mod landlock;
mod layer;
mod mounts;
mod namespaces;
mod ops;
mod pidns;
mod reaper;
mod report;
mod rlimits;
mod scratch;
mod seccomp;
mod seccomp_notify;
mod ucounts;
mod zygote;

pub use ops::OpFn;
pub use seccomp::compile as compile_seccomp;

use std::ffi::OsStr;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;

use nix::sys::signal::Signal;

use crate::backend::Backend;
use crate::error::{SetupError, Stage};
use crate::plan::Plan;
use crate::wire::{
    Enforcement, HELPER_ARG, INNER_ARG, LIFELINE_FD, PLAN_FD, REPORT_FD, ZYGOTE_ARG,
};
use inherited::set_cloexec;
use report::ROOT_PROCESS_LIMIT;

/// Call as the very first statement of `main`, before any runtime or thread exists: when the
/// process was started as the sandbox helper this confines it and never returns; otherwise it
/// returns immediately.
pub fn run_if_helper() {
    run_if_helper_with(&[]);
}

/// Like [`run_if_helper`], registering the operations [`crate::Sandbox::run_op`] may name.
pub fn run_if_helper_with(ops: &'static [(&'static str, OpFn)]) {
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() != Some(OsStr::new(HELPER_ARG)) {
        return;
    }
    ops::register(ops);
    let second = args.next();
    if second.as_deref() == Some(OsStr::new(ZYGOTE_ARG)) {
        zygote::serve(helper_exit);
    }
    helper_exit(second.as_deref() == Some(OsStr::new(INNER_ARG)))
}

/// The helper proper (re-executed, or forked by the zygote): confine, run, exit.
fn helper_exit(inner: bool) -> ! {
    report::finish(helper_main(inner))
}

fn helper_main(inner: bool) -> Result<i32, SetupError> {
    assert_single_threaded()?;
    set_cloexec(REPORT_FD)?;
    let plan = read_plan(inner)?;
    run_plan(&plan, inner)
}

/// The helper stages in a child forked by a single-threaded launcher (see
/// [`forked`]): the plan is already in memory, stdio and the report and lifeline
/// pipes are installed on 0–2, [`REPORT_FD`] and [`LIFELINE_FD`]. Never returns.
fn run_forked(plan: &Plan) -> ! {
    report::finish(set_cloexec(REPORT_FD).and_then(|_| run_plan(plan, false)))
}

fn run_plan(plan: &Plan, inner: bool) -> Result<i32, SetupError> {
    exec::set_umask(plan);
    if inner {
        // In bwrap's network namespace: a proxy call's listeners go back first.
        egress::send_from_inner(plan)?;
        // Still holding CAP_SYS_ADMIN in bwrap's namespace (when root launched): mounts first.
        // Launched by another user the stage may hold it too, over its own mount namespace
        // only (transparent egress): the seal is root's (bwrap made its empty layer then).
        let sealed = plan.seals_in_bwrap() && mounts::seal_read_only_roots(&plan.mounts)?;
        if plan.seals_in_bwrap() {
            mounts::layer_in_bwrap(&plan.mounts)?;
        }
        // Over the seal (bwrap left them to this stage, `bubblewrap.rs`).
        if plan.seals_in_bwrap() || plan.egress.inner_namespaces {
            mounts::bind_files(&plan.mounts)?;
        }
        // In bubblewrap's user namespace, with the host's values from the outer helper.
        ucounts::UserLimits::from_names(&plan.process.user_limits).apply()?;
        return backends::bubblewrap::inner(
            plan,
            Enforcement {
                namespaces: namespaces::names(plan.egress.own_namespace),
                private_tmp: true,
                protected_paths: true,
                notes: (!sealed)
                    .then(|| mounts::UNSEALED.to_string())
                    .into_iter()
                    .collect(),
                ..Enforcement::default()
            },
        );
    }
    let _ = set_cloexec(LIFELINE_FD);
    if let Some(fd) = inherited::launcher_pidfd() {
        let _ = set_cloexec(fd.as_raw_fd());
    }
    // Supervising backends watch the lifeline (and the launcher's pidfd); the exec-only ones
    // use the parent-death signal.
    let pdeathsig = matches!(plan.backend, Backend::None | Backend::Seatbelt);
    inherited::die_with_parent(plan.launcher_pid, pdeathsig.then_some(Signal::SIGKILL))?;
    inherited::new_session()?;
    // RLIMIT_NPROC bounds every uid but 0. For root, the namespace backend lowers its pid
    // namespace's pid_max (one write); the others need a pids cgroup (a directory, two writes,
    // and on cgroup v2 an RCU-synchronized migration: see `cgroup`).
    let pid_namespace_limit = plan.backend == Backend::Namespaces
        && crate::host::pid_max::usable(plan.process.limits.processes);
    let needs_cgroup = nix::unistd::geteuid().is_root()
        && !pid_namespace_limit
        && !matches!(plan.backend, Backend::None | Backend::Seatbelt);
    let cgroup = if needs_cgroup {
        cgroup::enter(plan.process.limits.processes)?
    } else {
        None
    };
    // The whole tree's memory (shared mappings and tmpfs files included), as root.
    let memory_cgroup = if nix::unistd::geteuid().is_root()
        && !matches!(plan.backend, Backend::None | Backend::Seatbelt)
    {
        match cgroup::enter_memory(plan.process.limits.memory_bytes) {
            Ok(memory) => memory,
            Err(e) => {
                // The pids cgroup is ours to remove too.
                if let Some(cg) = cgroup {
                    cg.remove();
                }
                return Err(e);
            }
        }
    } else {
        None
    };
    ROOT_PROCESS_LIMIT.store(cgroup.is_some() || pid_namespace_limit, Ordering::Relaxed);
    let result = backends::run(plan);
    // Every process of the call is reaped and the clean-up done: the launcher need not wait
    // for our exit (and the zygote's word on it) to return the outcome.
    if let Ok(code) = result {
        report::ended(code);
    }
    // Our own cgroup goes last, off the launcher's path: whoever reaps us may be gone by then
    // (a zygote ends with its `Sandbox`). A helper that dies first leaves it to its reaper.
    for cg in [cgroup, memory_cgroup].into_iter().flatten() {
        cg.remove();
    }
    result
}

/// The helper must be single-threaded: namespaces, Landlock and seccomp apply per thread, and
/// fork is only safe without other threads.
fn assert_single_threaded() -> Result<(), SetupError> {
    let tasks = crate::host::thread_count()
        .map_err(|e| SetupError::os(Stage::Plan, "read_dir(/proc/self/task)", &e))?;
    if tasks == 1 {
        Ok(())
    } else {
        Err(SetupError::new(
            Stage::Plan,
            format!("helper has {tasks} threads, expected 1"),
        )
        .hint("call zeroclaw_sandbox::helper::run_if_helper() first thing in main"))
    }
}

fn read_plan(inner: bool) -> Result<Plan, SetupError> {
    // The launcher installs the plan's read end at PLAN_FD.
    let mut file = std::fs::File::from(crate::sys::take_inherited(PLAN_FD));
    let mut buf = Vec::new();
    file.read_to_end(&mut buf)
        .map_err(|e| SetupError::os(Stage::Plan, "read(plan fd 3)", &e))?;
    let plan: Plan = serde_json::from_slice(&buf)
        .map_err(|e| SetupError::new(Stage::Plan, format!("parse plan: {e}")))?;
    if plan.egress.ports.is_some() && !plan.egress.on_host && !inner {
        // The plan socket carries the proxy's listeners back (`egress::send_listeners`; the
        // inner stage's plan is a memfd, its socket on `EGRESS_FD`; host-loopback listeners
        // were bound by the launcher).
        let _ = std::os::fd::IntoRawFd::into_raw_fd(file);
    }
    Ok(plan)
}
