//! The namespace backends' process tree: the helper unshares user, mount, pid, ipc, uts (and
//! net) namespaces, forks the pid namespace's init, which builds the new root and forks the
//! command; when the init exits the kernel kills everything left in the namespace. The
//! bubblewrap backend execs bwrap instead, which runs our inner stage. Both first create the
//! placeholders and hold the denied-path guards ([`mounts::guard_denied`]), released (and
//! removed when no other run holds them) once the tree is gone.

use nix::sched::CloneFlags;
use nix::unistd::Pid;

use super::report::{send, send_all, shell_code};
use super::ucounts::UserLimits;
use super::{exec, mounts, reaper};
use crate::error::{SetupError, Stage};
use crate::plan::Plan;
use crate::wire::{Enforcement, ExitInfo, Message};

/// Namespace names for the enforcement report.
pub fn names(net: bool) -> Vec<String> {
    let mut v = vec!["user", "mount", "pid", "ipc", "uts"];
    if net {
        v.push("net");
    }
    v.into_iter().map(String::from).collect()
}

/// Who started the init, and so what it owes them.
pub(super) enum Parent {
    /// The helper; `helper` is its pidfd. A helper that reports the call's end itself (after
    /// a git stage, a layer or denied-path placeholders) learns on `tree_gone` when
    /// everything but the init is gone ([`reaper::tell_tree_gone`]), and reports before the
    /// init's own exit (the namespaces' teardown) is done.
    /// A warm init whose git stage is deferred asks the helper for it on `git_stage` once
    /// its call has arrived (`helper::git_late`).
    Helper {
        helper: std::os::fd::OwnedFd,
        tree_gone: std::os::fd::OwnedFd,
        git_stage: Option<super::git_late::InitEnd>,
    },
    /// The caller itself ([`start_init`]): nobody between them, nothing to tell.
    Caller,
}

/// Whether a single-threaded caller may start the init itself ([`start_init`]) rather than
/// fork a helper: the namespace backend, no warm helper being prepared, no denied-path
/// placeholder (one must be removed from outside after the run, even if the caller dies) and
/// no pids cgroup needed (the pid namespace's `pid_max` bounds the tree, or we are not root and
/// `RLIMIT_NPROC` does).
pub(crate) fn can_start_init(plan: &Plan) -> bool {
    plan.backend == crate::Backend::Namespaces
        && !plan.is_warm()
        && !plan.placeholders.iter().any(|p| p.denied)
        && !crate::git::stage::any(plan)
        // The layer is made, watched and landed by a helper.
        && plan.layer().is_none()
        && (!nix::unistd::geteuid().is_root()
            || (crate::host::pid_max::usable(plan.process.limits.processes)
                && !crate::host::cgroup::memory_usable()))
}

/// Starts a run's init straight from a single-threaded caller, without a helper process
/// between them (see [`can_start_init`]): the protected-path placeholders and the idmapped
/// trees are made here, then the init is cloned into its new namespaces. In the init,
/// `install` runs first: it must put the stdio on 0–2, the report and lifeline pipes on
/// [`crate::wire::REPORT_FD`] and [`crate::wire::LIFELINE_FD`] and a proxy call's plan socket
/// on [`crate::wire::PLAN_FD`] (the init sends the listeners back on it); every other
/// inherited descriptor is closed after it. The init ends the namespace, scrubs and reports `Ended` itself, and does so too
/// when the lifeline hangs up (the caller died). The caller stops a run with SIGKILL to the
/// init (pid 1 ignores SIGTERM from outside), then scrubs ([`mounts::scrub`]) from outside.
pub(crate) fn start_init(plan: &Plan, install: impl FnOnce()) -> Result<i32, SetupError> {
    mounts::create_placeholders(&plan.placeholders)?;
    // The idmap holder ends while the namespaces are made; reaped when this returns.
    let (mut unowned, _holder) = mounts::Unowned::prepare(&plan.unowned);
    unowned
        .move_high()
        .map_err(|e| SetupError::os(Stage::Spawn, "fcntl(F_DUPFD)", &e))?;
    let ids = (nix::unistd::geteuid(), nix::unistd::getegid());
    let user_limits = UserLimits::from_names(&plan.process.user_limits);
    let flags = new_namespaces(plan.egress.own_namespace);
    match crate::sys::fork_into(flags.bits()) {
        Err(e) => Err(namespaces_error(format!("clone({flags:?})"), e)),
        Ok(Some(pid)) => Ok(pid),
        Ok(None) => {
            install();
            let mut keep = vec![crate::wire::REPORT_FD, crate::wire::LIFELINE_FD];
            keep.extend(super::egress::channel_fd(plan));
            keep.extend(unowned.fds());
            let _ = crate::sys::close_from_except(3, &keep);
            super::report::finish(started_init(plan, unowned, ids, &user_limits))
        }
    }
}

/// The first steps of an init [`start_init`] cloned: check the caller still lives, a session
/// of its own, the id maps; then [`init_main`].
fn started_init(
    plan: &Plan,
    unowned: mounts::Unowned,
    (uid, gid): (nix::unistd::Uid, nix::unistd::Gid),
    user_limits: &UserLimits,
) -> Result<i32, SetupError> {
    super::inherited::set_cloexec(crate::wire::REPORT_FD)?;
    let _ = super::inherited::set_cloexec(crate::wire::LIFELINE_FD);
    // No PR_SET_PDEATHSIG: the init watches the lifeline (see init_main).
    if super::inherited::lifeline_hung_up() {
        return Err(SetupError::new(
            Stage::DieWithParent,
            "launcher exited before the init started",
        ));
    }
    super::inherited::new_session()?;
    super::idmap::write_maps(uid.as_raw(), gid.as_raw())?;
    // In the call's network namespace already: a proxy call's listeners go back first.
    super::egress::send_listeners(plan)?;
    super::report::ROOT_PROCESS_LIMIT.store(
        crate::host::pid_max::usable(plan.process.limits.processes),
        std::sync::atomic::Ordering::Relaxed,
    );
    init_main(
        plan,
        unowned,
        &mut mounts::Guards::default(),
        Parent::Caller,
        user_limits,
    )
}

/// pid 1 of the new namespace: root, /proc, /dev, then the command as its child.
pub(super) fn init_main(
    plan: &Plan,
    unowned: mounts::Unowned,
    guards: &mut mounts::Guards,
    parent: Parent,
    user_limits: &UserLimits,
) -> Result<i32, SetupError> {
    // The helper keeps the locks; a descriptor of a host directory must not reach the command.
    guards.forget();
    crate::git::stage::lock::forget();
    // The helper watches the launcher; the command must not find its pidfd here.
    super::inherited::close_launcher_pidfd();
    // Not dumpable: `/proc/1/fd` (the report pipe, the lifeline, the namespace descriptors)
    // then needs CAP_SYS_PTRACE in this user namespace, which the command never has — also
    // once a warm init has confined itself and dropped its own capabilities, when it no
    // longer holds more than the command does. The command's execve makes it dumpable again.
    nix::sys::prctl::set_dumpable(false)
        .map_err(|e| SetupError::os(Stage::Init, "prctl(PR_SET_DUMPABLE)", &e.into()))?;
    // An init the caller started watches the lifeline instead: if the caller dies, the init
    // must live on long enough to end the namespace and scrub (a SIGKILL would skip that).
    let caller = matches!(parent, Parent::Caller);
    let (tree_gone, git_stage) = match parent {
        Parent::Helper {
            helper,
            tree_gone,
            git_stage,
        } => {
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
                .map_err(|e| SetupError::os(Stage::Init, "prctl(PR_SET_PDEATHSIG)", &e.into()))?;
            // A helper that died between our fork and the line above sent no signal: we
            // would run the command with nobody left to end it.
            if super::inherited::readable(std::os::fd::AsFd::as_fd(&helper)) {
                return Err(SetupError::new(
                    Stage::DieWithParent,
                    "the helper exited before the init started",
                ));
            }
            (Some(tree_gone), git_stage)
        }
        Parent::Caller => (None, None),
    };
    let _ = nix::unistd::sethostname("zeroclaw");
    if crate::host::pid_max::usable(plan.process.limits.processes) {
        super::pidns::apply(plan.process.limits.processes)?;
    }
    // The mount namespace is the init's own: pivot_root would otherwise move the helper's
    // root too, and the helper must keep seeing the host /proc to kill the tree.
    nix::sched::unshare(CloneFlags::CLONE_NEWNS)
        .map_err(|e| SetupError::os(Stage::Namespaces, "unshare(CLONE_NEWNS)", &e.into()))?;
    // The last namespace we make: from here on the child's user namespace may make none, and
    // its inotify use is bounded well below the host's (`ucounts.rs`).
    user_limits.apply()?;
    // Still the host's view: what the root is about to be built from (a warm helper's
    // without its git stage, bound once its call arrives: `helper::git_late`).
    let recorded = plan.is_warm().then(|| crate::warm::key::fingerprint(plan));
    let host = mounts::build_root(
        plan.root_mounts(),
        plan.process.limits.file_size_bytes,
        &unowned,
        &plan.proc_masks,
    )?;
    drop(unowned);
    let mut enforcement = Enforcement {
        namespaces: names(plan.egress.own_namespace),
        private_tmp: true,
        protected_paths: true,
        ..Enforcement::default()
    };
    let call;
    let gate;
    let plan = match recorded {
        Some(fingerprint) => {
            // Off the call's path: detach before anything else.
            host.detach()?;
            gate = None;
            let mounted = crate::warm::key::mount_ids(plan);
            // Confined before the call arrives (its shape, rules included, is this plan's):
            // the command only has its limits, cwd and descriptors left to set. An init with
            // a git stage to bind confines once it is bound.
            if plan.deferred_root().is_none() {
                exec::confine_self(plan, &mut enforcement)?;
            }
            enforcement.warm = true;
            let staging;
            (call, staging) = await_call(plan, fingerprint, git_stage)?;
            if crate::warm::key::mount_ids(&call) != mounted {
                return Err(SetupError::new(
                    Stage::Plan,
                    "warm helper: a path its root depends on changed on the host",
                ));
            }
            if plan.deferred_root().is_some() {
                staging.bind(plan)?;
                exec::confine_self(plan, &mut enforcement)?;
            }
            &call
        }
        None => {
            // The lazy unmount's grace period overlaps the command's confinement, which
            // waits for it before it execs.
            gate = Some(host.detach_in_background()?);
            plan
        }
    };
    let warm = recorded.is_some();
    let mut enforcement = Some(enforcement);
    let mut command = || {
        let report = enforcement.take().unwrap_or_default();
        super::report::finish(if warm {
            exec::exec_confined(plan, report)
        } else {
            exec::confine_and_exec_gated(plan, report, gate.as_ref())
        })
    };
    super::git_global::write(plan);
    let usage = super::discarded::Usage::before(plan);
    // A program is exec'd right away: its process shares our memory until then, no copy.
    // An in-process operation runs in a copy, so its work never touches the init's memory.
    let pid = if plan.op.is_none() {
        crate::sys::spawn_shared(&mut || command())
    } else {
        match crate::sys::fork() {
            Ok(None) => {
                command();
                crate::sys::exit_now(127)
            }
            other => other.map(|pid| pid.unwrap_or_default()),
        }
    }
    .map_err(|e| SetupError::os(Stage::Init, "clone()", &e))?;
    // The command has the stdio now; our copies would keep its output open after the end.
    for fd in 0..=2 {
        let _ = nix::unistd::close(fd);
    }
    let exit = if caller {
        match reaper::reap_until_or_hangup(Pid::from_raw(pid)) {
            Some(exit) => exit,
            None => {
                // The caller is gone: nobody else will end the namespace or scrub.
                end_the_namespace();
                mounts::scrub(&plan.scrub);
                return Ok(128 + libc::SIGKILL);
            }
        }
    } else {
        reaper::reap_until(Pid::from_raw(pid))
    };
    // We are pid 1: nothing the command started can be anywhere but in this namespace. Kill
    // and reap all of it, undo what it planted, and say so with the exit, in one message —
    // the launcher need not wait for our exit and the helper's (the helper scrubs from
    // outside only for an init that was killed). Not when the helper still has denied-path
    // placeholders to remove after us: the call ends once they are gone.
    end_the_namespace();
    if let Some(discarded) = usage.after() {
        send(&discarded);
    }
    if let Some(changed) = super::git_global::changed(plan) {
        send(&changed);
    }
    let code = shell_code(exit);
    // Git hook: so is a git stage, validated and applied after us (`crate::git::stage`).
    // And so is the transactional workspace's layer, landed by the helper (`crate::layer`).
    let staged = crate::git::stage::any(plan) || plan.layer().is_some();
    if !staged && !plan.placeholders.iter().any(|p| p.denied) {
        mounts::scrub(&plan.scrub);
    }
    match tree_gone {
        // One `Ended` ends a call, whoever started the init: with a helper, the helper's,
        // once it has done what is left (a stage applied, a layer landed, placeholders
        // removed) — told now, so that its report need not wait for our exit (the
        // namespaces' teardown).
        Some(told) => {
            send(&Message::Exited(exit));
            reaper::tell_tree_gone(told, code);
        }
        // Nobody between the caller and us: the end is ours to report.
        None => send_all(&[Message::Exited(exit), Message::Ended(ExitInfo::Code(code))]),
    }
    Ok(code)
}

/// In the pid namespace's init: SIGKILLs every other process of the namespace and reaps
/// them all (a process being killed cannot complete a fork, and orphans come to us). Every
/// process of the namespace descends from us, so with no child left nobody is: then there is
/// no `kill(-1)`, which walks every process of the host.
fn end_the_namespace() {
    use nix::errno::Errno;
    use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
    let anyone = Pid::from_raw(-1);
    loop {
        match waitpid(anyone, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) => {
                let _ = nix::sys::signal::kill(anyone, nix::sys::signal::Signal::SIGKILL);
            }
            Ok(_) | Err(Errno::EINTR) => continue, // reaped one: look again
            Err(_) => return,                      // ECHILD: nobody left
        }
        match waitpid(anyone, None) {
            Ok(_) | Err(Errno::EINTR) => {}
            Err(_) => return,
        }
    }
}

/// A warm init with its root built: reports [`Message::Prepared`], then waits on
/// [`crate::wire::GO_FD`] for the call — its plan (one message) with the command's stdin,
/// stdout and stderr attached, which replace the placeholders on 0–2.
fn await_call(
    prepared: &Plan,
    fingerprint: u64,
    git_stage: Option<super::git_late::InitEnd>,
) -> Result<(Plan, super::git_late::Asked), SetupError> {
    use nix::sys::socket::{ControlMessageOwned, MsgFlags, recvmsg};
    use std::io::IoSliceMut;
    use std::os::fd::{AsRawFd, OwnedFd};
    let shape = crate::plan::shape::normalized(prepared);
    send(&Message::Prepared(fingerprint));
    let fail = |what: String| SetupError::new(Stage::Plan, format!("warm helper: {what}"));
    let mut buf = vec![0u8; crate::wire::MAX_CALL_BYTES];
    let mut iov = [IoSliceMut::new(&mut buf)];
    let mut space = nix::cmsg_space!([std::os::fd::RawFd; 3]);
    let msg = loop {
        match recvmsg::<()>(
            crate::wire::GO_FD,
            &mut iov,
            Some(&mut space),
            MsgFlags::MSG_CMSG_CLOEXEC,
        ) {
            Err(nix::errno::Errno::EINTR) => continue,
            other => break other.map_err(|e| fail(format!("recvmsg: {e}")))?,
        }
    };
    let mut stdio: Vec<OwnedFd> = Vec::new();
    for cmsg in msg.cmsgs().map_err(|e| fail(e.to_string()))? {
        if let ControlMessageOwned::ScmRights(fds) = cmsg {
            stdio.extend(crate::sys::adopt_received(fds));
        }
    }
    let (bytes, truncated) = (msg.bytes, msg.flags.contains(MsgFlags::MSG_TRUNC));
    if bytes == 0 {
        return Err(fail("the launcher let it go unused".into()));
    }
    // Git hook: the helper makes the deferred stage (see `helper::git_late`) while the call
    // and the root are checked; a call refused below leaves it to the helper's clean-up.
    let staging = super::git_late::request(git_stage)?;
    if truncated || stdio.len() != 3 {
        return Err(fail(format!(
            "malformed call ({bytes} bytes, {} descriptors)",
            stdio.len()
        )));
    }
    let call: Plan = serde_json::from_slice(&buf[..bytes])
        .map_err(|e| fail(format!("parse the call's plan: {e}")))?;
    if crate::plan::shape::normalized(&call) != shape {
        return Err(fail("the call does not match the prepared root".into()));
    }
    for (target, fd) in stdio.iter().enumerate() {
        crate::sys::dup_onto(fd.as_raw_fd(), target as i32)
            .map_err(|e| SetupError::os(Stage::Plan, "dup2(stdio)", &e))?;
    }
    let _ = nix::unistd::close(crate::wire::GO_FD);
    Ok((call, staging))
}

/// The namespaces a run gets besides the init's mount namespace: user, pid, ipc, uts (and net).
fn new_namespaces(net: bool) -> CloneFlags {
    let mut flags = CloneFlags::CLONE_NEWUSER
        | CloneFlags::CLONE_NEWPID
        | CloneFlags::CLONE_NEWIPC
        | CloneFlags::CLONE_NEWUTS;
    if net {
        flags |= CloneFlags::CLONE_NEWNET;
    }
    flags
}

fn namespaces_error(call: String, e: std::io::Error) -> SetupError {
    SetupError::os(Stage::Namespaces, call, &e).hint(
        "unprivileged user namespaces are blocked (sysctl kernel.unprivileged_userns_clone=1, \
         kernel.apparmor_restrict_unprivileged_userns=0, or a container policy); \
         or choose backend = \"bubblewrap\" / \"landlock\"",
    )
}

/// unshare (user, pid, ipc, uts, net) + uid/gid maps that keep the caller's ids.
pub(super) fn enter(net: bool) -> Result<(), SetupError> {
    let (uid, gid) = (nix::unistd::geteuid(), nix::unistd::getegid());
    let flags = new_namespaces(net);
    nix::sched::unshare(flags)
        .map_err(|e| namespaces_error(format!("unshare({flags:?})"), e.into()))?;
    super::idmap::write_maps(uid.as_raw(), gid.as_raw())
}
