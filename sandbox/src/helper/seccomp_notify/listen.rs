//! `listen`: an IP socket may not listen in proxy mode. On the Landlock-only rung the child
//! shares the host's network namespace, and `listen` on a socket it never bound autobinds it
//! to an ephemeral port on every address of the host — past Landlock's TCP bind rule, which
//! only sees `bind` — where anyone who reaches the host could connect in and be handed what
//! the egress policy keeps from going out. Unix sockets listen as before. The socket is our
//! copy (`pidfd_getfd`, the same open socket), so the check and the `listen` are on one
//! object: no descriptor swap in between.

use std::os::fd::AsFd;

use nix::errno::Errno;
use nix::sys::socket::Backlog;

use super::decode::{Status, fd_arg};
use super::emulate::fetch_fd;
use super::listener::reply;
use super::supervisor::Supervisor;

impl Supervisor {
    /// `listen(fd, backlog)`: refused (EACCES, as Landlock answers a refused bind) for an IP
    /// socket in proxy mode, performed on our copy of the socket otherwise.
    pub(super) fn serve_listen(&self, notif: &libc::seccomp_notif) {
        let answer = self.listen_checked(notif.id, notif.pid, notif.data.args);
        reply(&self.listener, notif.id, answer);
    }

    fn listen_checked(&self, id: u64, tid: u32, args: [u64; 6]) -> Result<(), Errno> {
        let status = Status::of(tid).ok_or(Errno::EPERM)?;
        let pidfd = crate::sys::pidfd_open(status.tgid).map_err(|_| Errno::EPERM)?;
        if !self.valid(id) {
            return Err(Errno::EPERM);
        }
        let sock = fetch_fd(&pidfd, fd_arg(args[0]))?;
        let domain = crate::sys::socket_domain(sock.as_fd()).map_err(|_| Errno::ENOTSOCK)?;
        if !may_listen(domain, self.proxy_only.is_some()) {
            return Err(Errno::EACCES);
        }
        // The kernel caps the backlog at somaxconn; a negative one means the default.
        let backlog =
            Backlog::new((args[1] as i32).clamp(-1, i32::MAX)).unwrap_or(Backlog::MAXCONN);
        if !self.valid(id) {
            return Err(Errno::EPERM);
        }
        nix::sys::socket::listen(&sock, backlog)
    }
}

/// Whether a socket of `domain` may listen: always, but for an IP one in proxy mode.
fn may_listen(domain: i32, proxy_only: bool) -> bool {
    !(proxy_only && domain != libc::AF_UNIX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_unix_sockets_listen_in_proxy_mode() {
        assert!(may_listen(libc::AF_UNIX, true));
        assert!(!may_listen(libc::AF_INET, true));
        assert!(!may_listen(libc::AF_INET6, true));
        for domain in [libc::AF_UNIX, libc::AF_INET, libc::AF_INET6] {
            assert!(may_listen(domain, false), "{domain}");
        }
    }
}
