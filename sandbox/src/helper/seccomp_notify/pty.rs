//! Ptys on the Landlock-only rung: the child may open `/dev/ptmx` (a new pty), but not the
//! host's `/dev/pts`, which holds other sessions' terminals (root's login shell among them)
//! and which a Landlock rule could only grant as a whole. So the slave of a pty comes from
//! `ioctl(master, TIOCGPTPEER)` — glibc's `openpty` asks for it that way first — performed
//! here: we fetch the child's master (`pidfd_getfd`), check it is a pty master (the ptmx
//! device), open its slave ourselves and place it in the child's table with
//! `SECCOMP_IOCTL_NOTIF_ADDFD` (`SEND`: the call returns its number). A slave reached only
//! through a master the child made is its own pty.

use std::os::fd::AsFd;

use nix::errno::Errno;

use super::decode::{Status, fd_arg};
use super::emulate::fetch_fd;
use super::filter::TIOCGPTPEER;
use super::listener::reply;
use super::supervisor::Supervisor;

/// The device number of `/dev/ptmx` (and of every devpts instance's `ptmx`): major 5, minor 2.
const PTMX: (u64, u64) = (5, 2);

/// The open flags `TIOCGPTPEER` takes.
const PEER_FLAGS: i32 = libc::O_RDWR | libc::O_WRONLY | libc::O_NOCTTY | libc::O_NONBLOCK;

impl Supervisor {
    /// `ioctl(master, TIOCGPTPEER, flags)`: answered with the new descriptor, or an errno.
    pub(super) fn serve_pty_peer(&self, notif: &libc::seccomp_notif) {
        let id = notif.id;
        if let Err(e) = self.pty_peer(id, notif.pid, notif.data.args) {
            reply(&self.listener, id, Err(e));
        }
    }

    fn pty_peer(&self, id: u64, tid: u32, args: [u64; 6]) -> Result<(), Errno> {
        if args[1] as u32 != TIOCGPTPEER {
            return Err(Errno::EPERM); // the filter sends no other request
        }
        let flags = args[2] as u32 as i32;
        if flags & !(PEER_FLAGS | libc::O_CLOEXEC) != 0 {
            return Err(Errno::EINVAL);
        }
        let status = Status::of(tid).ok_or(Errno::EPERM)?;
        let pidfd = crate::sys::pidfd_open(status.tgid).map_err(|_| Errno::EPERM)?;
        if !self.valid(id) {
            return Err(Errno::EPERM);
        }
        let master = fetch_fd(&pidfd, fd_arg(args[0]))?;
        let st = nix::sys::stat::fstat(&master).map_err(|_| Errno::EPERM)?;
        let rdev = st.st_rdev;
        let is_ptmx = st.st_mode & libc::S_IFMT == libc::S_IFCHR
            && (libc::major(rdev) as u64, libc::minor(rdev) as u64) == PTMX;
        if !is_ptmx {
            return Err(Errno::ENOTTY);
        }
        let peer = crate::sys::pty_peer(master.as_fd(), (flags & PEER_FLAGS) | libc::O_CLOEXEC)?;
        let cloexec = flags & libc::O_CLOEXEC != 0;
        if let Err(e) =
            crate::sys::notif_addfd_send(self.listener.as_fd(), id, peer.as_fd(), cloexec)
        {
            return match e {
                // Interrupted or killed meanwhile: nobody to answer.
                Errno::ENOENT => Ok(()),
                e => Err(e),
            };
        }
        Ok(())
    }
}
