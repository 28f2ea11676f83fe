//! User namespaces: the probe whether they work here, and one made with an id map for
//! idmapped mounts (held by a small child).

use std::io;

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
use super::raw::raw_syscall;
use super::stack::Stack;

/// Forks a child that tries what the namespace backend needs (user, mount, pid, net, ipc, uts
/// namespaces, uid/gid maps, a private tmpfs mount) and reports the first failing step.
/// The child only makes raw syscalls on buffers prepared before the fork, so this is safe in
/// a multi-threaded process.
pub fn probe_user_namespaces() -> Result<(), &'static str> {
    const STEPS: [&str; 6] = [
        "fork",
        "unshare",
        "setgroups",
        "uid_map",
        "gid_map",
        "mount tmpfs",
    ];
    let uid = format!("{0} {0} 1\n", nix::unistd::geteuid().as_raw());
    let gid = format!("{0} {0} 1\n", nix::unistd::getegid().as_raw());
    let files = [
        c"/proc/self/setgroups",
        c"/proc/self/uid_map",
        c"/proc/self/gid_map",
    ];
    let values: [&[u8]; 3] = [b"deny", uid.as_bytes(), gid.as_bytes()];
    let flags = libc::CLONE_NEWUSER
        | libc::CLONE_NEWNS
        | libc::CLONE_NEWPID
        | libc::CLONE_NEWNET
        | libc::CLONE_NEWIPC
        | libc::CLONE_NEWUTS;
    // SAFETY: the child calls only async-signal-safe syscalls (unshare, open, write, close,
    // mount, _exit) on memory prepared before the fork, then exits without returning.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(STEPS[0]);
    }
    if pid == 0 {
        // SAFETY: see above; every pointer refers to a live, NUL-terminated or sized buffer.
        unsafe {
            if libc::unshare(flags) != 0 {
                libc::_exit(1);
            }
            for (i, (file, value)) in files.iter().zip(values).enumerate() {
                let fd = libc::open(file.as_ptr(), libc::O_WRONLY);
                if fd < 0
                    || libc::write(fd, value.as_ptr().cast(), value.len()) != value.len() as isize
                {
                    libc::_exit(2 + i as i32);
                }
                libc::close(fd);
            }
            let private = libc::MS_REC | libc::MS_PRIVATE;
            if libc::mount(
                c"none".as_ptr(),
                c"/".as_ptr(),
                std::ptr::null(),
                private,
                std::ptr::null(),
            ) != 0
                || libc::mount(
                    c"tmpfs".as_ptr(),
                    c"/tmp".as_ptr(),
                    c"tmpfs".as_ptr(),
                    0,
                    std::ptr::null(),
                ) != 0
            {
                libc::_exit(5);
            }
            libc::_exit(0);
        }
    }
    let mut status = 0;
    // SAFETY: waits for the child we just forked; `status` is a valid out-pointer.
    let rc = unsafe { libc::waitpid(pid, &mut status, 0) };
    if rc != pid || !libc::WIFEXITED(status) {
        return Err(STEPS[0]);
    }
    match libc::WEXITSTATUS(status) {
        0 => Ok(()),
        n => Err(STEPS.get(n as usize).copied().unwrap_or("probe")),
    }
}

/// Stack of the child [`userns_with_map`] starts: it makes two raw syscalls and returns.
const HOLDER_STACK: usize = 16 * 1024;

/// The idmap holder's body. `arg` points to the pipe's `[read, write]` descriptor numbers: it
/// closes its own copy of the write end (its descriptor table is a copy of the parent's), then
/// blocks until the read end reports end of file — the parent closed its end, or died — and
/// returns (the `clone` wrapper ends the child with `exit`).
extern "C" fn hold_until_eof(arg: *mut libc::c_void) -> libc::c_int {
    let mut byte = 0u8;
    // SAFETY: `arg` points to a `[c_int; 2]` the parent keeps alive until it has reaped this
    // child; `byte` is a live one-byte buffer on this child's own stack. Only system calls run
    // here: no allocation, no lock. Where we have them they are raw, so they never write the
    // `errno` of the parent, whose thread-local storage this child shares and which runs on
    // meanwhile (elsewhere libc's, which write it only on a failure).
    unsafe {
        let fds = *(arg as *const [libc::c_int; 2]);
        let buf = &mut byte as *mut u8 as usize;
        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
        {
            raw_syscall(libc::SYS_close, [fds[1] as usize, 0, 0, 0, 0]);
            raw_syscall(libc::SYS_read, [fds[0] as usize, buf, 1, 0, 0]);
        }
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        {
            libc::syscall(libc::SYS_close, fds[1]);
            libc::syscall(libc::SYS_read, fds[0], buf, 1usize);
        }
    }
    0
}

/// The child holding a user namespace that [`userns_with_map`] made. It is let go as soon as
/// the namespace is open and ends by itself; dropping this reaps it (and only then frees what
/// it reads), so that its exit can overlap the caller's next steps.
pub struct UsernsHolder {
    pid: libc::pid_t,
    /// Our end of the pipe it reads until end of file; closed to let it go.
    hold_w: Option<std::os::fd::OwnedFd>,
    /// The pipe's descriptor numbers, which the holder reads when it starts, and the stack it
    /// runs on: only kept alive, until it is reaped.
    _fds: Box<[libc::c_int; 2]>,
    _stack: Stack,
}

impl UsernsHolder {
    /// Lets the holder end (it reads end of file and returns).
    fn release(&mut self) {
        self.hold_w = None;
    }
}

impl Drop for UsernsHolder {
    fn drop(&mut self) {
        self.release();
        let mut status = 0;
        // SAFETY: waits for the child `userns_with_map` started; `status` is a valid
        // out-pointer. __WCLONE is not needed: the child's exit signal is SIGCHLD. In a process
        // forked since, the child is not ours and waitpid fails at once with ECHILD.
        while unsafe { libc::waitpid(self.pid, &mut status, 0) } < 0
            && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
        {}
        // Only now may its stack and `fds` go: fields drop after this body.
    }
}

/// A user namespace whose uid and gid maps are both `map` (e.g. `"0 65534 1"`), held by a
/// descriptor. Its holder is a child started with `clone(CLONE_VM | CLONE_NEWUSER)` on a small
/// stack (no copy of the address space, nothing to tear down when it ends), created directly
/// in the namespace, so its maps can be written as soon as `clone` returns. It only makes raw
/// syscalls: it closes its copy of a pipe's write end and reads until ours is closed (by us
/// once the namespace is open, or by our death: it never outlives us). The returned
/// [`UsernsHolder`] reaps it when dropped. Needs privilege over the maps (root); for a
/// single-threaded process.
pub fn userns_with_map(map: &str) -> io::Result<(std::os::fd::OwnedFd, UsernsHolder)> {
    use std::os::fd::AsRawFd;
    let (hold_r, hold_w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
    let fds = Box::new([hold_r.as_raw_fd(), hold_w.as_raw_fd()]);
    let stack = Stack::map(HOLDER_STACK)?;
    // SAFETY: the child runs only `hold_until_eof` (two raw syscalls on its own stack, reading
    // `fds`) and then `exit`s; it shares our memory but touches none of it beyond that stack
    // and `fds`, both owned by the `UsernsHolder` below, which frees them only after reaping
    // the child. Without CLONE_SETTLS/CLONE_THREAD it is an ordinary child (SIGCHLD on exit).
    let pid = unsafe {
        libc::clone(
            hold_until_eof,
            stack.top(),
            libc::CLONE_VM | libc::CLONE_NEWUSER | libc::SIGCHLD,
            &*fds as *const [libc::c_int; 2] as *mut libc::c_void,
        )
    };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    // The child has its own copy of the descriptor table: ours of the read end is not needed.
    drop(hold_r);
    let mut holder = UsernsHolder {
        pid,
        hold_w: Some(hold_w),
        _fds: fds,
        _stack: stack,
    };
    let ns = (|| {
        std::fs::write(format!("/proc/{pid}/uid_map"), map)?;
        std::fs::write(format!("/proc/{pid}/gid_map"), map)?;
        Ok(std::fs::File::open(format!("/proc/{pid}/ns/user"))?.into())
    })();
    holder.release();
    ns.map(|ns| (ns, holder))
}
