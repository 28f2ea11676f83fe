//! Binding a warm helper's git stage inside the init's mount namespace (see
//! `helper::git_late`), and the one-descriptor messages of its channels. The [`Binder`] is a
//! child forked while the helper waits for the call, so the fork is off the call's path; once
//! the helper has made the stage it hands the child the init's mount namespace, and the child
//! enters it, binds, and answers the init itself — one hand-off fewer than a child forked
//! then, whose exit the helper waits for ([`bind_in`], the fallback).

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use crate::error::{SetupError, Stage};

/// The helper's end of a waiting binder.
pub(super) struct Binder {
    go: OwnedFd,
}

impl Binder {
    /// Forks the binder of `stage` at `git` (with `inner`, see `git_late::inner_binds`); it
    /// answers on `answer`, the helper's end of the init's channel. `None` when it could not
    /// be forked (the helper then binds through [`bind_in`]). Dropping the binder ends it unused.
    pub(super) fn spawn(
        answer: &OwnedFd,
        stage: &Path,
        git: &Path,
        inner: &[(PathBuf, PathBuf, bool)],
    ) -> Option<Binder> {
        use nix::sys::socket::{AddressFamily, SockFlag, SockType, socketpair};
        let (go, child_go) = socketpair(
            AddressFamily::Unix,
            SockType::SeqPacket,
            None,
            SockFlag::SOCK_CLOEXEC,
        )
        .ok()?;
        match crate::sys::fork() {
            Ok(Some(_)) => Some(Binder { go }),
            Ok(None) => {
                drop(go);
                run(&child_go, answer, stage, git, inner)
            }
            Err(_) => None,
        }
    }

    /// Hands over the init's mount namespace `ns`: the binder binds and answers the init.
    /// `false` when the binder is gone (the caller binds and answers itself).
    pub(super) fn bind(self, ns: &OwnedFd) -> bool {
        send_fd(&self.go, std::os::fd::AsFd::as_fd(ns))
    }
}

/// The binder: waits for the namespace (none: the helper dropped us, or died), binds there,
/// answers 0 (bound) or 1 on `answer`, exits.
fn run(
    go: &OwnedFd,
    answer: &OwnedFd,
    stage: &Path,
    git: &Path,
    inner: &[(PathBuf, PathBuf, bool)],
) -> ! {
    let _ = nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL);
    // Nothing of the helper's but the two sockets (its guards' locks stay its own).
    let _ = crate::sys::close_from_except(3, &[go.as_raw_fd(), answer.as_raw_fd()]);
    let Some(ns) = receive_fd(go) else {
        crate::sys::exit_now(0)
    };
    let bound = nix::sched::setns(&ns, nix::sched::CloneFlags::CLONE_NEWNS).is_ok()
        && bind_entered(stage, git, inner);
    if !bound {
        tracing::warn!(
            "git stage: bind {} at {} in the warm root failed",
            stage.display(),
            git.display()
        );
    }
    let _ = nix::unistd::write(answer, &[u8::from(!bound)]);
    crate::sys::exit_now(0)
}

/// Sends one byte with the descriptor `fd` on `sock` (the channel's request, a binder's
/// go); whether it was sent.
pub(super) fn send_fd(sock: &OwnedFd, fd: std::os::fd::BorrowedFd<'_>) -> bool {
    use nix::sys::socket::{ControlMessage, MsgFlags, sendmsg};
    use std::os::fd::AsRawFd;
    let fds = [fd.as_raw_fd()];
    let iov = [std::io::IoSlice::new(&[1])];
    sendmsg::<()>(
        sock.as_raw_fd(),
        &iov,
        &[ControlMessage::ScmRights(&fds)],
        MsgFlags::empty(),
        None,
    )
    .is_ok()
}

/// The descriptor [`send_fd`] sent on `sock`; `None` at end of file (the sender ended
/// without one) or once SIGTERM arrived.
pub(super) fn receive_fd(sock: &OwnedFd) -> Option<OwnedFd> {
    use nix::sys::socket::{ControlMessageOwned, MsgFlags, recvmsg};
    use std::os::fd::AsRawFd;
    let mut byte = [0u8; 1];
    let mut iov = [std::io::IoSliceMut::new(&mut byte)];
    let mut space = nix::cmsg_space!([std::os::fd::RawFd; 1]);
    // A SIGTERM (the launcher discarding us) ends the wait: the reaper then ends the init.
    let msg = loop {
        if crate::sys::terminate_requested() {
            return None;
        }
        match recvmsg::<()>(
            sock.as_raw_fd(),
            &mut iov,
            Some(&mut space),
            MsgFlags::MSG_CMSG_CLOEXEC,
        ) {
            Err(nix::errno::Errno::EINTR) => continue,
            other => break other.ok()?,
        }
    };
    let mut fds = Vec::new();
    for cmsg in msg.cmsgs().ok()? {
        if let ControlMessageOwned::ScmRights(received) = cmsg {
            fds.extend(crate::sys::adopt_received(received));
        }
    }
    (msg.bytes == 1 && fds.len() == 1).then(|| fds.remove(0))
}

/// Binds `inner` into `stage`, then `stage` (with them) at `git`, inside the mount namespace
/// `ns`, from a child that enters it (this helper could not come back: its own mount
/// namespace belongs to a user namespace it has left).
pub(super) fn bind_in(
    ns: &OwnedFd,
    stage: &Path,
    git: &Path,
    inner: &[(PathBuf, PathBuf, bool)],
) -> Result<(), SetupError> {
    if bind_from_child(ns, stage, git, inner)? {
        return Ok(());
    }
    Err(SetupError::new(
        Stage::Mounts,
        format!(
            "bind {} at {} in the warm root failed",
            stage.display(),
            git.display()
        ),
    ))
}

/// A forked child enters `ns` and binds ([`bind_entered`]); whether all of it was bound.
fn bind_from_child(
    ns: &OwnedFd,
    stage: &Path,
    git: &Path,
    inner: &[(PathBuf, PathBuf, bool)],
) -> Result<bool, SetupError> {
    let child = crate::sys::fork().map_err(|e| SetupError::os(Stage::Mounts, "fork()", &e))?;
    let Some(pid) = child else {
        let entered = nix::sched::setns(ns, nix::sched::CloneFlags::CLONE_NEWNS).is_ok();
        let bound = entered && bind_entered(stage, git, inner);
        crate::sys::exit_now(if bound { 0 } else { 1 })
    };
    let status = loop {
        match nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(pid), None) {
            Err(nix::errno::Errno::EINTR) => continue,
            other => break other,
        }
    };
    Ok(matches!(
        status,
        Ok(nix::sys::wait::WaitStatus::Exited(_, 0))
    ))
}

/// Inside the init's mount namespace: `inner` into `stage`, then `stage` at `git`; whether
/// all of it was bound.
fn bind_entered(stage: &Path, git: &Path, inner: &[(PathBuf, PathBuf, bool)]) -> bool {
    use nix::mount::{MsFlags, mount};
    let flags = MsFlags::MS_BIND | MsFlags::MS_REC;
    let there = [stage, git]
        .iter()
        .all(|p| p.symlink_metadata().is_ok_and(|m| m.is_dir()));
    // A bound directory gone since the plan was made is skipped, as the cold path does.
    let inner_bound = there
        && inner.iter().all(|(src, at, ro)| {
            let Ok(m) = src.symlink_metadata() else {
                return !ro;
            };
            !m.file_type().is_symlink()
                && at
                    .symlink_metadata()
                    .is_ok_and(|a| a.is_dir() == m.is_dir())
                && mount(Some(src), at, None::<&str>, flags, None::<&str>).is_ok()
                && crate::sys::harden_mount(at, *ro).is_ok()
        });
    inner_bound
        && mount(Some(stage), git, None::<&str>, flags, None::<&str>).is_ok()
        && crate::sys::harden_mount(git, false).is_ok()
}
