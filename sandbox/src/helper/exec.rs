//! The last stages, shared by every backend: rlimits, chdir, close stray fds, drop
//! capabilities, no_new_privs, Landlock, seccomp, report, `execve` with the plan's environment.

use std::ffi::{CString, OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::report::send;
use super::{caps, inside_check, landlock, rlimits, seccomp};
use crate::error::{SetupError, Stage};
use crate::plan::Plan;
use crate::wire::REPORT_FD;
use crate::wire::{Enforcement, Message};

/// Confines the calling process per `plan` and execs the command; returns only on failure.
pub fn confine_and_exec(plan: &Plan, report: Enforcement) -> Result<i32, SetupError> {
    confine_and_exec_with(plan, report, None, None)
}

/// [`confine_and_exec`] in a root whose host root is being detached in the background: the
/// command waits at `gate` once confined, before it reports ready and execs.
pub fn confine_and_exec_gated(
    plan: &Plan,
    report: Enforcement,
    gate: Option<&super::mounts::DetachGate>,
) -> Result<i32, SetupError> {
    confine_and_exec_with(plan, report, None, gate)
}

/// [`confine_and_exec`] on the Landlock-only rung: `supervisor` is this child's end of a
/// socketpair to the helper, which supervises mode and time changes (`notify/`); the
/// listener of that last seccomp filter is sent over it just before the command runs.
pub fn confine_and_exec_supervised(
    plan: &Plan,
    report: Enforcement,
    supervisor: std::os::fd::OwnedFd,
) -> Result<i32, SetupError> {
    confine_and_exec_with(plan, report, Some(supervisor), None)
}

/// The command of a warm init that has confined itself ([`confine_self`] before its call
/// arrived): limits, cwd, stray descriptors, report, `execve`.
pub fn exec_confined(plan: &Plan, mut report: Enforcement) -> Result<i32, SetupError> {
    let target = prepare(plan, &mut report, &[])?;
    send(&Message::Ready(report));
    run_target(target, plan)
}

/// Capabilities, no_new_privs, Landlock and seccomp (last) on the calling process, then the
/// check from inside that they hold (`inside_check`); what it forks afterwards inherits them.
pub fn confine_self(plan: &Plan, report: &mut Enforcement) -> Result<(), SetupError> {
    caps::drop_all()?;
    report.capabilities_dropped = true;
    nix::sys::prctl::set_no_new_privs()
        .map_err(|e| SetupError::os(Stage::NoNewPrivs, "prctl(PR_SET_NO_NEW_PRIVS)", &e.into()))?;
    report.no_new_privs = true;
    let (abi, status) = if super::fault::skip(plan, "landlock") {
        // A test build's broken confinement: reported as applied, not applied.
        (crate::sys::landlock_abi().unwrap_or(0), "full".to_string())
    } else {
        landlock::apply(&plan.landlock, plan.allow_partial)?
    };
    report.landlock_abi = abi;
    report.landlock = status;
    seccomp::apply(&plan.seccomp)?;
    report.seccomp = true;
    // Proven from inside before anything runs (a failure fails the call closed).
    inside_check::check(plan, report)
}

/// The report's backend and notes, rlimits, cwd, the target, stray descriptors closed (but
/// `keep`).
fn prepare(
    plan: &Plan,
    report: &mut Enforcement,
    keep: &[std::os::fd::RawFd],
) -> Result<Target, SetupError> {
    report.backend = plan.backend.name().to_string();
    if !super::report::ROOT_PROCESS_LIMIT.load(std::sync::atomic::Ordering::Relaxed)
        && nix::unistd::geteuid().is_root()
    {
        report.notes.push(
            "process limit not enforced: uid 0 ignores RLIMIT_NPROC, and neither a pids cgroup nor a per-namespace pid_max is usable"
                .into(),
        );
    }
    rlimits::apply(&plan.process.limits)?;
    report.rlimits = true;
    set_umask(plan);
    std::env::set_current_dir(&plan.cwd)
        .map_err(|e| SetupError::os(Stage::Chdir, format!("chdir({})", plan.cwd.display()), &e))?;
    let target = target(plan)?;
    crate::sys::close_from_except(REPORT_FD + 1, keep)
        .map_err(|e| SetupError::os(Stage::CloseFds, "close_range(5, ~0)", &e))?;
    Ok(target)
}

fn confine_and_exec_with(
    plan: &Plan,
    mut report: Enforcement,
    supervisor: Option<std::os::fd::OwnedFd>,
    gate: Option<&super::mounts::DetachGate>,
) -> Result<i32, SetupError> {
    use std::os::fd::AsRawFd;
    let keep: Vec<_> = (supervisor.as_ref().map(AsRawFd::as_raw_fd))
        .into_iter()
        .chain(gate.and_then(|g| g.fd()))
        .collect();
    let target = prepare(plan, &mut report, &keep)?;
    confine_self(plan, &mut report)?;
    // Landlock has no right for chmod/utimes (nor for connecting to a pathname Unix socket):
    // on the Landlock-only rung they go to the helper, which performs them only inside the
    // writable roots. Without it, refuse to run.
    match supervisor {
        // And connect: outside Unix sockets stay out of reach.
        Some(sock) => super::seccomp_notify::install_and_hand_over(sock)?,
        None if plan.seccomp.deny_attr_changes => {
            return Err(SetupError::new(
                Stage::Seccomp,
                "no supervisor for chmod/utimes on the Landlock-only rung",
            ));
        }
        None => {}
    }
    if let Some(gate) = gate {
        gate.pass()?;
    }
    send(&Message::Ready(report));
    run_target(target, plan)
}

/// The plan's umask for the calling process (and what it forks or execs): the helper sets it
/// first, for what it writes on the command's behalf; every exec path sets it again (a warm
/// init, bubblewrap's inner stage), whatever the launcher's own was.
pub(super) fn set_umask(plan: &Plan) {
    nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(
        plan.process.umask & 0o777,
    ));
}

/// What the helper ends with: a program to exec or a registered operation.
pub(super) enum Target {
    Program(PathBuf),
    Op(super::ops::OpFn),
}

pub(super) fn target(plan: &Plan) -> Result<Target, SetupError> {
    match &plan.op {
        Some(name) => super::ops::find(name).map(Target::Op).ok_or_else(|| {
            SetupError::new(Stage::Exec, format!("unknown sandbox operation {name:?}"))
                .hint("register it with zeroclaw_sandbox::helper::run_if_helper_with")
        }),
        None => resolve(plan).map(Target::Program),
    }
}

pub(super) fn run_target(target: Target, plan: &Plan) -> Result<i32, SetupError> {
    match target {
        Target::Op(op) => Ok(run_op(op)),
        Target::Program(program) => {
            let err = exec_path(&program, &plan.argv[1..], &plan.env);
            Err(SetupError::os(
                Stage::Exec,
                format!("execve({})", program.display()),
                &err,
            ))
        }
    }
}

/// Runs `op` on stdin; its output goes to stdout (exit 0) or its error to stderr (exit 1).
fn run_op(op: super::ops::OpFn) -> i32 {
    use std::io::{Read, Write};
    let mut payload = Vec::new();
    if let Err(e) = std::io::stdin().read_to_end(&mut payload) {
        let _ = writeln!(std::io::stderr(), "reading the operation's payload: {e}");
        return 1;
    }
    match op(&payload) {
        Ok(out) => {
            let mut stdout = std::io::stdout().lock();
            if stdout.write_all(&out).and_then(|_| stdout.flush()).is_ok() {
                0
            } else {
                1
            }
        }
        Err(text) => {
            let _ = std::io::stderr().write_all(text.as_bytes());
            1
        }
    }
}

/// Finds `argv[0]` on the plan's PATH (inside the sandbox), as `execvp` would.
fn resolve(plan: &Plan) -> Result<PathBuf, SetupError> {
    let Some(name) = plan.argv.first() else {
        return Err(SetupError::new(Stage::Exec, "empty command"));
    };
    if name.as_bytes().contains(&b'/') {
        return Ok(PathBuf::from(name));
    }
    let path = plan
        .env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| is_executable(p))
        .ok_or_else(|| {
            SetupError::new(
                Stage::Exec,
                format!("{}: command not found", name.to_string_lossy()),
            )
            .hint("install it inside an allowed root, or allow its directory with --allow-read")
        })
}

fn is_executable(p: &Path) -> bool {
    nix::unistd::access(p, nix::unistd::AccessFlags::X_OK).is_ok() && p.is_file()
}

fn cstr(s: &OsStr) -> CString {
    CString::new(s.as_bytes()).unwrap_or_default()
}

/// `execve(program, [program, args...], env)` with default signal handling; returns the error
/// when it fails.
pub fn exec_path(
    program: &Path,
    args: &[OsString],
    env: &[(OsString, OsString)],
) -> std::io::Error {
    let mut argv = vec![cstr(program.as_os_str())];
    argv.extend(args.iter().map(|a| cstr(a)));
    let envp: Vec<CString> = env
        .iter()
        .map(|(k, v)| {
            let mut kv = k.as_bytes().to_vec();
            kv.push(b'=');
            kv.extend_from_slice(v.as_bytes());
            CString::new(kv).unwrap_or_default()
        })
        .collect();
    crate::sys::default_signals();
    let Err(e) = nix::unistd::execve(&cstr(program.as_os_str()), &argv, &envp);
    e.into()
}
