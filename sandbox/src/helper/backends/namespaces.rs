//! The namespace backend's child-side entry: the helper unshares user, mount, pid, ipc, uts
//! (and net) namespaces and forks the pid namespace's init (`helper/namespaces.rs`), which
//! builds the new root and forks the command; the helper holds the denied-path guards, and
//! scrubs the workspace once the tree is gone when the init could not.

use nix::unistd::Pid;

use super::super::{namespaces, reaper};
use crate::error::{SetupError, Stage};
use crate::plan::Plan;
use crate::wire::ExitInfo;

/// Helper side of the namespace backend: returns the command's shell exit code.
pub(crate) fn run(plan: &Plan) -> Result<i32, SetupError> {
    // A warm helper makes its git stage once the call arrives (`helper::git_late`).
    super::super::mounts::create_placeholders(plan.root_placeholders())?;
    let mut guards = super::super::mounts::guard_denied(plan.root_placeholders())?;
    let layer = super::super::layer::make(plan)?;
    let mut late = super::super::mounts::Guards::default();
    // Git hook: a new repository's private stage (see `crate::git::stage`), made now, or by
    // a warm helper once its call arrives.
    let result = if plan.deferred_root().is_some() {
        run_guarded(plan, &mut guards, Some(&mut late))
    } else {
        crate::git::stage::prepare(plan).and_then(|()| run_guarded(plan, &mut guards, None))
    };
    let alone = |git: &std::path::Path| guards.alone(git) || late.alone(git);
    let (refused, empty) = crate::git::stage::finish_leaving(plan, alone);
    super::super::report::git_refusals(refused);
    // An init that told us its tree was gone may still be exiting: its mounts (the layer's
    // overlay among them) are no one's to use any more.
    let landed = super::super::layer::land(plan, layer);
    // Denied-path placeholders are gone when the call ends; the git stage's empty parts and
    // its `.git` placeholder go just after (see `finish_leaving`).
    let git_placeholder = guards.split_off(|p| crate::git::stage::is_stage_git(plan, p));
    guards.release();
    if let Ok(code) = result {
        super::super::report::ended(code);
    }
    super::super::layer::release(landed);
    // An init that told us its tree was gone may still be exiting.
    reaper::kill_descendants();
    empty.remove();
    late.release();
    git_placeholder.release();
    result
}

/// [`run`] with the denied-path placeholders held; `guards` are closed in the init.
/// `late`: where a warm helper's deferred git stage keeps its guard once the init has asked
/// for it (the init builds its root without the stage: `crate::git::stage::deferred`).
fn run_guarded(
    plan: &Plan,
    guards: &mut super::super::mounts::Guards,
    late: Option<&mut super::super::mounts::Guards>,
) -> Result<i32, SetupError> {
    // The holder is reaped here: this helper's reaper waits for any child.
    let (unowned, _) = super::super::mounts::Unowned::prepare(&plan.unowned);
    let user_limits = super::super::ucounts::UserLimits::from_names(&plan.process.user_limits);
    namespaces::enter(plan.egress.own_namespace)?;
    super::super::egress::send_listeners(plan)?;
    reaper::become_subreaper()?;
    let (tree_gone_r, tree_gone) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
        .map_err(|e| SetupError::os(Stage::Init, "pipe2()", &e.into()))?;
    // For the init to check, once its parent-death signal is armed, that we did not die
    // before (its getppid() is 0: we are outside its pid namespace).
    let helper = crate::sys::pidfd_open(std::process::id() as i32)
        .map_err(|e| SetupError::os(Stage::Init, "pidfd_open(self)", &e))?;
    let (channel, init_end) = match late {
        Some(_) => {
            let (channel, init_end) = super::super::git_late::channel()?;
            (Some(channel), Some(init_end))
        }
        None => (None, None),
    };
    let init = crate::sys::fork().map_err(|e| SetupError::os(Stage::Init, "fork()", &e))?;
    match init {
        Some(pid) => {
            // The init's end is the init's: its end of file tells the helper it is gone.
            drop((helper, tree_gone, init_end));
            drop(unowned);
            super::super::inherited::release_stdio();
            if plan.is_warm() {
                // Only the init waits for the call; the launcher sees it gone if the init dies.
                let _ = nix::unistd::close(crate::wire::GO_FD);
            }
            if let (Some(channel), Some(late)) = (channel, late) {
                *late = channel.serve(plan);
            }
            super::super::layer::watch_bound(plan);
            let (exit, code) = match reaper::wait_init(Pid::from_raw(pid), tree_gone_r) {
                // The init, still exiting, is reaped once the call's end is told (`run`).
                reaper::Waited::Told(code) => (Some(ExitInfo::Code(code)), code),
                reaper::Waited::Exited(exit) => (exit, reaper::finish_tree(exit, false)),
            };
            // An init that exited by itself has scrubbed inside and reported the end (the
            // launcher may be running its next call already), unless denied-path
            // placeholders are left to us: then our own report ends the call, after this. A
            // killed one scrubbed nothing.
            let init_scrubbed = matches!(exit, Some(ExitInfo::Code(_)))
                && !plan.placeholders.iter().any(|p| p.denied)
                && !crate::git::stage::any(plan)
                && plan.layer().is_none();
            if !init_scrubbed {
                super::super::mounts::scrub(&plan.scrub);
            }
            Ok(code)
        }
        None => {
            // The helper's ends of the git stage channel are not the init's.
            drop((channel, tree_gone_r));
            super::super::report::finish(namespaces::init_main(
                plan,
                unowned,
                guards,
                namespaces::Parent::Helper {
                    helper,
                    tree_gone,
                    git_stage: init_end,
                },
                &user_limits,
            ))
        }
    }
}
