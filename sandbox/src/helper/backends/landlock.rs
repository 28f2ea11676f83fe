//! The Landlock-only rung's child-side entry: the helper becomes a subreaper with private
//! scratch directories, forks the confined command and supervises its mode, owner, time and
//! connect calls ([`super::super::seccomp_notify`]) until it ends.

use nix::sys::signal::Signal;
use nix::unistd::Pid;

use super::super::{reaper, scratch, seccomp_notify};
use crate::error::{SetupError, Stage};
use crate::plan::Plan;
use crate::wire::Enforcement;

/// Landlock-only backend: subreaper, scratch dirs, the confined command as a child.
pub(crate) fn run(plan: &Plan) -> Result<i32, SetupError> {
    let scratch_dir = plan
        .home
        .scratch
        .clone()
        .ok_or_else(|| SetupError::new(Stage::Scratch, "no scratch directory in the plan"))?;
    scratch::create(&scratch_dir, &plan.home.links)?;
    super::super::git_global::write(plan);
    let result = supervise(plan);
    // Before the scratch HOME is looked at: the copy itself is not the call's.
    let git_changed = super::super::git_global::changed_or_remove(plan);
    let home = scratch_dir.join("home");
    let dirs = [
        ("$HOME", scratch::home_written(&home, &plan.home.links)),
        (
            "$TMPDIR",
            super::super::discarded::holds_any(&scratch_dir.join("tmp")),
        ),
    ];
    if let Some(discarded) = super::super::discarded::scratch(&dirs) {
        super::super::report::send(&discarded);
    }
    if let Some(changed) = git_changed {
        super::super::report::send(&changed);
    }
    scratch::remove(&scratch_dir);
    super::super::mounts::scrub(&plan.scrub);
    result
}

fn supervise(plan: &Plan) -> Result<i32, SetupError> {
    use nix::sys::socket::{AddressFamily, SockFlag, SockType, socketpair};
    reaper::become_subreaper()?;
    // The child sends the listener of its chmod/utimes filter back over this pair.
    let (ours, theirs) = socketpair(
        AddressFamily::Unix,
        SockType::SeqPacket,
        None,
        SockFlag::SOCK_CLOEXEC,
    )
    .map_err(|e| SetupError::os(Stage::Init, "socketpair()", &e.into()))?;
    let me = nix::unistd::getpid();
    let child = crate::sys::fork().map_err(|e| SetupError::os(Stage::Init, "fork()", &e))?;
    let Some(pid) = child else {
        drop(ours);
        let mut notes = vec![
            "landlock backend (reduced rung, chosen only by name): no namespaces; chmod/utimes \
             (and connect, when the network is allowed) are performed by the helper, only inside \
             the writable roots; other processes' /proc entries are hidden"
                .to_string(),
        ];
        if let Some(ports) = plan.seccomp.proxy_only {
            notes.push(format!(
                "network proxy without a network namespace: TCP connects only to the egress \
                 proxy on the host's 127.0.0.1:{} and :{} (Landlock TCP rules and the helper's \
                 connect supervision), no TCP bind, no UDP, raw or packet socket (seccomp)",
                ports.http, ports.socks
            ));
        }
        notes.extend(
            crate::backend::LANDLOCK_RUNG_LIMITS
                .iter()
                .map(|l| format!("NOT guaranteed: {l}")),
        );
        let report = Enforcement {
            notes,
            ..Enforcement::default()
        };
        if let Err(e) = nix::sys::prctl::set_pdeathsig(Signal::SIGKILL) {
            return Err(SetupError::os(
                Stage::DieWithParent,
                "prctl(PR_SET_PDEATHSIG)",
                &e.into(),
            ));
        }
        // A helper that died before the signal was armed sent none: no command without it.
        if nix::unistd::getppid() != me {
            super::super::report::finish(Err(SetupError::new(
                Stage::DieWithParent,
                "the helper exited before the command started",
            )));
        }
        super::super::report::finish(super::super::exec::confine_and_exec_supervised(
            plan, report, theirs,
        ));
    };
    drop(theirs);
    // Blocks until the child sent its listener (just before execve) or ended without one
    // (a setup failure it reports itself); nothing of the command runs before.
    let supervisor =
        seccomp_notify::receive(&ours).map(|l| seccomp_notify::Supervisor::new(l, plan));
    drop(ours);
    let exit = reaper::wait_main(Pid::from_raw(pid), supervisor.as_ref());
    Ok(reaper::finish_tree(exit, true))
}
