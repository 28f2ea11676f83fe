//! One notification received and answered: the dispatch of [`Supervisor::serve_one`] to the
//! emulation of each supervised call.

use std::os::fd::AsFd;

use nix::errno::Errno;

use super::decode::{Call, Status, decode, read_remote};
use super::emulate::{apply, open_target};
use super::listener::reply;
use super::supervisor::Supervisor;

impl Supervisor {
    /// Receives one notification and answers it. False when the listener is unusable.
    pub fn serve_one(&self) -> bool {
        let notif = match crate::sys::notif_recv(self.listener.as_fd()) {
            Ok(notif) => notif,
            // ENOENT: the caller went away before we read it; EINTR: a signal (SIGTERM).
            Err(e) => return matches!(e, Errno::ENOENT | Errno::EINTR),
        };
        if i64::from(notif.data.nr) == libc::SYS_connect {
            self.serve_connect(&notif);
            return true;
        }
        if i64::from(notif.data.nr) == libc::SYS_listen {
            self.serve_listen(&notif);
            return true;
        }
        if i64::from(notif.data.nr) == libc::SYS_ioctl {
            self.serve_pty_peer(&notif);
            return true;
        }
        let call = Call {
            nr: i64::from(notif.data.nr),
            args: notif.data.args,
        };
        let answer = self.handle(notif.id, notif.pid, &call);
        reply(&self.listener, notif.id, answer)
    }

    fn handle(&self, id: u64, tid: u32, call: &Call) -> Result<(), Errno> {
        let Some((target, change)) = decode(call, |addr, len| read_remote(tid, addr, len))? else {
            return Ok(());
        };
        let status = Status::of(tid).ok_or(Errno::EPERM)?;
        let pidfd = crate::sys::pidfd_open(status.tgid).map_err(|_| Errno::EPERM)?;
        // The tid and its thread group are the caller's only while it is still blocked in
        // the call; from here on the pidfd pins the process.
        if !self.valid(id) {
            return Err(Errno::EPERM);
        }
        let file = open_target(&target, tid, &pidfd)?;
        self.check(&file, status.fsuid, change)?;
        if !self.valid(id) {
            return Err(Errno::EPERM);
        }
        apply(&file, change)
    }
}
