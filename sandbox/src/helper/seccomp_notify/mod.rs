//! The seccomp user-notification supervisor: mode, owner and time changes (and `connect`,
//! `listen`, `ioctl(TIOCGPTPEER)`) on the Landlock-only rung, emulated by the helper.
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
//! The parent ([`Supervisor`], `supervisor.rs`, driven by `reaper.rs`) **emulates** each call and never lets it
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
//! unnamed address is EPERM (we connect outside Landlock's abstract-socket scope); in proxy
//! mode an IP socket is connected only to 127.0.0.1 at the egress proxy's two ports (EACCES
//! otherwise: we connect outside the child's Landlock TCP rules too)
//! (CONTINUE would be unsafe here as well: the filter cannot see the socket's family, and the
//! descriptor or address could be swapped after a check). Each connect runs on a thread of
//! its own, since a blocking connect may wait long. Unix datagram sockets, which reach any
//! path through `sendto`/`sendmsg`, are refused by the deny filter on that rung.
//!
//! `listen` is supervised too (`listen.rs`): in proxy mode an IP socket may not listen (an
//! unbound one would be autobound on every host address, past Landlock's bind rule, and
//! reachable from outside); the helper listens on its copy of the socket otherwise.
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
mod listen;
mod listener;
mod pty;
mod serve;
mod supervisor;

pub use listener::{install_and_hand_over, receive};
pub use supervisor::Supervisor;
