//! A warm helper's git stage, made once its call arrives (namespace backend).
//!
//! A workspace without `.git` gets a guarded `.git` placeholder with a private stage bound
//! on it ([`crate::git::stage`]); an existing repository gets a stage of copies with its data
//! directories bound into it ([`crate::git::repo`]). A warm helper waiting for a call that may
//! never come must leave nothing on the host, so its root is prepared without the stage
//! ([`crate::git::stage::deferred`]: in a layered workspace the host's `.git` is bound there
//! instead). Once the call has arrived, the init — not confined yet for such a call — asks
//! the helper over a socket pair: the helper, which sees the host, makes and guards the
//! placeholder and makes the stage, then answers. The init then binds the stage itself, from
//! its own root (the workspace and its `.git` are the host's there, at their real paths),
//! confines itself and starts the command. The warm helper's identity does not change with
//! it: the stage's name is not part of the shape ([`crate::plan::shape::normalized`]).

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use super::mounts::{self, Guards};
use crate::error::{SetupError, Stage};
use crate::plan::{Placeholder, Plan};

/// The helper's end of the channel (a socket pair: one byte each way, the init's request
/// and the helper's answer).
pub(super) struct Channel(OwnedFd);

/// The init's end of the channel, handed to it when it is forked (`Parent::Helper`).
pub(super) struct InitEnd(OwnedFd);

/// Before forking a warm init whose stage is deferred: the channel's two ends.
pub(super) fn channel() -> Result<(Channel, InitEnd), SetupError> {
    use nix::sys::socket::{AddressFamily, SockFlag, SockType, socketpair};
    let (helper, init) = socketpair(
        AddressFamily::Unix,
        SockType::SeqPacket,
        None,
        SockFlag::SOCK_CLOEXEC,
    )
    .map_err(|e| SetupError::os(Stage::Init, "socketpair(git stage)", &e.into()))?;
    Ok((Channel(helper), InitEnd(init)))
}

/// A request sent ([`request`]), its answer not yet read ([`Asked::bind`]).
#[must_use = "the stage is there only once answered and bound"]
pub(super) struct Asked(Option<OwnedFd>);

/// In the warm init, once its call has arrived: asks the helper over `end` to make the stage
/// (the init checks the call and its root meanwhile, then calls [`Asked::bind`]). Nothing is
/// asked when no stage is deferred (no channel).
pub(super) fn request(end: Option<InitEnd>) -> Result<Asked, SetupError> {
    let Some(InitEnd(end)) = end else {
        return Ok(Asked(None));
    };
    if nix::unistd::write(&end, &[1]) != Ok(1) {
        return Err(SetupError::new(
            Stage::Placeholders,
            "git stage: the helper is gone",
        ));
    }
    Ok(Asked(Some(end)))
}

impl Asked {
    /// Waits for the helper's answer (the stage is made), then binds what `plan` binds into
    /// the stage and the stage at `.git`, in this init's root, not confined yet.
    pub(super) fn bind(self, plan: &Plan) -> Result<(), SetupError> {
        let Some(end) = self.0 else {
            return Ok(());
        };
        if read_byte(&end) != Some(0) {
            return Err(SetupError::new(
                Stage::Placeholders,
                "git stage: the helper could not make it (see its log)",
            ));
        }
        let Some((stage, git)) = crate::git::stage::first(plan) else {
            return Ok(());
        };
        bind_stage(stage, git, &inner_binds(plan, stage, git))
    }
}

impl Channel {
    /// In the helper, once the init is forked: waits for its request (none when the init
    /// ends first, or SIGTERM arrives), then makes the stage of `plan` and answers. The
    /// placeholder's guard is returned for the run's end.
    pub(super) fn serve(self, plan: &Plan) -> Guards {
        if crate::git::stage::first(plan).is_none() || read_byte(&self.0) != Some(1) {
            return Guards::default();
        }
        let (guards, answer) = match make(plan) {
            Ok(guards) => (guards, 0),
            Err((guards, e)) => {
                tracing::warn!("{e}");
                (guards, 1)
            }
        };
        let _ = nix::unistd::write(&self.0, &[answer]);
        guards
    }
}

/// One byte from `sock`; `None` at end of file (the other side ended) or once SIGTERM
/// arrived (the launcher discarding a warm helper: the reaper then ends the init).
fn read_byte(sock: &OwnedFd) -> Option<u8> {
    let mut byte = [0u8; 1];
    loop {
        if crate::sys::terminate_requested() {
            return None;
        }
        match nix::unistd::read(sock, &mut byte) {
            Err(nix::errno::Errno::EINTR) => continue,
            Ok(1) => return Some(byte[0]),
            _ => return None,
        }
    }
}

/// The placeholder (none for an existing repository), its guard, and the stage.
fn make(plan: &Plan) -> Result<Guards, (Guards, SetupError)> {
    let Some((_, git)) = crate::git::stage::first(plan) else {
        return Ok(Guards::default());
    };
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
    match crate::git::stage::prepare(plan) {
        Ok(()) => Ok(guards),
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

/// In the init's root: `inner` into `stage`, then `stage` at `git`. A bound directory gone
/// since the plan was made is skipped, as the cold path does; anything else that cannot be
/// bound fails the call before the command exists.
fn bind_stage(
    stage: &Path,
    git: &Path,
    inner: &[(PathBuf, PathBuf, bool)],
) -> Result<(), SetupError> {
    use nix::mount::{MsFlags, mount};
    let flags = MsFlags::MS_BIND | MsFlags::MS_REC;
    let failed = |what: String| {
        SetupError::new(Stage::Mounts, format!("git stage in the warm root: {what}"))
    };
    for p in [stage, git] {
        if !p.symlink_metadata().is_ok_and(|m| m.is_dir()) {
            return Err(failed(format!("{} is not a directory", p.display())));
        }
    }
    for (src, at, ro) in inner {
        let Ok(m) = src.symlink_metadata() else {
            if *ro {
                return Err(failed(format!("{} is gone", src.display())));
            }
            continue;
        };
        let fits = !m.file_type().is_symlink()
            && at
                .symlink_metadata()
                .is_ok_and(|a| a.is_dir() == m.is_dir());
        if !fits {
            return Err(failed(format!(
                "{} has no place in the stage",
                src.display()
            )));
        }
        mount(Some(src), at, None::<&str>, flags, None::<&str>).map_err(|e| {
            SetupError::os(Stage::Mounts, format!("bind {}", src.display()), &e.into())
        })?;
        crate::sys::harden_mount(at, *ro)
            .map_err(|e| SetupError::os(Stage::Mounts, format!("harden {}", at.display()), &e))?;
    }
    mount(Some(stage), git, None::<&str>, flags, None::<&str>).map_err(|e| {
        SetupError::os(
            Stage::Mounts,
            format!("bind {}", stage.display()),
            &e.into(),
        )
    })?;
    crate::sys::harden_mount(git, false)
        .map_err(|e| SetupError::os(Stage::Mounts, format!("harden {}", git.display()), &e))
}
