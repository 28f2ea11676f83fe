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
//! With the network allowed, `connect` is supervised too (Landlock does not cover pathname
//! Unix sockets: an ssh-agent or docker.sock outside the roots would be reachable). The
//! helper connects its own copy of the socket (`pidfd_getfd`): a pathname Unix address must
//! name a socket in a writable root and is connected through `/proc/self/fd/N` of the
//! descriptor that was checked; other families and abstract addresses are connected as given
//! (CONTINUE would be unsafe here as well: the filter cannot see the socket's family, and the
//! descriptor or address could be swapped after a check). Each connect runs on a thread of
//! its own, since a blocking connect may wait long. Unix datagram sockets, which reach any
//! path through `sendto`/`sendmsg`, are refused by the deny filter on that rung.
//!
//! Deliberate differences from the kernel: touching a file's times to "now" needs ownership
//! here (the kernel also accepts write permission), and a path through `/proc/self/fd/N` or
//! `/proc/thread-self/fd/N` (glibc's `lchmod` fallback) is taken as the child's descriptor N.
//!
//! The filter is built by hand (about a dozen classic-BPF instructions, [`program`]):
//! seccompiler has no user-notification action, and rewriting the return value of a compiled
//! program behind a sentinel errno would depend on its code generation.

use std::ffi::{CString, OsString};
use std::io::{IoSlice, IoSliceMut};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use nix::errno::Errno;
use nix::sys::signal::{SigSet, SigmaskHow, Signal, pthread_sigmask};
use nix::sys::socket::{ControlMessage, ControlMessageOwned, MsgFlags, recvmsg, sendmsg};

use crate::error::{SetupError, Stage};
use crate::plan::Plan;

// ---- The filter (child side) ---------------------------------------------------------------

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: Option<u32> = Some(0xC000_003E);
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: Option<u32> = Some(0xC000_00B7);
#[cfg(target_arch = "riscv64")]
const AUDIT_ARCH: Option<u32> = Some(0xC000_00F3);
#[cfg(not(any(
    target_arch = "x86_64",
    target_arch = "aarch64",
    target_arch = "riscv64"
)))]
const AUDIT_ARCH: Option<u32> = None;

/// x32 system calls carry this bit on x86_64; the filter sends all of them to the supervisor,
/// which refuses numbers it does not know (the 64-bit numbers below would miss them).
#[cfg(target_arch = "x86_64")]
const X32_SYSCALL_BIT: Option<u32> = Some(0x4000_0000);
#[cfg(not(target_arch = "x86_64"))]
const X32_SYSCALL_BIT: Option<u32> = None;

/// `fchmodat2` (Linux 6.6), the same number on every architecture; libc may not name it.
const SYS_FCHMODAT2: i64 = 452;

/// The supervised system calls.
#[cfg(target_arch = "x86_64")]
const SUPERVISED: &[i64] = &[
    libc::SYS_chown,
    libc::SYS_fchown,
    libc::SYS_lchown,
    libc::SYS_fchownat,
    libc::SYS_chmod,
    libc::SYS_fchmod,
    libc::SYS_fchmodat,
    SYS_FCHMODAT2,
    libc::SYS_utimensat,
    libc::SYS_utimes,
    libc::SYS_futimesat,
    libc::SYS_utime,
];
#[cfg(not(target_arch = "x86_64"))]
const SUPERVISED: &[i64] = &[
    libc::SYS_fchown,
    libc::SYS_fchownat,
    libc::SYS_fchmod,
    libc::SYS_fchmodat,
    SYS_FCHMODAT2,
    libc::SYS_utimensat,
];

const SECCOMP_DATA_NR: u32 = 0;
const SECCOMP_DATA_ARCH: u32 = 4;

fn stmt(code: u32, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u32, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter {
        code: code as u16,
        jt,
        jf,
        k,
    }
}

/// The classic-BPF program: a foreign architecture is allowed here (the deny filter kills
/// it), each supervised number (and, on x86_64, every x32 call) returns USER_NOTIF, anything
/// else ALLOW. With `connect` (network allowed), `connect` is supervised too.
pub fn program(connect: bool) -> Result<Vec<libc::sock_filter>, SetupError> {
    use libc::{BPF_ABS, BPF_JEQ, BPF_JGE, BPF_JMP, BPF_K, BPF_LD, BPF_RET, BPF_W};
    let arch = AUDIT_ARCH.ok_or_else(|| {
        SetupError::new(
            Stage::Seccomp,
            format!(
                "supervising chmod/utimes is not implemented on {}",
                std::env::consts::ARCH
            ),
        )
        .hint("use a namespace backend on this architecture")
    })?;
    let numbers: Vec<u32> = SUPERVISED
        .iter()
        .chain(connect.then_some(&libc::SYS_connect))
        .map(|n| *n as u32)
        .collect();
    let x32 = usize::from(X32_SYSCALL_BIT.is_some());
    // Layout: [0] ld arch, [1] jeq arch, [2] ld nr, [3..3+x32) jge x32, then one jeq per
    // number, then ret ALLOW, ret USER_NOTIF.
    let first_cmp = 3;
    let allow = first_cmp + x32 + numbers.len();
    let notify = allow + 1;
    let offset = |from: usize, to: usize| -> u8 {
        u8::try_from(to - from - 1).expect("short seccomp program")
    };
    let mut prog = vec![
        stmt(BPF_LD | BPF_W | BPF_ABS, SECCOMP_DATA_ARCH),
        jump(BPF_JMP | BPF_JEQ | BPF_K, arch, 0, offset(1, allow)),
        stmt(BPF_LD | BPF_W | BPF_ABS, SECCOMP_DATA_NR),
    ];
    if let Some(bit) = X32_SYSCALL_BIT {
        let at = prog.len();
        prog.push(jump(BPF_JMP | BPF_JGE | BPF_K, bit, offset(at, notify), 0));
    }
    for nr in numbers {
        let at = prog.len();
        prog.push(jump(BPF_JMP | BPF_JEQ | BPF_K, nr, offset(at, notify), 0));
    }
    prog.push(stmt(BPF_RET | BPF_K, libc::SECCOMP_RET_ALLOW));
    prog.push(stmt(BPF_RET | BPF_K, libc::SECCOMP_RET_USER_NOTIF));
    debug_assert_eq!(prog.len(), notify + 1);
    Ok(prog)
}

/// Installs the notifying filter on the calling thread (no_new_privs is set) and returns its
/// listener.
pub fn install(connect: bool) -> Result<OwnedFd, SetupError> {
    let mut prog = program(connect)?;
    let fprog = libc::sock_fprog {
        len: prog.len() as u16,
        filter: prog.as_mut_ptr(),
    };
    // SAFETY: `fprog` points at `prog`, a live array of `len` sock_filter entries, for the
    // duration of the call; the kernel copies the program and returns a new descriptor (or -1).
    let fd = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            libc::SECCOMP_FILTER_FLAG_NEW_LISTENER,
            &fprog as *const libc::sock_fprog,
        )
    };
    if fd < 0 {
        let e = std::io::Error::last_os_error();
        return Err(
            SetupError::os(Stage::Seccomp, "seccomp(SET_MODE_FILTER, NEW_LISTENER)", &e).hint(
                "supervising chmod/utimes needs Linux >= 5.9 (pidfd_getfd, user notifications)",
            ),
        );
    }
    // SAFETY: `fd` is the fresh listener descriptor the kernel just returned; we own it alone.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// Child side: installs the filter and sends its listener to the supervisor over `sock`,
/// closing both (the command must not hold the listener). `connect`: supervise `connect` too
/// (network allowed: pathname Unix sockets only inside the writable roots).
pub fn install_and_hand_over(sock: OwnedFd, connect: bool) -> Result<(), SetupError> {
    let listener = install(connect)?;
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

// ---- The supervisor (parent side) ----------------------------------------------------------

/// What a call asks for.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Change {
    /// New permission bits.
    Mode(u32),
    /// New access and modification times; `None` is "now" (a NULL times argument).
    Times(Option<[libc::timespec; 2]>),
    /// New owner and group (`u32::MAX`: unchanged); only the current ones are accepted, so
    /// `tar x` and `cp -a` as root, restoring the owner they already have, keep working.
    Owner(u32, u32),
}

/// Which file a call names.
#[derive(Debug, Clone, PartialEq)]
enum Target {
    /// The child's descriptor (`fchmod`, `utimensat(fd, NULL, ...)`).
    Fd(i32),
    /// A path relative to the child's `dirfd` (`AT_FDCWD`: its working directory).
    Path {
        dirfd: i32,
        path: Vec<u8>,
        follow: bool,
        empty_path: bool,
    },
}

/// One decoded call (`None`: nothing to change, the kernel answers 0 at once), or the errno
/// to answer without looking further.
type Decoded = Result<Option<(Target, Change)>, Errno>;

/// The supervisor: the listener and the roots a change may touch.
pub struct Supervisor {
    listener: Arc<OwnedFd>,
    writable: Vec<PathBuf>,
    denied: Vec<PathBuf>,
    /// Connects being performed on their own threads.
    connecting: Arc<AtomicUsize>,
}

/// Most `connect`s performed at once (each on its own thread, since a blocking connect may
/// wait long and the supervisor must keep serving); beyond that, EAGAIN.
const MAX_CONNECTS: usize = 32;

/// A notification as the kernel delivers it, with the fields the decoder reads.
struct Call {
    nr: i64,
    args: [u64; 6],
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

    /// `connect`: checked here, performed on a thread of its own (it may block), which
    /// answers.
    fn serve_connect(&self, notif: &libc::seccomp_notif) {
        let id = notif.id;
        let (sock, addr, keep) = match self.prepare_connect(id, notif.pid, notif.data.args) {
            Ok(prepared) => prepared,
            Err(e) => {
                reply(&self.listener, id, Err(e));
                return;
            }
        };
        if self.connecting.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTS {
            self.connecting.fetch_sub(1, Ordering::SeqCst);
            reply(&self.listener, id, Err(Errno::EAGAIN));
            return;
        }
        let listener = Arc::clone(&self.listener);
        let connecting = Arc::clone(&self.connecting);
        // The thread inherits our mask: SIGTERM blocked there, so it always interrupts the
        // supervisor's own wait instead (the flag it sets is process-wide).
        let mut term = SigSet::empty();
        term.add(Signal::SIGTERM);
        let mut old = SigSet::empty();
        let _ = pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&term), Some(&mut old));
        let spawned = std::thread::Builder::new()
            .name("connect".into())
            .spawn(move || {
                let answer = connect_raw(&sock, &addr);
                drop(keep);
                reply(&listener, id, answer);
                connecting.fetch_sub(1, Ordering::SeqCst);
            });
        let _ = pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&old), None);
        if spawned.is_err() {
            self.connecting.fetch_sub(1, Ordering::SeqCst);
            reply(&self.listener, id, Err(Errno::EAGAIN));
        }
    }

    /// The socket (our copy), the address to connect it to and what must stay open until
    /// then. A pathname Unix address must name a socket inside the writable roots (outside
    /// them, EACCES); it is connected through `/proc/self/fd/N` of the O_PATH descriptor that
    /// was checked, so a path swapped meanwhile changes nothing. Other families and abstract
    /// or unnamed Unix addresses go through unchanged (the network is allowed).
    fn prepare_connect(
        &self,
        id: u64,
        tid: u32,
        args: [u64; 6],
    ) -> Result<(OwnedFd, Vec<u8>, Option<OwnedFd>), Errno> {
        let status = Status::of(tid).ok_or(Errno::EPERM)?;
        let pidfd = crate::sys::pidfd_open(status.tgid).map_err(|_| Errno::EPERM)?;
        if !self.valid(id) {
            return Err(Errno::EPERM);
        }
        let len = args[2] as u32 as usize;
        if len > std::mem::size_of::<libc::sockaddr_storage>() {
            return Err(Errno::EINVAL);
        }
        let addr = if len == 0 {
            Vec::new()
        } else {
            read_remote(tid, args[1], len)?
        };
        let sock = fetch_fd(&pidfd, fd_arg(args[0]))?;
        let domain = socket_domain(&sock).map_err(|_| Errno::ENOTSOCK)?;
        let family = addr
            .get(..2)
            .map(|b| i32::from(u16::from_ne_bytes([b[0], b[1]])));
        let named = domain == libc::AF_UNIX
            && family == Some(libc::AF_UNIX)
            && addr.get(2).is_some_and(|b| *b != 0);
        if !named {
            return Ok((sock, addr, None));
        }
        let path: Vec<u8> = addr[2..].iter().take_while(|b| **b != 0).copied().collect();
        let base = if path.first() == Some(&b'/') {
            None
        } else {
            Some(
                std::fs::File::open(format!("/proc/{tid}/cwd"))
                    .map(OwnedFd::from)
                    .map_err(|_| Errno::EPERM)?,
            )
        };
        let dir = base.as_ref().map_or(libc::AT_FDCWD, |b| b.as_raw_fd());
        let file = openat2(dir, &path, true)?;
        let real = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd()))
            .map_err(|_| Errno::EACCES)?;
        if !self.may_change(&real) {
            return Err(Errno::EACCES);
        }
        let st = nix::sys::stat::fstat(&file).map_err(|_| Errno::EACCES)?;
        if st.st_mode & libc::S_IFMT != libc::S_IFSOCK {
            return Err(Errno::ECONNREFUSED);
        }
        let mut checked = (libc::AF_UNIX as u16).to_ne_bytes().to_vec();
        checked.extend_from_slice(format!("/proc/self/fd/{}", file.as_raw_fd()).as_bytes());
        checked.push(0);
        Ok((sock, checked, Some(file)))
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

    /// The checks, on the descriptor about to be changed.
    fn check(&self, file: &OwnedFd, fsuid: u32, change: Change) -> Result<(), Errno> {
        let real = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd()))
            .map_err(|_| Errno::EPERM)?;
        if !self.may_change(&real) {
            return Err(Errno::EPERM);
        }
        let st = nix::sys::stat::fstat(file).map_err(|_| Errno::EPERM)?;
        if st.st_uid != fsuid {
            return Err(Errno::EPERM);
        }
        if let Change::Mode(mode) = change
            && mode & (libc::S_ISUID | libc::S_ISGID) != 0
        {
            return Err(Errno::EPERM);
        }
        let keeps = |wanted: u32, current: u32| wanted == u32::MAX || wanted == current;
        if let Change::Owner(uid, gid) = change
            && !(keeps(uid, st.st_uid) && keeps(gid, st.st_gid))
        {
            return Err(Errno::EPERM);
        }
        Ok(())
    }

    /// A real path the child may change the mode or times of.
    fn may_change(&self, real: &Path) -> bool {
        real.is_absolute()
            && self.writable.iter().any(|w| real.starts_with(w))
            && !self.denied.iter().any(|d| real.starts_with(d))
    }
}

/// What `/proc/<tid>/status` says of the caller.
struct Status {
    tgid: i32,
    fsuid: u32,
}

impl Status {
    fn of(tid: u32) -> Option<Status> {
        let text = std::fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
        let field = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(name))
                .map(|rest| rest.split_whitespace().collect::<Vec<_>>())
        };
        Some(Status {
            tgid: field("Tgid:")?.first()?.parse().ok()?,
            fsuid: field("Uid:")?.get(3)?.parse().ok()?,
        })
    }
}

/// Whether notification `id` on `listener` is still pending.
fn valid(listener: &OwnedFd, id: u64) -> bool {
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
fn reply(listener: &OwnedFd, id: u64, answer: Result<(), Errno>) -> bool {
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

/// `SO_DOMAIN` of a socket.
fn socket_domain(sock: &OwnedFd) -> Result<i32, Errno> {
    let mut domain: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `domain` and `len` are live and sized for an int option; the kernel writes at
    // most `len` bytes.
    let rc = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_DOMAIN,
            (&mut domain as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if rc == 0 {
        Ok(domain)
    } else {
        Err(Errno::last())
    }
}

/// `connect(sock, addr)` on our copy of the caller's socket (the same open socket).
fn connect_raw(sock: &OwnedFd, addr: &[u8]) -> Result<(), Errno> {
    let ptr = if addr.is_empty() {
        std::ptr::null()
    } else {
        addr.as_ptr().cast::<libc::sockaddr>()
    };
    // SAFETY: `ptr` is NULL with length 0 or points at `addr`, live for the call and of the
    // length passed; the kernel only reads it.
    let rc = unsafe { libc::connect(sock.as_raw_fd(), ptr, addr.len() as libc::socklen_t) };
    if rc == 0 { Ok(()) } else { Err(Errno::last()) }
}

const UTIME_NOW: i64 = (1 << 30) - 1;
const UTIME_OMIT: i64 = (1 << 30) - 2;

fn fd_arg(a: u64) -> i32 {
    a as u32 as i32
}

/// Decodes a call; `read(addr, len)` reads the caller's memory (`len` bytes, or up to a NUL
/// when `len` is 0).
fn decode(call: &Call, read: impl Fn(u64, usize) -> Result<Vec<u8>, Errno>) -> Decoded {
    let a = call.args;
    let path = |addr: u64| -> Result<Vec<u8>, Errno> {
        if addr == 0 {
            return Err(Errno::EFAULT);
        }
        read(addr, 0)
    };
    let at = |dirfd: u64, addr: u64, follow: bool, empty_path: bool| -> Result<Target, Errno> {
        Ok(Target::Path {
            dirfd: fd_arg(dirfd),
            path: path(addr)?,
            follow,
            empty_path,
        })
    };
    let mode = |m: u64| Change::Mode(m as u32 & 0o7777);
    let owner = |u: u64, g: u64| Change::Owner(u as u32, g as u32);
    #[cfg(target_arch = "x86_64")] // utimes and futimesat: x86_64 only
    let timeval_pair = |addr: u64| -> Result<Change, Errno> {
        if addr == 0 {
            return Ok(Change::Times(None));
        }
        let b = read(addr, 32)?;
        let mut t = [libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        }; 2];
        for (i, ts) in t.iter_mut().enumerate() {
            let sec = i64::from_ne_bytes(b[i * 16..i * 16 + 8].try_into().unwrap_or_default());
            let usec =
                i64::from_ne_bytes(b[i * 16 + 8..i * 16 + 16].try_into().unwrap_or_default());
            if !(0..1_000_000).contains(&usec) {
                return Err(Errno::EINVAL);
            }
            ts.tv_sec = sec;
            ts.tv_nsec = usec * 1000;
        }
        Ok(Change::Times(Some(t)))
    };
    let nr = call.nr;
    #[cfg(target_arch = "x86_64")]
    {
        if nr == libc::SYS_chown || nr == libc::SYS_lchown {
            let follow = nr == libc::SYS_chown;
            let target = at(libc::AT_FDCWD as u64, a[0], follow, false)?;
            return Ok(Some((target, owner(a[1], a[2]))));
        }
        if nr == libc::SYS_chmod {
            return Ok(Some((
                at(libc::AT_FDCWD as u64, a[0], true, false)?,
                mode(a[1]),
            )));
        }
        if nr == libc::SYS_utimes {
            return Ok(Some((
                at(libc::AT_FDCWD as u64, a[0], true, false)?,
                timeval_pair(a[1])?,
            )));
        }
        if nr == libc::SYS_futimesat {
            let change = timeval_pair(a[2])?;
            if a[1] == 0 && fd_arg(a[0]) != libc::AT_FDCWD {
                return Ok(Some((Target::Fd(fd_arg(a[0])), change)));
            }
            return Ok(Some((at(a[0], a[1], true, false)?, change)));
        }
        if nr == libc::SYS_utime {
            let change = if a[1] == 0 {
                Change::Times(None)
            } else {
                let b = read(a[1], 16)?;
                let sec = |i: usize| i64::from_ne_bytes(b[i..i + 8].try_into().unwrap_or_default());
                Change::Times(Some([
                    libc::timespec {
                        tv_sec: sec(0),
                        tv_nsec: 0,
                    },
                    libc::timespec {
                        tv_sec: sec(8),
                        tv_nsec: 0,
                    },
                ]))
            };
            return Ok(Some((
                at(libc::AT_FDCWD as u64, a[0], true, false)?,
                change,
            )));
        }
    }
    if nr == libc::SYS_fchown {
        return Ok(Some((Target::Fd(fd_arg(a[0])), owner(a[1], a[2]))));
    }
    if nr == libc::SYS_fchownat {
        let flags = a[4] as u32 as i32;
        if flags & !(libc::AT_SYMLINK_NOFOLLOW | libc::AT_EMPTY_PATH) != 0 {
            return Err(Errno::EINVAL);
        }
        let follow = flags & libc::AT_SYMLINK_NOFOLLOW == 0;
        let empty = flags & libc::AT_EMPTY_PATH != 0;
        return Ok(Some((at(a[0], a[1], follow, empty)?, owner(a[2], a[3]))));
    }
    if nr == libc::SYS_fchmod {
        return Ok(Some((Target::Fd(fd_arg(a[0])), mode(a[1]))));
    }
    if nr == libc::SYS_fchmodat {
        return Ok(Some((at(a[0], a[1], true, false)?, mode(a[2]))));
    }
    if nr == SYS_FCHMODAT2 {
        let flags = a[3] as u32 as i32;
        if flags & !(libc::AT_SYMLINK_NOFOLLOW | libc::AT_EMPTY_PATH) != 0 {
            return Err(Errno::EINVAL);
        }
        let follow = flags & libc::AT_SYMLINK_NOFOLLOW == 0;
        let empty = flags & libc::AT_EMPTY_PATH != 0;
        return Ok(Some((at(a[0], a[1], follow, empty)?, mode(a[2]))));
    }
    if nr == libc::SYS_utimensat {
        let change = if a[2] == 0 {
            Change::Times(None)
        } else {
            let b = read(a[2], 32)?;
            let field = |i: usize| i64::from_ne_bytes(b[i..i + 8].try_into().unwrap_or_default());
            let t = [(field(0), field(8)), (field(16), field(24))];
            if t.iter().all(|(_, ns)| *ns == UTIME_OMIT) {
                return Ok(None); // both UTIME_OMIT: the kernel answers 0 before any lookup
            }
            for (_, ns) in t {
                if ns != UTIME_NOW && ns != UTIME_OMIT && !(0..1_000_000_000).contains(&ns) {
                    return Err(Errno::EINVAL);
                }
            }
            Change::Times(Some(t.map(|(s, ns)| libc::timespec {
                tv_sec: s,
                tv_nsec: ns,
            })))
        };
        let flags = a[3] as u32 as i32;
        if a[1] == 0 && fd_arg(a[0]) != libc::AT_FDCWD {
            if flags != 0 {
                return Err(Errno::EINVAL);
            }
            return Ok(Some((Target::Fd(fd_arg(a[0])), change)));
        }
        if flags & !(libc::AT_SYMLINK_NOFOLLOW | libc::AT_EMPTY_PATH) != 0 {
            return Err(Errno::EINVAL);
        }
        let follow = flags & libc::AT_SYMLINK_NOFOLLOW == 0;
        let empty = flags & libc::AT_EMPTY_PATH != 0;
        return Ok(Some((at(a[0], a[1], follow, empty)?, change)));
    }
    Err(Errno::EPERM) // a number this supervisor does not know (x32, a new filter entry)
}

/// Reads `len` bytes (or, with 0, a NUL-terminated string of at most PATH_MAX bytes) at
/// `addr` in the caller's memory, one page at a time so an unmapped next page does not fail
/// a short string.
fn read_remote(tid: u32, addr: u64, len: usize) -> Result<Vec<u8>, Errno> {
    use nix::sys::uio::{RemoteIoVec, process_vm_readv};
    const PAGE: u64 = 4096;
    let want = if len == 0 {
        libc::PATH_MAX as usize
    } else {
        len
    };
    let mut out = Vec::with_capacity(want.min(4096));
    let mut at = addr;
    while out.len() < want {
        let chunk = ((PAGE - at % PAGE) as usize).min(want - out.len());
        let mut buf = vec![0u8; chunk];
        let remote = [RemoteIoVec {
            base: at as usize,
            len: chunk,
        }];
        let n = process_vm_readv(
            nix::unistd::Pid::from_raw(tid as i32),
            &mut [IoSliceMut::new(&mut buf)],
            &remote,
        )
        .map_err(|_| Errno::EFAULT)?;
        if n == 0 {
            return Err(Errno::EFAULT);
        }
        buf.truncate(n);
        if len == 0
            && let Some(end) = buf.iter().position(|b| *b == 0)
        {
            out.extend_from_slice(&buf[..end]);
            return Ok(out);
        }
        out.extend_from_slice(&buf);
        at += n as u64;
    }
    if len == 0 {
        Err(Errno::ENAMETOOLONG)
    } else {
        Ok(out)
    }
}

/// `pidfd_getfd(pidfd, fd)`: our own copy of the caller's descriptor `fd`.
fn fetch_fd(pidfd: &OwnedFd, fd: i32) -> Result<OwnedFd, Errno> {
    if fd < 0 {
        return Err(Errno::EBADF);
    }
    // SAFETY: the call only duplicates a descriptor into our table (close-on-exec) and
    // returns it; no memory is passed.
    let new = unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd.as_raw_fd(), fd, 0u32) };
    if new < 0 {
        return Err(match Errno::last() {
            Errno::EBADF => Errno::EBADF,
            _ => Errno::EPERM,
        });
    }
    // SAFETY: `new` is a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(new as RawFd) })
}

/// `N` of a path `/proc/self/fd/N` or `/proc/thread-self/fd/N`: the caller's descriptor.
fn own_fd_path(path: &[u8]) -> Option<i32> {
    let rest = path
        .strip_prefix(b"/proc/self/fd/")
        .or_else(|| path.strip_prefix(b"/proc/thread-self/fd/"))?;
    if rest.is_empty() || !rest.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(rest).ok()?.parse().ok()
}

/// Opens what `target` names, as the caller would reach it.
fn open_target(target: &Target, tid: u32, pidfd: &OwnedFd) -> Result<OwnedFd, Errno> {
    match target {
        Target::Fd(fd) => {
            let file = fetch_fd(pidfd, *fd)?;
            // fchmod and futimens refuse O_PATH descriptors.
            let fl = nix::fcntl::fcntl(&file, nix::fcntl::FcntlArg::F_GETFL)
                .map_err(|_| Errno::EPERM)?;
            if fl & libc::O_PATH != 0 {
                return Err(Errno::EBADF);
            }
            Ok(file)
        }
        Target::Path {
            dirfd,
            path,
            follow,
            empty_path,
        } => {
            if let Some(fd) = own_fd_path(path) {
                return fetch_fd(pidfd, fd);
            }
            let base = if path.first() == Some(&b'/') {
                None
            } else if *dirfd == libc::AT_FDCWD {
                Some(
                    std::fs::File::open(format!("/proc/{tid}/cwd"))
                        .map(OwnedFd::from)
                        .map_err(|_| Errno::EPERM)?,
                )
            } else {
                Some(fetch_fd(pidfd, *dirfd)?)
            };
            if path.is_empty() {
                if !*empty_path {
                    return Err(Errno::ENOENT);
                }
                return base.ok_or(Errno::EPERM);
            }
            let dir = base.as_ref().map_or(libc::AT_FDCWD, |b| b.as_raw_fd());
            openat2(dir, path, *follow)
        }
    }
}

/// `openat2(dir, path, O_PATH [| O_NOFOLLOW], RESOLVE_NO_MAGICLINKS)`.
fn openat2(dir: RawFd, path: &[u8], follow: bool) -> Result<OwnedFd, Errno> {
    let c = CString::new(path).map_err(|_| Errno::EINVAL)?;
    // SAFETY: open_how is plain old data; zeroed is a valid value before the fields are set.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (libc::O_PATH | libc::O_CLOEXEC) as u64;
    if !follow {
        how.flags |= libc::O_NOFOLLOW as u64;
    }
    how.resolve = libc::RESOLVE_NO_MAGICLINKS;
    // SAFETY: `c` is a valid NUL-terminated path and `how` a live open_how of the size
    // passed; the call only returns a new descriptor.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir,
            c.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    if fd < 0 {
        return Err(Errno::last());
    }
    // SAFETY: `fd` is a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// Makes the change on our own descriptor.
fn apply(file: &OwnedFd, change: Change) -> Result<(), Errno> {
    let rc = match change {
        // SAFETY: the empty path with AT_EMPTY_PATH names `file` itself; nothing else is read.
        Change::Mode(mode) => unsafe {
            libc::syscall(
                SYS_FCHMODAT2,
                file.as_raw_fd(),
                c"".as_ptr(),
                mode,
                libc::AT_EMPTY_PATH,
            )
        },
        // SAFETY: the empty path with AT_EMPTY_PATH names `file` itself; nothing else is read.
        Change::Owner(uid, gid) => unsafe {
            libc::fchownat(
                file.as_raw_fd(),
                c"".as_ptr(),
                uid,
                gid,
                libc::AT_EMPTY_PATH,
            ) as libc::c_long
        },
        Change::Times(times) => {
            let ptr = times.as_ref().map_or(std::ptr::null(), |t| t.as_ptr());
            // SAFETY: the empty path with AT_EMPTY_PATH names `file`; `ptr` is NULL or points
            // at two live timespecs the kernel only reads.
            unsafe {
                libc::syscall(
                    libc::SYS_utimensat,
                    file.as_raw_fd(),
                    c"".as_ptr(),
                    ptr,
                    libc::AT_EMPTY_PATH,
                )
            }
        }
    };
    if rc == 0 {
        return Ok(());
    }
    match (Errno::last(), change) {
        // fchmodat2 is Linux 6.6: chmod through our own descriptor's magic link instead.
        (Errno::ENOSYS, Change::Mode(mode)) => {
            let st = nix::sys::stat::fstat(file).map_err(|_| Errno::EPERM)?;
            if st.st_mode & libc::S_IFMT == libc::S_IFLNK {
                return Err(Errno::EOPNOTSUPP);
            }
            let link = PathBuf::from(OsString::from_vec(
                format!("/proc/self/fd/{}", file.as_raw_fd()).into_bytes(),
            ));
            nix::sys::stat::fchmodat(
                nix::fcntl::AT_FDCWD,
                &link,
                nix::sys::stat::Mode::from_bits_truncate(mode),
                nix::sys::stat::FchmodatFlags::FollowSymlink,
            )
        }
        (e, _) => Err(e),
    }
}

/// Decodes without a live caller (unit tests).
#[cfg(test)]
fn decode_with(nr: i64, args: [u64; 6], memory: &[(u64, &[u8])]) -> Decoded {
    decode(&Call { nr, args }, |addr, len| {
        for (base, bytes) in memory {
            if addr >= *base && addr < base + bytes.len() as u64 {
                let from = (addr - base) as usize;
                let rest = &bytes[from..];
                return Ok(if len == 0 {
                    rest.split(|b| *b == 0).next().unwrap_or_default().to_vec()
                } else {
                    rest[..len.min(rest.len())].to_vec()
                });
            }
        }
        Err(Errno::EFAULT)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn program_sends_each_supervised_call_to_the_listener() {
        let prog = program(true).unwrap();
        let ret_notify = prog.last().unwrap();
        assert_eq!(ret_notify.k, libc::SECCOMP_RET_USER_NOTIF);
        let notify_at = prog.len() - 1;
        for nr in SUPERVISED.iter().chain([&libc::SYS_connect]) {
            let (i, ins) = prog
                .iter()
                .enumerate()
                .find(|(_, ins)| {
                    ins.code == (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16
                        && ins.k == *nr as u32
                })
                .unwrap_or_else(|| panic!("{nr} not in the filter"));
            assert_eq!(i + 1 + usize::from(ins.jt), notify_at, "{nr}");
        }
        // A foreign architecture jumps to ALLOW (the deny filter kills it).
        assert_eq!(2 + usize::from(prog[1].jf), notify_at - 1);
        // Without network, connect is not supervised.
        let jeq = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
        let prog = program(false).unwrap();
        assert!(
            !prog
                .iter()
                .any(|i| i.code == jeq && i.k == libc::SYS_connect as u32)
        );
    }

    #[test]
    fn decodes_paths_modes_and_times() {
        let path = b"a/b\0".as_slice();
        let at_fdcwd = libc::AT_FDCWD as u32 as u64;
        let (t, c) = decode_with(
            libc::SYS_fchmodat,
            [at_fdcwd, 0x1000, 0o100755, 0, 0, 0],
            &[(0x1000, path)],
        )
        .unwrap()
        .unwrap();
        assert_eq!(c, Change::Mode(0o755));
        assert_eq!(
            t,
            Target::Path {
                dirfd: libc::AT_FDCWD,
                path: b"a/b".to_vec(),
                follow: true,
                empty_path: false
            }
        );
        // futimens(fd, NULL) is utimensat(fd, NULL, NULL, 0).
        let (t, c) = decode_with(libc::SYS_utimensat, [7, 0, 0, 0, 0, 0], &[])
            .unwrap()
            .unwrap();
        assert_eq!((t, c), (Target::Fd(7), Change::Times(None)));
        // A NULL path without a descriptor, and bad nanoseconds.
        assert_eq!(
            decode_with(libc::SYS_fchmodat, [at_fdcwd, 0, 0o644, 0, 0, 0], &[]),
            Err(Errno::EFAULT)
        );
        let bad: Vec<u8> = [0i64, 2_000_000_000, 0, 0]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect();
        assert_eq!(
            decode_with(
                libc::SYS_utimensat,
                [at_fdcwd, 0x1000, 0x2000, 0, 0, 0],
                &[(0x1000, path), (0x2000, &bad)]
            ),
            Err(Errno::EINVAL)
        );
        // fchmodat2 with AT_SYMLINK_NOFOLLOW does not follow; unknown flags are EINVAL.
        let (t, _) = decode_with(
            SYS_FCHMODAT2,
            [
                at_fdcwd,
                0x1000,
                0o644,
                libc::AT_SYMLINK_NOFOLLOW as u64,
                0,
                0,
            ],
            &[(0x1000, path)],
        )
        .unwrap()
        .unwrap();
        assert!(matches!(t, Target::Path { follow: false, .. }));
        // Both times UTIME_OMIT: nothing to do, answered 0 without a lookup.
        let omit: Vec<u8> = [0i64, UTIME_OMIT, 0, UTIME_OMIT]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect();
        assert_eq!(
            decode_with(
                libc::SYS_utimensat,
                [at_fdcwd, 0x1000, 0x2000, 0, 0, 0],
                &[(0x1000, path), (0x2000, &omit)]
            ),
            Ok(None)
        );
        assert_eq!(
            decode_with(
                SYS_FCHMODAT2,
                [at_fdcwd, 0x1000, 0o644, 0x8000, 0, 0],
                &[(0x1000, path)]
            ),
            Err(Errno::EINVAL)
        );
        // fchownat(dirfd, path, uid, gid, AT_SYMLINK_NOFOLLOW); -1 keeps a value.
        let (t, c) = decode_with(
            libc::SYS_fchownat,
            [
                at_fdcwd,
                0x1000,
                0,
                u32::MAX as u64,
                libc::AT_SYMLINK_NOFOLLOW as u64,
                0,
            ],
            &[(0x1000, path)],
        )
        .unwrap()
        .unwrap();
        assert!(matches!(t, Target::Path { follow: false, .. }));
        assert_eq!(c, Change::Owner(0, u32::MAX));
        // An unknown number is refused.
        assert_eq!(
            decode_with(libc::SYS_getpid, [0; 6], &[]),
            Err(Errno::EPERM)
        );
    }

    #[test]
    fn own_descriptor_paths_name_the_callers_descriptor() {
        assert_eq!(own_fd_path(b"/proc/self/fd/12"), Some(12));
        assert_eq!(own_fd_path(b"/proc/thread-self/fd/3"), Some(3));
        assert_eq!(own_fd_path(b"/proc/self/fd/"), None);
        assert_eq!(own_fd_path(b"/proc/self/fd/3/x"), None);
        assert_eq!(own_fd_path(b"/proc/1/fd/3"), None);
    }

    #[test]
    fn only_writable_roots_outside_denied_paths_may_change() {
        let (a, _b) = nix::unistd::pipe().unwrap();
        let s = Supervisor {
            listener: Arc::new(a),
            writable: vec![PathBuf::from("/ws"), PathBuf::from("/scratch/x")],
            denied: vec![PathBuf::from("/ws/.ssh")],
            connecting: Arc::new(AtomicUsize::new(0)),
        };
        assert!(s.may_change(Path::new("/ws/a.sh")));
        assert!(s.may_change(Path::new("/ws")));
        assert!(s.may_change(Path::new("/scratch/x/tmp/f")));
        assert!(!s.may_change(Path::new("/wsx/a")));
        assert!(!s.may_change(Path::new("/ws/.ssh/id")));
        assert!(!s.may_change(Path::new("/etc/shadow")));
        assert!(!s.may_change(Path::new("pipe:[1234]")));
    }
}
