//! The listener: handed over by the child (`SCM_RIGHTS`, keeping no copy) and received by
//! the supervisor, then the seccomp ioctls that check a notification is still pending
//! (`SECCOMP_IOCTL_NOTIF_ID_VALID`) and answer it (`SECCOMP_IOCTL_NOTIF_SEND`).

use std::io::{IoSlice, IoSliceMut};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

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
                        let mut owned = fds.into_iter().map(|fd| {
                            // SAFETY: SCM_RIGHTS just installed `fd` in our table; nobody else
                            // owns it.
                            unsafe { OwnedFd::from_raw_fd(fd) }
                        });
                        return owned.next();
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
    let mut id = id;
    // SAFETY: `id` is a live u64 the kernel only reads.
    let rc = unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_ID_VALID,
            &mut id as *mut u64,
        )
    };
    rc == 0
}

/// Answers notification `id` with 0 or the errno, if its caller still waits. False when the
/// listener is unusable.
pub(super) fn reply(listener: &OwnedFd, id: u64, answer: Result<(), Errno>) -> bool {
    if !valid(listener, id) {
        return true; // interrupted or killed: nobody to answer
    }
    let mut resp = libc::seccomp_notif_resp {
        id,
        val: 0,
        error: answer.err().map_or(0, |e| -(e as i32)),
        flags: 0,
    };
    // SAFETY: `resp` is a live seccomp_notif_resp, the size the request encodes; the kernel
    // only reads it.
    let rc = unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_SEND,
            &mut resp as *mut libc::seccomp_notif_resp,
        )
    };
    rc == 0 || matches!(Errno::last(), Errno::ENOENT | Errno::EINTR)
}
