//! How a running call's tree is killed, always through the pidfd of the process the call
//! was started as (never a pid or a process-group id, which could name a process that reused
//! it). [`super::Supervisor`] says when; the drivers run the kill this picks.

use std::os::fd::OwnedFd;

use crate::backend::Backend;

/// Which signal reaches which process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kill {
    /// SIGTERM to a supervising helper, which kills every descendant (the pid namespace's
    /// init, or each process under its subreaper) and exits once all are reaped, so its exit
    /// means nothing is left.
    Helper,
    /// SIGKILL to the process group the helper leads: the exec-only backends (`none`,
    /// Seatbelt), where the helper became the command and nothing supervises its children.
    Group,
    /// SIGKILL to a foreground run's pid namespace init, which takes the namespace with it.
    Init,
}

impl Kill {
    /// The kill for a helper of `backend`.
    pub(crate) fn for_helper(backend: Backend) -> Kill {
        match backend {
            Backend::None | Backend::Seatbelt => Kill::Group,
            _ => Kill::Helper,
        }
    }

    /// Sends it; harmless once the process has ended.
    pub(crate) fn send(self, pidfd: &OwnedFd) {
        let sent = match self {
            Kill::Helper => crate::sys::pidfd_signal(pidfd, libc::SIGTERM),
            Kill::Init => crate::sys::pidfd_signal(pidfd, libc::SIGKILL),
            Kill::Group => crate::sys::pidfd_signal_group(pidfd, libc::SIGKILL),
        };
        if let (Kill::Group, Err(e)) = (self, sent)
            && e.raw_os_error() == Some(libc::EINVAL)
        {
            // Before Linux 6.9 a pidfd reaches one process only: the command itself dies, a
            // process it left in its group does not.
            tracing::warn!(
                "this kernel cannot signal a process group through a pidfd (Linux 6.9+): \
                 only the command itself was killed"
            );
            let _ = crate::sys::pidfd_signal(pidfd, libc::SIGKILL);
        }
    }
}
