//! Thin wrappers over the few syscalls that nix and libc do not wrap safely. Every `unsafe`
//! block in the crate outside the launcher's `pre_exec` lives here, each with its SAFETY note.

use std::ffi::CString;
use std::io;
use std::os::fd::RawFd;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

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

const MOUNT_ATTR_RDONLY: u64 = 0x1;
const MOUNT_ATTR_NOSUID: u64 = 0x2;
const MOUNT_ATTR_NODEV: u64 = 0x4;

#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// `mount_setattr(path, AT_RECURSIVE)`: nosuid, nodev and (if `readonly`) read-only on the
/// mount at `path` and every mount below it.
pub fn harden_mount(path: &Path, readonly: bool) -> io::Result<()> {
    let c = cstring(path)?;
    let mut attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
    if readonly {
        attr_set |= MOUNT_ATTR_RDONLY;
    }
    mount_setattr(libc::AT_FDCWD, &c, 0, attr_set, 0)
}

/// `mount_setattr(dirfd, path, flags | AT_RECURSIVE, {attr_set, userns_fd})`.
fn mount_setattr(
    dirfd: RawFd,
    path: &std::ffi::CStr,
    flags: libc::c_int,
    attr_set: u64,
    userns: RawFd,
) -> io::Result<()> {
    let mut attr = MountAttr {
        attr_set,
        attr_clr: 0,
        propagation: 0,
        userns_fd: userns as u64,
    };
    // SAFETY: `path` is a valid NUL-terminated string and `attr` a live, correctly sized
    // struct mount_attr for the duration of the call; the kernel only reads them.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            dirfd,
            path.as_ptr(),
            (flags | libc::AT_RECURSIVE) as libc::c_uint,
            &mut attr as *mut MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Closes every descriptor from `first` up.
pub fn close_from(first: RawFd) -> io::Result<()> {
    close_range(first, RawFd::MAX)
}

/// Closes every descriptor from `first` up except those in `keep`.
pub fn close_from_except(first: RawFd, keep: &[RawFd]) -> io::Result<()> {
    let mut keep: Vec<RawFd> = keep.iter().copied().filter(|k| *k >= first).collect();
    keep.sort_unstable();
    keep.dedup();
    let mut next = first;
    for k in keep {
        if k > next {
            close_range(next, k - 1)?;
        }
        next = k + 1;
    }
    close_from(next)
}

/// Closes descriptors `first..=last` (`RawFd::MAX`: all above `first`).
fn close_range(first: RawFd, last: RawFd) -> io::Result<()> {
    let last = if last == RawFd::MAX {
        u32::MAX
    } else {
        last as u32
    };
    // SAFETY: close_range only closes descriptors; the caller holds no Rust owner of one in
    // the range that it uses afterwards.
    let rc = unsafe { libc::syscall(libc::SYS_close_range, first as libc::c_uint, last, 0) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The running kernel's Landlock ABI version, `None` when Landlock is unavailable.
pub fn landlock_abi() -> Option<u32> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a NULL attribute pointer, size 0 and the VERSION flag the call only returns
    // an integer; no memory is read or written.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    u32::try_from(v).ok().filter(|v| *v > 0)
}

/// Whether seccomp filters can be installed: the kernel answers `SECCOMP_GET_ACTION_AVAIL`
/// for the errno action the filter uses (EINVAL without `CONFIG_SECCOMP_FILTER`).
pub fn seccomp_filters_available() -> bool {
    let action: u32 = libc::SECCOMP_RET_ERRNO;
    // SAFETY: the call reads the live `u32` it is given and writes nothing.
    let r = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_GET_ACTION_AVAIL,
            0u32,
            &action as *const u32,
        )
    };
    r == 0
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

/// A path as a C string.
pub fn cstring(path: &Path) -> io::Result<CString> {
    use std::os::unix::ffi::OsStrExt;
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

/// Duplicates `fd` to a descriptor `>= 10` with close-on-exec set (so later `dup2`s onto the
/// low fixed numbers cannot clobber it).
pub fn dup_high(fd: RawFd) -> io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    // SAFETY: F_DUPFD_CLOEXEC only creates a new descriptor; we take sole ownership of it.
    let new = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 10) };
    if new < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `new` is a fresh descriptor nobody else owns.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(new) })
}

/// Creates a memfd holding `data`, positioned at its start, without close-on-exec.
pub fn memfd_with(data: &[u8]) -> io::Result<std::os::fd::OwnedFd> {
    use std::io::{Seek, Write};
    use std::os::fd::FromRawFd;
    // SAFETY: the name is a valid C string literal; the call only returns a new descriptor.
    let fd = unsafe { libc::memfd_create(c"zeroclaw-plan".as_ptr(), 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor nobody else owns.
    let mut file = unsafe { std::fs::File::from_raw_fd(fd) };
    file.write_all(data)?;
    file.seek(std::io::SeekFrom::Start(0))?;
    Ok(file.into())
}

/// `dup2(from, to)`; when equal, clears close-on-exec instead.
pub fn dup_onto(from: RawFd, to: RawFd) -> io::Result<()> {
    // SAFETY: dup2/fcntl only manipulate the descriptor table.
    let rc = unsafe {
        if from == to {
            libc::fcntl(to, libc::F_SETFD, 0)
        } else {
            libc::dup2(from, to)
        }
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

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

/// Takes ownership of the inherited descriptor `fd` if it is open (`None` otherwise), for a
/// process that was started with `fd` installed by its parent.
pub fn adopt_inherited(fd: RawFd) -> Option<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    // SAFETY: F_GETFD only reads the descriptor's flags.
    if unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
        return None;
    }
    // SAFETY: `fd` is open and was installed for this process by its parent before exec;
    // the caller adopts it exactly once, and nothing else in the process refers to it.
    Some(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
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

const OPEN_TREE_CLONE: libc::c_uint = 1;
const MOUNT_ATTR_IDMAP: u64 = 0x0010_0000;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;

/// `open_tree(path, OPEN_TREE_CLONE | AT_RECURSIVE)`: a detached copy of the mounts at and
/// below `path`, to be idmapped and attached elsewhere.
pub fn clone_tree(path: &Path) -> io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    let c = cstring(path)?;
    let flags =
        OPEN_TREE_CLONE | libc::O_CLOEXEC as libc::c_uint | libc::AT_RECURSIVE as libc::c_uint;
    // SAFETY: `c` is a valid NUL-terminated path; the call only returns a new descriptor.
    let fd = unsafe { libc::syscall(libc::SYS_open_tree, libc::AT_FDCWD, c.as_ptr(), flags) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor nobody else owns.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd as RawFd) })
}

/// Idmaps the detached tree `tree` through the user namespace `userns` and makes it
/// read-only, nosuid and nodev (recursively).
pub fn idmap_tree_readonly(tree: RawFd, userns: RawFd) -> io::Result<()> {
    let attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
    // The empty path with AT_EMPTY_PATH names `tree` itself.
    mount_setattr(tree, c"", libc::AT_EMPTY_PATH, attr_set, userns)
}

/// `move_mount(tree, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH)`: attaches a detached tree.
pub fn attach_tree(tree: RawFd, target: &Path) -> io::Result<()> {
    let c = cstring(target)?;
    // SAFETY: both paths are valid NUL-terminated strings; the call reads nothing else.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            tree,
            c"".as_ptr(),
            libc::AT_FDCWD,
            c.as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
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

/// `openat2(path, O_PATH)`; with `refuse_symlinks` (`RESOLVE_NO_SYMLINKS`) only when no
/// component of it is a symlink (ELOOP otherwise), so a rule opened from it lands exactly on
/// the planned inode even if a symlink was planted on the way meanwhile.
pub fn open_path(path: &Path, refuse_symlinks: bool) -> io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    let c = cstring(path)?;
    // SAFETY: open_how is plain old data; zeroed is a valid value before the fields are set.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (libc::O_PATH | libc::O_CLOEXEC) as u64;
    how.resolve = if refuse_symlinks {
        libc::RESOLVE_NO_SYMLINKS
    } else {
        0
    };
    // SAFETY: `c` is a valid NUL-terminated path and `how` a live open_how of the size passed;
    // the call only returns a new descriptor.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            libc::AT_FDCWD,
            c.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor nobody else owns.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd as RawFd) })
}

/// `pidfd_send_signal(pidfd, sig)`: signals exactly the process the pidfd refers to (never a
/// process that reused its pid); an error once it has ended.
pub fn pidfd_signal(pidfd: &std::os::fd::OwnedFd, sig: libc::c_int) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: a null siginfo and zero flags are valid; the call only signals the process.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            pidfd.as_raw_fd(),
            sig,
            std::ptr::null::<libc::siginfo_t>(),
            0u32,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The id of the mount `path` (not following a final symlink) is on: the never-reused 64-bit
/// id where the kernel has one (Linux 6.8+), else the plain one.
pub fn mount_id(path: &Path) -> io::Result<u64> {
    let c = cstring(path)?;
    // SAFETY: `statx` is plain old data; all-zero is a valid value for it.
    let mut buf: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a valid NUL-terminated path and `buf` a writable statx the kernel fills.
    let rc = unsafe {
        libc::statx(
            libc::AT_FDCWD,
            c.as_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
            libc::STATX_MNT_ID | libc::STATX_MNT_ID_UNIQUE,
            &mut buf,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    if buf.stx_mask & (libc::STATX_MNT_ID | libc::STATX_MNT_ID_UNIQUE) == 0 {
        return Err(io::Error::from(io::ErrorKind::Unsupported));
    }
    Ok(buf.stx_mnt_id)
}

/// Stack of a [`spawn_shared`] child (it confines itself and execs: little depth needed).
const SHARED_STACK: usize = 512 * 1024;

/// A cloned child's stack: `size` bytes (rounded up to pages) above a guard page, so that
/// an overflow faults instead of writing into whatever mapping lies below. Unmapped on drop.
struct Stack {
    base: *mut libc::c_void,
    len: usize,
}

impl Stack {
    fn map(size: usize) -> io::Result<Stack> {
        // SAFETY: sysconf reads no memory of ours.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
        let len = size.div_ceil(page) * page + page;
        // SAFETY: an anonymous private mapping at an address of the kernel's choosing touches
        // no existing memory; failure is checked below.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let stack = Stack { base, len };
        // SAFETY: `base` starts the fresh mapping of `len` bytes (one page more than used).
        if unsafe { libc::mprotect(base, page, libc::PROT_NONE) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(stack)
    }

    /// Where the child starts: stacks grow down; mmap returns page-aligned memory.
    fn top(&self) -> *mut libc::c_void {
        // SAFETY: one past the end of the mapping, which is `len` bytes long.
        unsafe { (self.base as *mut u8).add(self.len) as *mut libc::c_void }
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        // SAFETY: the mapping is ours; whoever ran on it has exec'd or exited (see the users).
        unsafe { libc::munmap(self.base, self.len) };
    }
}

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

/// A system call made without libc, so that it never touches `errno`: a child sharing our
/// memory but not our thread-local storage must not write our `errno`. Returns the kernel's
/// raw result (`-errno` on failure).
///
/// # Safety
/// As for the system call `nr` with these arguments.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
unsafe fn raw_syscall(nr: libc::c_long, args: [usize; 5]) -> isize {
    let ret: isize;
    // SAFETY: the caller vouches for the call; the asm follows the kernel's system call ABI
    // for this architecture and declares every register the kernel clobbers.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        std::arch::asm!(
            "syscall",
            inlateout("rax") nr as isize => ret,
            in("rdi") args[0],
            in("rsi") args[1],
            in("rdx") args[2],
            in("r10") args[3],
            in("r8") args[4],
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    #[cfg(target_arch = "aarch64")]
    unsafe {
        std::arch::asm!(
            "svc 0",
            in("x8") nr as usize,
            inlateout("x0") args[0] => ret,
            in("x1") args[1],
            in("x2") args[2],
            in("x3") args[3],
            in("x4") args[4],
            options(nostack),
        );
    }
    ret
}

/// What the child of [`detach_in_background`] does; it lives as long as we do (leaked), since
/// we may exit before the child has finished with it.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
struct DetachJob {
    old: CString,
    remount_flags: libc::c_ulong,
    read_fd: RawFd,
    write_fd: RawFd,
}

/// Stack of a [`detach_in_background`] child: a handful of raw system calls.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
const DETACH_STACK: usize = 16 * 1024;

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
extern "C" fn detach_job(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the leaked DetachJob passed to clone below, alive for the rest of the
    // process's life. Only raw system calls run here (no libc call, so no errno, no lock, no
    // allocation): the memory is the parent's, the thread-local storage too. `err` lives on
    // this child's own stack.
    unsafe {
        let job = &*(arg as *const DetachJob);
        raw_syscall(libc::SYS_close, [job.read_fd as usize, 0, 0, 0, 0]);
        let old = job.old.as_ptr() as usize;
        let mut rc = raw_syscall(libc::SYS_umount2, [old, libc::MNT_DETACH as usize, 0, 0, 0]);
        if rc == 0 {
            // The empty mount point goes too; `/` is then made read-only.
            raw_syscall(libc::SYS_rmdir, [old, 0, 0, 0, 0]);
            let root = c"/".as_ptr() as usize;
            rc = raw_syscall(libc::SYS_mount, [0, root, 0, job.remount_flags as usize, 0]);
        }
        let err: i32 = if rc < 0 { -rc as i32 } else { 0 };
        raw_syscall(
            libc::SYS_write,
            [job.write_fd as usize, &err as *const i32 as usize, 4, 0, 0],
        );
    }
    0
}

/// Lazily unmounts `old`, removes its mount point and remounts `/` with `remount_flags`
/// (`MS_REMOUNT | MS_BIND | ...`), in a child that shares our memory (`clone(CLONE_VM)` on a
/// stack of its own), so the RCU grace period the unmount waits for overlaps whatever we do
/// meanwhile. Returns the read end of a pipe that yields the outcome — an errno as 4 native
/// bytes, 0 when all three succeeded — then end of file. `Unsupported` on architectures
/// without [`raw_syscall`]. The child's stack and job are never freed (we may exit first).
pub fn detach_in_background(
    old: &Path,
    remount_flags: libc::c_ulong,
) -> io::Result<std::os::fd::OwnedFd> {
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        let _ = (old, remount_flags);
        return Err(io::Error::from(io::ErrorKind::Unsupported));
    }
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    {
        use std::os::fd::AsRawFd;
        let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
        let job: &'static DetachJob = Box::leak(Box::new(DetachJob {
            old: cstring(old)?,
            remount_flags,
            read_fd: read.as_raw_fd(),
            write_fd: write.as_raw_fd(),
        }));
        let stack = Stack::map(DETACH_STACK)?;
        // SAFETY: the child runs `detach_job` on the fresh stack (its top is passed: stacks
        // grow down; mmap returns page-aligned memory) and reads only the leaked `job`; it
        // never returns into our frames (clone's wrapper exits when `detach_job` returns).
        // Without CLONE_FILES its descriptor table is a copy: it closes its own copy of the
        // read end, we close ours of the write end. It is an ordinary child: SIGCHLD, reaped
        // by whoever reaps our children.
        let pid = unsafe {
            libc::clone(
                detach_job,
                stack.top(),
                libc::CLONE_VM | libc::SIGCHLD,
                job as *const DetachJob as *mut libc::c_void,
            )
        };
        if pid < 0 {
            return Err(io::Error::last_os_error());
        }
        // Never unmapped (see above): the child may outlive this call.
        std::mem::forget(stack);
        drop(write);
        Ok(read)
    }
}
