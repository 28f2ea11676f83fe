//! Mode, owner and time changes (and, with the network allowed, `connect`) on the
//! Landlock-only rung, supervised by the helper.
//!
//! Landlock has no right for `chmod` or `utimensat`, and without a user namespace the confined
//! uid (root on CI, capabilities dropped) owns files outside the workspace: `chmod 0644
//! /etc/shadow`, or `fchmod` on a descriptor of `/etc/passwd` opened read-only, would work. So
//! the confined child installs one more seccomp filter ([`install`]) that turns every mode- and
//! time-changing syscall into a user notification (`SECCOMP_RET_USER_NOTIF`, filter installed
//! with `SECCOMP_FILTER_FLAG_NEW_LISTENER`) and hands the listener to the helper's unconfined
//! subreaper parent over a socketpair (`SCM_RIGHTS`) before `execve`, keeping no copy (a
//! child holding its own listener could answer for itself). The kernel refuses a second
//! listener in the same filter chain (EBUSY), so the command cannot install its own.
//!
//! The parent ([`Supervisor`], driven by `reaper.rs`) **emulates** each call and never lets it
//! continue (`SECCOMP_USER_NOTIF_FLAG_CONTINUE` would have the kernel re-read the arguments
//! after our check: TOCTOU). It gets the target itself — the descriptor with `pidfd_getfd`, or
//! the path, read once with `process_vm_readv`, opened with `openat2(O_PATH,
//! RESOLVE_NO_MAGICLINKS)` relative to the child's directory descriptor (`pidfd_getfd`) or
//! working directory (`/proc/<tid>/cwd`), following a final symlink only when the call would —
//! and decides on that descriptor: its real path (`readlink /proc/self/fd/N`) lies in one of
//! the plan's writable Landlock roots and in no denied path, its owner is the child's fsuid
//! (the child has no `CAP_FOWNER`), and a new mode has no setuid/setgid bit. It then makes the
//! change on its own descriptor (`fchmodat2`/`utimensat` with `AT_EMPTY_PATH`) and replies 0 or
//! the errno, after checking the notification is still pending
//! (`SECCOMP_IOCTL_NOTIF_ID_VALID`). Anything unexpected is EPERM (fail closed); a supervisor
//! that is gone leaves these syscalls failing with ENOSYS.
//!
//! Owner changes (`chown` family) go the same way and are accepted only when they keep the
//! current owner and group (`tar x` and `cp -a` as root restore the owner a file already has).
//!
//! `connect` is supervised too (Landlock does not cover pathname Unix sockets: an ssh-agent
//! or docker.sock outside the roots would be reachable). The
//! helper connects its own copy of the socket (`pidfd_getfd`): a pathname Unix address must
//! name a socket in a writable root and is connected through `/proc/self/fd/N` of the
//! descriptor that was checked; other families and abstract addresses are connected as given
//! with the network allowed; with it denied only Unix sockets exist and an abstract or
//! unnamed address is EPERM (we connect outside Landlock's abstract-socket scope)
//! (CONTINUE would be unsafe here as well: the filter cannot see the socket's family, and the
//! descriptor or address could be swapped after a check). Each connect runs on a thread of
//! its own, since a blocking connect may wait long. Unix datagram sockets, which reach any
//! path through `sendto`/`sendmsg`, are refused by the deny filter on that rung.
//!
//! `ioctl(master, TIOCGPTPEER)` is supervised too (`pty.rs`): the child may open `/dev/ptmx`,
//! not the host's `/dev/pts`; the helper opens the slave of the child's own pty for it.
//!
//! Deliberate differences from the kernel: touching a file's times to "now" needs ownership
//! here (the kernel also accepts write permission), and a path through `/proc/self/fd/N` or
//! `/proc/thread-self/fd/N` (glibc's `lchmod` fallback) is taken as the child's descriptor N.
//!
//! The filter is built by hand (about a dozen classic-BPF instructions, [`program`]):
//! seccompiler has no user-notification action, and rewriting the return value of a compiled
//! program behind a sentinel errno would depend on its code generation.
//!
//! [`install`]: filter::install
//! [`program`]: filter::program

mod connect;
mod decode;
mod emulate;
mod filter;
mod listener;
mod pty;

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use nix::errno::Errno;

use crate::plan::Plan;

use decode::{Call, Status, decode, read_remote};
use emulate::{apply, open_target};
use listener::{reply, valid};

pub use listener::{install_and_hand_over, receive};

/// The supervisor: the listener and the roots a change may touch.
pub struct Supervisor {
    listener: Arc<OwnedFd>,
    writable: Vec<PathBuf>,
    denied: Vec<PathBuf>,
    /// Connects being performed on their own threads.
    connecting: Arc<AtomicUsize>,
    /// The network is denied: only pathname Unix sockets may be connected (an abstract one
    /// would be the host's: we connect unconfined, outside Landlock's scope).
    network_denied: bool,
}

impl Supervisor {
    /// Supervises `listener` for `plan`: changes only inside its writable Landlock roots
    /// (canonical, denied paths carved out) and never inside a denied path.
    pub fn new(listener: OwnedFd, plan: &Plan) -> Supervisor {
        let mut denied = plan.denied.clone();
        denied.extend(plan.denied.iter().filter_map(|d| d.canonicalize().ok()));
        Supervisor {
            listener: Arc::new(listener),
            writable: plan.landlock.write.clone(),
            denied,
            connecting: Arc::new(AtomicUsize::new(0)),
            network_denied: plan.seccomp.deny_inet,
        }
    }

    /// The listener, to poll for readability (a notification) or hang-up (no child left).
    pub fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.listener.as_fd()
    }

    /// Receives one notification and answers it. False when the listener is unusable.
    pub fn serve_one(&self) -> bool {
        // SAFETY: seccomp_notif is plain old data; the kernel requires it zeroed on input.
        let mut notif: libc::seccomp_notif = unsafe { std::mem::zeroed() };
        // SAFETY: `notif` is a live, writable seccomp_notif, the size the request encodes.
        let rc = unsafe {
            libc::ioctl(
                self.listener.as_raw_fd(),
                libc::SECCOMP_IOCTL_NOTIF_RECV,
                &mut notif as *mut libc::seccomp_notif,
            )
        };
        if rc != 0 {
            // ENOENT: the caller went away before we read it; EINTR: a signal (SIGTERM).
            return matches!(Errno::last(), Errno::ENOENT | Errno::EINTR);
        }
        if i64::from(notif.data.nr) == libc::SYS_connect {
            self.serve_connect(&notif);
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

    /// Whether notification `id` is still pending (its caller is still blocked in it).
    fn valid(&self, id: u64) -> bool {
        valid(&self.listener, id)
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
