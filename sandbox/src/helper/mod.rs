//! The child side: the binary re-executed with [`HELPER_ARG`] confines itself and execs the
//! command. It reads its [`Plan`] from fd 3 and reports on fd 4 (see [`crate::protocol`]).
//!
//! Order (DESIGN.md): die-with-parent, new session, stdio (set up by the launcher),
//! namespaces and mounts, rlimits, chdir, close stray fds, drop capabilities, no_new_privs,
//! Landlock, seccomp last, exec with the allowlisted environment.

mod bpf;
mod caps;
pub(crate) mod cgroup;
mod exec;
mod landlock;
pub(crate) mod mounts;
pub(crate) mod namespaces;
mod notify;
pub(crate) mod pidns;
mod reaper;
mod rlimits;
mod scratch;
mod seccomp;
pub(crate) mod ucounts;
pub(crate) mod zygote;

pub use seccomp::compile as compile_seccomp;

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, RawFd};

use nix::sys::signal::Signal;

use crate::backend::Backend;
use crate::error::{SetupError, Stage};
use crate::plan::Plan;
use crate::protocol::{Enforcement, ExitInfo, Message};

/// The hidden first argument that turns the binary into the helper.
pub const HELPER_ARG: &str = "__zeroclaw-sandbox-helper";
/// Second argument for the stage that runs inside bubblewrap.
pub const INNER_ARG: &str = "inner";
/// Descriptor the plan is read from.
pub const PLAN_FD: RawFd = 3;
/// Descriptor reports are written to.
pub const REPORT_FD: RawFd = 4;
/// Descriptor whose end-of-file means the launcher is gone (it holds the write end for as
/// long as it cares about the command; works whatever thread spawned the helper, unlike
/// `PR_SET_PDEATHSIG`, which fires when the spawning *thread* exits).
pub const LIFELINE_FD: RawFd = 5;
/// Descriptor of the launcher's pidfd in a helper forked by the zygote (after a warm helper's
/// go socket): readable once the launcher process has ended, however it ended and whoever
/// still holds a copy of the lifeline's write end. Watched beside [`LIFELINE_FD`].
pub const LAUNCHER_FD: RawFd = 7;

/// Set in a helper forked by a zygote that had the launcher's pidfd: it is at [`LAUNCHER_FD`].
pub(crate) static WATCHES_LAUNCHER: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);
/// Exit code of the helper when confinement failed (the reason went over the report pipe).
pub const SETUP_FAILED: i32 = 125;

/// Call as the very first statement of `main`, before any runtime or thread exists: when the
/// process was started as the sandbox helper this confines it and never returns; otherwise it
/// returns immediately.
pub fn run_if_helper() {
    run_if_helper_with(&[]);
}

/// An in-process operation the helper can run after confinement instead of `execve`: it gets
/// the payload (the child's stdin) and returns the bytes for stdout (exit 0) or an error text
/// for stderr (exit 1).
pub type OpFn = fn(payload: &[u8]) -> Result<Vec<u8>, String>;

static OPS: std::sync::OnceLock<&'static [(&'static str, OpFn)]> = std::sync::OnceLock::new();

/// Like [`run_if_helper`], registering the operations [`crate::Sandbox::run_op`] may name.
pub fn run_if_helper_with(ops: &'static [(&'static str, OpFn)]) {
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() != Some(OsStr::new(HELPER_ARG)) {
        return;
    }
    let _ = OPS.set(ops);
    let second = args.next();
    if second.as_deref() == Some(OsStr::new(zygote::ZYGOTE_ARG)) {
        zygote::serve();
    }
    helper_exit(second.as_deref() == Some(OsStr::new(INNER_ARG)))
}

/// The helper proper (re-executed, or forked by the zygote): confine, run, exit.
fn helper_exit(inner: bool) -> ! {
    let code = match helper_main(inner) {
        Ok(code) => code,
        Err(e) => {
            send(&Message::Failed(e));
            SETUP_FAILED
        }
    };
    sys_exit(code)
}

/// Whether the process limit also binds uid 0 (a pids cgroup or the pid namespace's
/// `pid_max`), for the enforcement report.
pub(crate) static ROOT_PROCESS_LIMIT: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// The registered operation called `name`.
pub(crate) fn find_op(name: &str) -> Option<OpFn> {
    OPS.get()?.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
}

/// Ends a forked stage: its result becomes the exit code (a failure is reported first).
pub(crate) fn finish(result: Result<i32, SetupError>) -> ! {
    sys_exit(match result {
        Ok(code) => code,
        Err(e) => {
            send(&Message::Failed(e));
            SETUP_FAILED
        }
    })
}

fn sys_exit(code: i32) -> ! {
    let _ = std::io::stdout().flush();
    crate::sys::exit_now(code)
}

/// Writes one report line to [`REPORT_FD`] (best effort: the launcher may be gone).
pub(crate) fn send(msg: &Message) {
    send_all(std::slice::from_ref(msg));
}

/// Sends `msgs` in one write: the launcher wakes once for all of them.
pub(crate) fn send_all(msgs: &[Message]) {
    let lines: Vec<u8> = msgs.iter().flat_map(Message::encode).collect();
    let _ = nix::unistd::write(borrow(REPORT_FD), &lines);
}

fn borrow(fd: RawFd) -> std::os::fd::BorrowedFd<'static> {
    // SAFETY: REPORT_FD, LIFELINE_FD and (when WATCHES_LAUNCHER is set) LAUNCHER_FD are
    // installed by the launcher (or the zygote) before the helper starts and stay open for its
    // whole life; a borrow is used for one call.
    unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) }
}

fn helper_main(inner: bool) -> Result<i32, SetupError> {
    assert_single_threaded()?;
    set_cloexec(REPORT_FD)?;
    let plan = read_plan()?;
    run_plan(&plan, inner)
}

/// The helper stages in a child forked by a single-threaded launcher (see
/// [`crate::foreground`]): the plan is already in memory, stdio and the report and lifeline
/// pipes are installed on 0–2, [`REPORT_FD`] and [`LIFELINE_FD`]. Never returns.
pub(crate) fn run_forked(plan: &Plan) -> ! {
    let code = match set_cloexec(REPORT_FD).and_then(|_| run_plan(plan, false)) {
        Ok(code) => code,
        Err(e) => {
            send(&Message::Failed(e));
            SETUP_FAILED
        }
    };
    sys_exit(code)
}

fn run_plan(plan: &Plan, inner: bool) -> Result<i32, SetupError> {
    if inner {
        // Still holding CAP_SYS_ADMIN in bwrap's namespace (when root launched): mounts first.
        let sealed = mounts::seal_read_only_roots(&plan.mounts)?;
        // In bubblewrap's user namespace, with the host's values from the outer helper.
        ucounts::UserLimits::from_names(&plan.user_limits).apply()?;
        return exec::confine_and_exec(
            plan,
            Enforcement {
                namespaces: namespaces::names(plan.unshare_net),
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
    if let Some(fd) = launcher_pidfd() {
        let _ = set_cloexec(fd.as_raw_fd());
    }
    // Supervising backends watch the lifeline (and the launcher's pidfd); the exec-only ones
    // use the parent-death signal.
    let pdeathsig = matches!(plan.backend, Backend::None | Backend::Seatbelt);
    die_with_parent(plan.launcher_pid, pdeathsig.then_some(Signal::SIGKILL))?;
    new_session()?;
    // RLIMIT_NPROC bounds every uid but 0. For root, the namespace backend lowers its pid
    // namespace's pid_max (one write); the others need a pids cgroup (a directory, two writes,
    // and on cgroup v2 an RCU-synchronized migration: see `cgroup`).
    let pid_namespace_limit =
        plan.backend == Backend::Namespaces && pidns::usable(plan.limits.processes);
    let needs_cgroup = nix::unistd::geteuid().is_root()
        && !pid_namespace_limit
        && !matches!(plan.backend, Backend::None | Backend::Seatbelt);
    let cgroup = if needs_cgroup {
        cgroup::enter(plan.limits.processes)?
    } else {
        None
    };
    // The whole tree's memory (shared mappings and tmpfs files included), as root.
    let memory_cgroup = if nix::unistd::geteuid().is_root()
        && !matches!(plan.backend, Backend::None | Backend::Seatbelt)
    {
        cgroup::enter_memory(plan.limits.memory_bytes)?
    } else {
        None
    };
    ROOT_PROCESS_LIMIT.store(
        cgroup.is_some() || pid_namespace_limit,
        std::sync::atomic::Ordering::Relaxed,
    );
    let result = match plan.backend {
        Backend::Namespaces => namespaces::run(plan),
        Backend::Bubblewrap => namespaces::run_bubblewrap(plan),
        Backend::Landlock => reaper::run_landlock(plan),
        Backend::Seatbelt => exec::run_seatbelt(plan),
        Backend::None => exec::run_unconfined(plan),
    };
    // Every process of the call is reaped and the clean-up done: the launcher need not wait
    // for our exit (and the zygote's word on it) to return the outcome.
    if let Ok(code) = result {
        send(&Message::Ended(ExitInfo::Code(code)));
    }
    // Our own cgroup goes last, off the launcher's path: whoever reaps us may be gone by then
    // (a zygote ends with its `Sandbox`). A helper that dies first leaves it to its reaper.
    for cg in [cgroup, memory_cgroup].into_iter().flatten() {
        cg.remove();
    }
    result
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

/// The threads of this process.
pub(crate) fn thread_count() -> std::io::Result<usize> {
    Ok(std::fs::read_dir("/proc/self/task")?.count())
}

/// The helper must be single-threaded: namespaces, Landlock and seccomp apply per thread, and
/// fork is only safe without other threads.
fn assert_single_threaded() -> Result<(), SetupError> {
    let tasks =
        thread_count().map_err(|e| SetupError::os(Stage::Plan, "read_dir(/proc/self/task)", &e))?;
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

fn set_cloexec(fd: RawFd) -> Result<(), SetupError> {
    use nix::fcntl::{FcntlArg, FdFlag, fcntl};
    fcntl(borrow(fd), FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC))
        .map(drop)
        .map_err(|e| SetupError::os(Stage::Plan, "fcntl(report fd, FD_CLOEXEC)", &e.into()))
}

fn read_plan() -> Result<Plan, SetupError> {
    // SAFETY: the launcher installs the plan's read end at PLAN_FD; the helper takes ownership
    // here exactly once and nothing else refers to it.
    let mut file = unsafe { std::fs::File::from_raw_fd(PLAN_FD) };
    let mut buf = Vec::new();
    file.read_to_end(&mut buf)
        .map_err(|e| SetupError::os(Stage::Plan, "read(plan fd 3)", &e))?;
    serde_json::from_slice(&buf)
        .map_err(|e| SetupError::new(Stage::Plan, format!("parse plan: {e}")))
}

/// Dies with the launcher: optionally `PR_SET_PDEATHSIG`, then a check that it did not
/// already die (the supervisors also watch [`LIFELINE_FD`]).
fn die_with_parent(launcher: u32, signal: Option<Signal>) -> Result<(), SetupError> {
    if let Some(signal) = signal {
        nix::sys::prctl::set_pdeathsig(signal).map_err(|e| {
            SetupError::os(Stage::DieWithParent, "prctl(PR_SET_PDEATHSIG)", &e.into())
        })?;
    }
    if zygote::FORKED.load(std::sync::atomic::Ordering::Relaxed) {
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
pub(crate) fn launcher_pidfd() -> Option<std::os::fd::BorrowedFd<'static>> {
    WATCHES_LAUNCHER
        .load(std::sync::atomic::Ordering::Relaxed)
        .then(|| borrow(LAUNCHER_FD))
}

/// Closes the launcher's pidfd in a child of the helper that has no use for it (the pid
/// namespace's init, whose processes could reach its descriptors): a pidfd of the daemon must
/// never be within the confined tree's reach.
pub(crate) fn close_launcher_pidfd() {
    if WATCHES_LAUNCHER.swap(false, std::sync::atomic::Ordering::Relaxed) {
        let _ = nix::unistd::close(LAUNCHER_FD);
    }
}

/// Whether the launcher has let the command go or ended: its lifeline hung up, or its pidfd
/// says the process is gone.
pub(crate) fn launcher_gone() -> bool {
    lifeline_hung_up() || launcher_pidfd().is_some_and(zygote::readable)
}

fn lifeline_hung_up() -> bool {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    let mut fds = [PollFd::new(borrow(LIFELINE_FD), PollFlags::POLLIN)];
    poll(&mut fds, PollTimeout::ZERO).is_ok()
        && fds[0]
            .revents()
            .is_some_and(|r| r.intersects(PollFlags::POLLHUP | PollFlags::POLLERR))
}

/// A new session: no controlling terminal, so no TIOCSTI into the user's terminal.
fn new_session() -> Result<(), SetupError> {
    nix::unistd::setsid()
        .map(drop)
        .map_err(|e| SetupError::os(Stage::Session, "setsid()", &e.into()))
}

/// The exit code a shell would show for `info`.
pub(crate) fn shell_code(info: ExitInfo) -> i32 {
    match info {
        ExitInfo::Code(c) => c,
        ExitInfo::Signal(s) => 128 + s,
    }
}
