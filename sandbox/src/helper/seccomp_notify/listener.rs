//! The listener: handed over by the child (`SCM_RIGHTS`, keeping no copy) and received by
//! the supervisor, then the seccomp ioctls that check a notification is still pending
//! (`SECCOMP_IOCTL_NOTIF_ID_VALID`) and answer it (`SECCOMP_IOCTL_NOTIF_SEND`).

use std::io::{IoSlice, IoSliceMut};
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};

use nix::errno::Errno;
use nix::sys::socket::{ControlMessage, ControlMessageOwned, MsgFlags, recvmsg, sendmsg};

use super::filter::install;
use crate::error::{SetupError, Stage};

/// Child side: installs the filter and sends its listener to the supervisor over `sock`,
/// closing both (the command must not hold the listener).
pub fn install_and_hand_over(sock: OwnedFd) -> Result<(), SetupError> {
    let listener = install()?;
    let fds = [listener.as_raw_fd()];
    let cmsg = [ControlMessage::ScmRights(&fds)];
    sendmsg::<()>(
        sock.as_raw_fd(),
        &[IoSlice::new(b"L")],
        &cmsg,
        MsgFlags::empty(),
        None,
    )
    .map_err(|e| {
        SetupError::os(
            Stage::Seccomp,
            "sendmsg(listener) to the supervisor",
            &e.into(),
        )
    })?;
    drop(listener);
    drop(sock);
    Ok(())
}

/// Supervisor side: the listener the child sends, `None` when it ended (or failed) first.
pub fn receive(sock: &OwnedFd) -> Option<OwnedFd> {
    loop {
        let mut byte = [0u8; 1];
        let mut iov = [IoSliceMut::new(&mut byte)];
        let mut space = nix::cmsg_space!([RawFd; 1]);
        match recvmsg::<()>(
            sock.as_raw_fd(),
            &mut iov,
            Some(&mut space),
            MsgFlags::MSG_CMSG_CLOEXEC,
        ) {
            Ok(msg) => {
                for c in msg.cmsgs().ok()? {
                    if let ControlMessageOwned::ScmRights(fds) = c {
                        return crate::sys::adopt_received(fds).next();
                    }
                }
                return None;
            }
            Err(Errno::EINTR) if !crate::sys::terminate_requested() => continue,
            Err(_) => return None,
        }
    }
}

/// Whether notification `id` on `listener` is still pending.
pub(super) fn valid(listener: &OwnedFd, id: u64) -> bool {
    crate::sys::notif_id_valid(listener.as_fd(), id)
}

/// Answers notification `id` with 0 or the errno, if its caller still waits. False when the
/// listener is unusable.
pub(super) fn reply(listener: &OwnedFd, id: u64, answer: Result<(), Errno>) -> bool {
    if !valid(listener, id) {
        return true; // interrupted or killed: nobody to answer
    }
    let error = answer.err().map_or(0, |e| -(e as i32));
    match crate::sys::notif_send(listener.as_fd(), id, error) {
        Ok(()) => true,
        Err(e) => matches!(e, Errno::ENOENT | Errno::EINTR),
    }
}
