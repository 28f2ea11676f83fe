//! Socket activation: the listening descriptors systemd passed this process (`LISTEN_FDS`,
//! `LISTEN_FDNAMES`, checked against `LISTEN_PID` by `sd_notify`), adopted at most once per
//! process. It lives here because adopting an inherited descriptor is the `unsafe` step, and
//! this layer is the project's one door for `unsafe`.

use std::io;
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};

/// The activated sockets with their names, in systemd's order; empty when the process was
/// not socket-activated. A second call in the same process is an error, never a second owner.
pub fn take_activated_fds() -> io::Result<Vec<(OwnedFd, String)>> {
    static TAKEN: AtomicBool = AtomicBool::new(false);
    if TAKEN.swap(true, Ordering::SeqCst) {
        return Err(io::Error::other(
            "the socket-activated descriptors were already taken",
        ));
    }
    let fds = sd_notify::listen_fds_with_names()?;
    Ok(fds
        .map(|(fd, name)| {
            // SAFETY: `listen_fds_with_names` yields only the descriptors systemd passed to
            // this very process (3..3+LISTEN_FDS, LISTEN_PID checked); they are open and
            // nothing else in the process owns them, and the `TAKEN` flag above lets this
            // adoption happen once, so each becomes exactly one `OwnedFd`.
            let owned = unsafe { OwnedFd::from_raw_fd(fd) };
            (owned, name)
        })
        .collect())
}
