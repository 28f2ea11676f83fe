//! Processes: fork, clone into new namespaces, a child sharing our memory, exit, signals,
//! pidfds.

use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};

use super::stack::Stack;

/// `fork()` in the single-threaded helper. Returns `Some(pid)` in the parent, `None` in the child.
pub fn fork() -> io::Result<Option<libc::pid_t>> {
    // SAFETY: the helper asserts it is single-threaded before any fork, so the child cannot
    // inherit a lock held by another thread; both sides continue with ordinary Rust code.
    match unsafe { libc::fork() } {
        -1 => Err(io::Error::last_os_error()),
        0 => Ok(None),
        pid => Ok(Some(pid)),
    }
}

/// `fork()` whose child starts in the new namespaces `flags` (`CLONE_NEW*`): with
/// `CLONE_NEWPID` it is the namespace's init. Returns `Some(pid)` in the parent, `None` in the
/// child. For a single-threaded caller, as [`fork`].
pub fn fork_into(flags: libc::c_int) -> io::Result<Option<libc::pid_t>> {
    // SAFETY: clone with a null stack continues the child on a copy of ours, as fork does; the
    // caller is single-threaded, so no lock can be held by another thread. Unlike glibc's fork
    // no atfork handler runs and the child's cached thread id stays ours: the child uses no
    // pthread call that reads it (Rust's locks are futexes).
    let pid = unsafe {
        libc::syscall(
            libc::SYS_clone,
            (flags | libc::SIGCHLD) as libc::c_ulong,
            std::ptr::null_mut::<libc::c_void>(),
            std::ptr::null_mut::<libc::c_int>(),
            std::ptr::null_mut::<libc::c_int>(),
            0 as libc::c_ulong,
        )
    };
    match pid {
        -1 => Err(io::Error::last_os_error()),
        0 => Ok(None),
        pid => Ok(Some(pid as libc::pid_t)),
    }
}

/// `_exit(code)`: leave without running destructors or atexit handlers (after fork).
pub fn exit_now(code: i32) -> ! {
    // SAFETY: _exit never returns and touches no Rust state.
    unsafe { libc::_exit(code) }
}

static TERMINATE: AtomicBool = AtomicBool::new(false);

extern "C" fn on_terminate(_: libc::c_int) {
    TERMINATE.store(true, Ordering::SeqCst);
}

/// Makes SIGTERM set a flag (read by [`terminate_requested`]) and interrupt blocking calls.
pub fn catch_sigterm() -> io::Result<()> {
    // SAFETY: a zeroed sigaction is a valid "no flags, empty mask" value; the handler only
    // stores to an atomic, which is async-signal-safe; SA_RESTART is left off on purpose so
    // waitpid returns EINTR.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_terminate as extern "C" fn(libc::c_int) as usize;
        if libc::sigaction(libc::SIGTERM, &sa, std::ptr::null_mut()) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Whether SIGTERM arrived since [`catch_sigterm`].
pub fn terminate_requested() -> bool {
    TERMINATE.load(Ordering::SeqCst)
}

/// `pidfd_open(pid)`: a descriptor that becomes readable when `pid` exits.
pub fn pidfd_open(pid: libc::pid_t) -> io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    // SAFETY: the call only creates a descriptor for an existing child; we own it alone.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor nobody else owns.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd as RawFd) })
}

/// Default signal handling for the program about to be executed: SIGPIPE back to its default
/// action (the Rust runtime ignores it, and an ignored signal survives `execve`) and an empty
/// signal mask (a blocked signal survives it too).
pub fn default_signals() {
    // SAFETY: installing SIG_DFL registers no handler code; the mask call only reads the
    // empty set it is given.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
    }
}

/// `pidfd_send_signal(pidfd, sig)`: signals exactly the process the pidfd refers to (never a
/// process that reused its pid); an error once it has ended.
pub fn pidfd_signal(pidfd: &std::os::fd::OwnedFd, sig: libc::c_int) -> io::Result<()> {
    pidfd_send_signal(pidfd, sig, 0)
}

/// `pidfd_send_signal(pidfd, sig, PIDFD_SIGNAL_PROCESS_GROUP)`: signals every process of the
/// group the pidfd's process leads (it must lead one: its pid is the group's id, which cannot
/// be reused while it is alive or unreaped). `EINVAL` before Linux 6.9, which lacks the flag.
pub fn pidfd_signal_group(pidfd: &std::os::fd::OwnedFd, sig: libc::c_int) -> io::Result<()> {
    pidfd_send_signal(pidfd, sig, libc::PIDFD_SIGNAL_PROCESS_GROUP)
}

fn pidfd_send_signal(
    pidfd: &std::os::fd::OwnedFd,
    sig: libc::c_int,
    flags: libc::c_uint,
) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: a null siginfo is valid and `flags` is one of the kernel's own; the call only
    // signals the process (or its group).
    let rc = unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            pidfd.as_raw_fd(),
            sig,
            std::ptr::null::<libc::siginfo_t>(),
            flags,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Stack of a [`spawn_shared`] child (it confines itself and execs: little depth needed).
const SHARED_STACK: usize = 512 * 1024;

/// Starts `child` in a new process that shares our memory until it execs or exits
/// (`clone(CLONE_VM | CLONE_VFORK)` on a stack of its own, as `posix_spawn` does): no page
/// tables are copied, and we are suspended until then. `child` should end in `execve` or
/// [`exit_now`]; if it returns, the process exits with 127. Returns the child's pid.
pub fn spawn_shared(child: &mut dyn FnMut()) -> io::Result<libc::pid_t> {
    extern "C" fn trampoline(arg: *mut libc::c_void) -> libc::c_int {
        // SAFETY: `arg` is the `&mut dyn FnMut` passed to clone below, alive for the whole
        // call: the parent is suspended (CLONE_VFORK) until this process execs or exits.
        let child = unsafe { &mut *(arg as *mut &mut dyn FnMut()) };
        child();
        exit_now(127)
    }
    let stack = Stack::map(SHARED_STACK)?;
    let mut arg: &mut dyn FnMut() = child;
    // SAFETY: the child runs `trampoline` on the fresh stack (its top, 16-byte aligned, is
    // passed: stacks grow down) and never returns into our frames: it execs or _exits. It
    // shares our memory but we are suspended until then (CLONE_VFORK), and the helper is
    // single-threaded, so no lock can be held by anyone else while it allocates. Its
    // credentials, rlimits, cwd, descriptors and signal handlers are its own (no
    // CLONE_THREAD/FS/FILES/SIGHAND).
    let pid = unsafe {
        libc::clone(
            trampoline,
            stack.top(),
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            (&mut arg) as *mut &mut dyn FnMut() as *mut libc::c_void,
        )
    };
    let err = io::Error::last_os_error();
    // The child has exec'd or exited, so nothing runs on the stack any more.
    drop(stack);
    if pid < 0 { Err(err) } else { Ok(pid) }
}

/// Has `cmd`'s child install each `(from, to)` descriptor at `to` (`dup2`) before it execs.
/// Every `from` must stay open in the caller until `cmd` has been spawned.
pub fn install_before_exec(cmd: &mut std::process::Command, fds: Vec<(RawFd, RawFd)>) {
    // SAFETY: the closure runs in the forked child before exec and only calls dup2
    // (async-signal-safe) on descriptors that stay open in the parent until spawn returns.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(cmd, move || {
            for &(from, to) in &fds {
                super::fd::dup_onto(from, to)?;
            }
            Ok(())
        });
    }
}
