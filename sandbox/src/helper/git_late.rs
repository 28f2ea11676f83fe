//! A warm helper's git stage, made once its call arrives (namespace backend, child side).
//!
//! A workspace without `.git` gets a guarded `.git` placeholder with a private stage bound
//! on it ([`crate::git::stage`]); an existing repository gets a stage of copies with its data
//! directories bound into it ([`crate::git::repo`]). A warm helper waiting for a call that may never come must
//! leave nothing on the host, and its init is confined (no mount rights) before the call
//! arrives; so its root is prepared without the stage ([`crate::git::stage::deferred`]) and,
//! once the call has arrived, the init asks the helper — still privileged in the user
//! namespace, outside the confinement — over a pipe pair: the helper makes and guards the
//! placeholder, makes the stage, and binds it at `.git` inside the init's mount namespace
//! (from a forked child that enters it), then answers. Only then does the init start the
//! command. The warm helper's identity does not change with it: the stage's name is not part
//! of the shape ([`crate::git::stage::normalize_key`]).

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::git_binder::{Binder, bind_in, receive_fd, send_fd};
use super::mounts::{self, Guards};
use crate::error::{SetupError, Stage};
use crate::plan::{Placeholder, Plan};

/// The init's end of the channel, set before the init is forked.
static INIT_END: Mutex<Option<OwnedFd>> = Mutex::new(None);

/// The helper's end of the channel (a socket pair: the init's request carries its mount
/// namespace, which the helper cannot open itself once the init is not dumpable; the answer
/// is one byte back).
pub(super) struct Channel(OwnedFd);

/// Before forking a warm init whose stage is deferred: the channel (the init's end kept for
/// [`request`]).
pub(super) fn channel() -> Result<Channel, SetupError> {
    use nix::sys::socket::{AddressFamily, SockFlag, SockType, socketpair};
    let (helper, init) = socketpair(
        AddressFamily::Unix,
        SockType::SeqPacket,
        None,
        SockFlag::SOCK_CLOEXEC,
    )
    .map_err(|e| SetupError::os(Stage::Init, "socketpair(git stage)", &e.into()))?;
    *INIT_END.lock().unwrap_or_else(|e| e.into_inner()) = Some(init);
    Ok(Channel(helper))
}

/// Whether this init had the helper make a stage ([`request`]): the helper then ends the call
/// once the stage is validated and applied.
static MADE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// See [`MADE`].
pub(super) fn made() -> bool {
    MADE.load(std::sync::atomic::Ordering::Relaxed)
}

/// A request sent ([`request`]), its answer not yet read ([`Asked::answer`]).
#[must_use = "the stage is there only once answered"]
pub(super) struct Asked(Option<OwnedFd>);

/// In the warm init, once its call has arrived: asks the helper to make the stage in our
/// mount namespace (the init checks its root meanwhile, then waits for [`Asked::answer`]).
/// Nothing is asked when no stage is deferred.
pub(super) fn request() -> Result<Asked, SetupError> {
    let end = INIT_END.lock().unwrap_or_else(|e| e.into_inner()).take();
    let Some(end) = end else {
        return Ok(Asked(None));
    };
    MADE.store(true, std::sync::atomic::Ordering::Relaxed);
    let failed = |what: &str| SetupError::new(Stage::Placeholders, format!("git stage: {what}"));
    let ns = std::fs::File::open("/proc/self/ns/mnt")
        .map_err(|e| SetupError::os(Stage::Placeholders, "open(/proc/self/ns/mnt)", &e))?;
    if !send_fd(&end, std::os::fd::AsFd::as_fd(&ns)) {
        return Err(failed("the helper is gone"));
    }
    Ok(Asked(Some(end)))
}

impl Asked {
    /// Waits for the helper's answer: the stage is bound at `.git`.
    pub(super) fn answer(self) -> Result<(), SetupError> {
        let Some(end) = self.0 else {
            return Ok(());
        };
        let mut byte = [0u8; 1];
        loop {
            match nix::unistd::read(&end, &mut byte) {
                Err(nix::errno::Errno::EINTR) => continue,
                Ok(1) if byte[0] == 0 => return Ok(()),
                _ => {
                    return Err(SetupError::new(
                        Stage::Placeholders,
                        "git stage: the helper could not make it (see its log)",
                    ));
                }
            }
        }
    }
}

impl Channel {
    /// In the helper, once the init is forked: waits for its request (none when the init
    /// ends first), then makes the stage of `plan` (the unstripped plan) in the mount
    /// namespace the request carries and answers. The placeholder's guard is returned for
    /// the run's end.
    pub(super) fn serve(self, plan: &Plan) -> Guards {
        drop(INIT_END.lock().unwrap_or_else(|e| e.into_inner()).take());
        let Some((stage, git)) = crate::git::stage::first(plan) else {
            return Guards::default();
        };
        let inner = inner_binds(plan, stage, git);
        // Forked now, while we wait: dropped unused when no call comes.
        let binder = Binder::spawn(&self.0, stage, git, &inner);
        let Some(ns) = receive_fd(&self.0) else {
            return Guards::default();
        };
        let (guards, answer) = match make(plan, (stage, git, &inner), &ns, binder) {
            Ok((guards, answered)) => (guards, (!answered).then_some(0)),
            Err((guards, e)) => {
                tracing::warn!("{e}");
                (guards, Some(1))
            }
        };
        if let Some(answer) = answer {
            let _ = nix::unistd::write(&self.0, &[answer]);
        }
        guards
    }
}

/// The placeholder (none for an existing repository), its guard, the stage and the binds
/// (`inner` into the stage, the stage at `git`): by `binder`, which then answers the init
/// itself (`true`), or from here.
fn make(
    plan: &Plan,
    (stage, git, inner): (&Path, &Path, &[(PathBuf, PathBuf, bool)]),
    ns: &OwnedFd,
    binder: Option<Binder>,
) -> Result<(Guards, bool), (Guards, SetupError)> {
    let guards = if crate::git::stage::is_existing(plan, git) {
        Guards::default()
    } else {
        let placeholder = [Placeholder {
            path: git.to_path_buf(),
            dir: true,
            denied: true,
        }];
        mounts::guard_denied(&placeholder).map_err(|e| (Guards::default(), e))?
    };
    if let Err(e) = crate::git::stage::prepare(plan) {
        return Err((guards, e));
    }
    if binder.is_some_and(|b| b.bind(ns)) {
        return Ok((guards, true));
    }
    match bind_in(ns, stage, git, inner) {
        Ok(()) => Ok((guards, false)),
        Err(e) => Err((guards, e)),
    }
}

/// What the plan binds below `git` once the stage is there (an existing repository's bound
/// directories, read-write, and protected paths, read-only), as `(real path, its place in
/// the stage, read-only)`, in the plan's order.
fn inner_binds(plan: &Plan, stage: &Path, git: &Path) -> Vec<(PathBuf, PathBuf, bool)> {
    plan.mounts
        .iter()
        .filter_map(|op| match op {
            crate::plan::MountOp::Bind { path, rw, .. } if path != git => {
                let rel = path.strip_prefix(git).ok()?;
                Some((path.clone(), stage.join(rel), !rw))
            }
            _ => None,
        })
        .collect()
}
