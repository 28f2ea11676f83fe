//! The bubblewrap backend's child-side entry: the helper execs bwrap, which runs our inner
//! stage (`helper/mod.rs`, [`crate::wire::INNER_ARG`]) inside its namespaces.

use nix::unistd::Pid;

use super::super::{exec, mounts, reaper};
use crate::error::{SetupError, Stage};
use crate::plan::{MountOp, Plan};

/// Bubblewrap backend: exec bwrap, which runs our inner stage (Landlock, seccomp, caps,
/// rlimits) inside its namespaces. The plan for the inner stage travels in a memfd on fd 3;
/// a proxy call's plan socket goes along on [`crate::wire::EGRESS_FD`].
pub(crate) fn run(plan: &Plan) -> Result<i32, SetupError> {
    use std::os::fd::AsRawFd;
    // Off the plan's number before the memfd takes it.
    let egress = super::super::egress::keep_for_inner(plan)?;
    mounts::create_placeholders(&plan.placeholders)?;
    let bwrap = plan
        .bwrap
        .clone()
        .ok_or_else(|| SetupError::new(Stage::Bubblewrap, "no bwrap executable in the plan"))?;
    let helper = std::fs::read_link("/proc/self/exe")
        .map_err(|e| SetupError::os(Stage::Bubblewrap, "readlink(/proc/self/exe)", &e))?;
    // A setuid-root bwrap refuses --cap-add to other users: their inner stage then leaves
    // the per-user counts as they are (doctor says so).
    let mut inner = plan.clone();
    let setuid = bwrap.refuses_cap_add;
    if setuid {
        inner.process.user_limits.clear();
    }
    // Transparent egress needs the inner stage to hold CAP_NET_ADMIN over its network
    // namespace and CAP_SYS_ADMIN over its mounts. Root launched, bwrap keeps it those over
    // bwrap's own namespaces. Launched by another user, bwrap runs the stage in a user
    // namespace nested below the one owning them: bwrap keeps it the capabilities in that
    // nested namespace, where the stage makes a network and a mount namespace of its own. A
    // setuid-root bwrap keeps other users nothing: the proxy variables only there.
    if inner.egress.transparent.is_some() && !inner.seals_in_bwrap() {
        if setuid {
            inner.egress.transparent = None;
            inner
                .mounts
                .retain(|op| !matches!(op, MountOp::File { .. }));
        } else {
            inner.egress.inner_namespaces = true;
        }
    }
    let json = serde_json::to_vec(&inner)
        .map_err(|e| SetupError::new(Stage::Bubblewrap, format!("encode plan: {e}")))?;
    let memfd = crate::sys::memfd_with(&json)
        .map_err(|e| SetupError::os(Stage::Bubblewrap, "memfd_create(plan)", &e))?;
    let io = |e: std::io::Error| SetupError::os(Stage::Bubblewrap, "dup2(plan/report fd)", &e);
    crate::sys::dup_onto(memfd.as_raw_fd(), crate::wire::PLAN_FD).map_err(io)?;
    crate::sys::dup_onto(crate::wire::REPORT_FD, crate::wire::REPORT_FD).map_err(io)?;
    // Only now: a guard opened earlier could get PLAN_FD's number and be replaced by the plan.
    let mut guards = mounts::guard_denied(&plan.placeholders)?;
    let layer = super::super::layer::make(plan)?;
    // Git hook: a new repository's private stage (see `crate::git::stage`).
    let result = crate::git::stage::prepare(plan).and_then(|()| {
        run_bwrap_guarded(&inner, &bwrap.path, &helper, (memfd, egress), &mut guards)
    });
    let (refused, empty) = crate::git::stage::finish_leaving(plan, |git| guards.alone(git));
    super::super::report::git_refusals(refused);
    // bwrap has exited, and every process of its namespaces with it (`run_bwrap_guarded`).
    let landed = super::super::layer::land(plan, layer);
    // Denied-path placeholders are gone when the call ends; the git stage's empty parts and
    // its `.git` placeholder go just after (see `crate::git::stage::finish_leaving`).
    let git_placeholder = guards.split_off(|p| crate::git::stage::is_stage_git(plan, p));
    guards.release();
    if let Ok(code) = result {
        super::super::report::ended(code);
    }
    super::super::layer::release(landed);
    empty.remove();
    git_placeholder.release();
    result
}

/// Bubblewrap's inner stage, once its mounts are done: forks the command, confined in the
/// child, and waits for it, so that afterwards it can tell whether the call left files in
/// its private tmpfs (`helper::discarded`) — bwrap's namespaces end with its child, so
/// nobody outside could look. The waiting stage drops every capability, is not dumpable and
/// keeps none of the command's stdio; its exit code is the command's as bwrap reports one
/// (128 + signal), so nothing changes for the helper above bwrap.
pub(crate) fn inner(plan: &Plan, report: crate::wire::Enforcement) -> Result<i32, SetupError> {
    super::super::git_global::write(plan);
    let usage = super::super::discarded::Usage::before(plan);
    let child = crate::sys::fork().map_err(|e| SetupError::os(Stage::Init, "fork()", &e))?;
    let Some(pid) = child else {
        super::super::report::finish(exec::confine_and_exec(plan, report));
    };
    super::super::caps::drop_all()?;
    // Unconfined by our Landlock and seccomp stages: not dumpable, so the command cannot
    // reach its memory or descriptors through `/proc/<pid>` (that needs CAP_SYS_PTRACE).
    nix::sys::prctl::set_dumpable(false)
        .map_err(|e| SetupError::os(Stage::Init, "prctl(PR_SET_DUMPABLE)", &e.into()))?;
    for fd in 0..=2 {
        let _ = nix::unistd::close(fd);
    }
    let exit = reaper::reap_until(Pid::from_raw(pid));
    if let Some(discarded) = usage.after() {
        super::super::report::send(&discarded);
    }
    if let Some(changed) = super::super::git_global::changed(plan) {
        super::super::report::send(&changed);
    }
    Ok(super::super::report::shell_code(exit))
}

/// The rest of [`run`], the denied-path placeholders held (closed in bwrap's
/// process before it runs); `passed`: the plan's memfd and a proxy call's plan socket, ours
/// to close once bwrap has them.
fn run_bwrap_guarded(
    plan: &Plan,
    bwrap: &std::path::Path,
    helper: &std::path::Path,
    passed: (std::os::fd::OwnedFd, Option<std::os::fd::OwnedFd>),
    guards: &mut mounts::Guards,
) -> Result<i32, SetupError> {
    let mut outer = plan.clone();
    outer.mounts = mounts::bwrap_binds(&plan.mounts)?;
    let args = crate::bubblewrap::args(&outer, helper);
    reaper::become_subreaper()?;
    let me = nix::unistd::getpid();
    let child = crate::sys::fork().map_err(|e| SetupError::os(Stage::Bubblewrap, "fork()", &e))?;
    let Some(pid) = child else {
        guards.forget();
        // After the guards are gone: none of them can be on its number.
        if let Some(socket) = &passed.1
            && let Err(e) = super::super::egress::pass_to_inner(socket)
        {
            super::super::report::finish(Err(e));
        }
        // bwrap's --die-with-parent arms the same signal only once it has parsed its
        // arguments, and never checks whether we are already gone: armed here, before
        // execve (which keeps it), and our parent checked after arming.
        if nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL).is_err()
            || nix::unistd::getppid() != me
        {
            super::super::report::finish(Err(SetupError::new(
                Stage::DieWithParent,
                "the helper exited before bwrap started",
            )));
        }
        // Launched by another user: the workspace's layer, mounted around bwrap.
        if !plan.seals_in_bwrap()
            && let Some((path, dir)) = plan.layer()
            && let Err(e) = super::super::idmap::enter_user_and_mount()
                .and_then(|()| mounts::layer_outside(path, dir))
        {
            super::super::report::finish(Err(e));
        }
        let err = exec::exec_path(bwrap, &args, &[]);
        return Err(SetupError::os(
            Stage::Bubblewrap,
            format!("execve({})", bwrap.display()),
            &err,
        ));
    };
    drop(passed);
    super::super::inherited::release_stdio();
    super::super::layer::watch_bound(plan);
    let code = reaper::supervise_child(Pid::from_raw(pid), false);
    mounts::scrub(&plan.scrub);
    Ok(code)
}
