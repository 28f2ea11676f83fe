//! Mounts: the new mount API (`mount_setattr`, `open_tree`, `move_mount`), `O_PATH` opens, mount
//! ids, and the lazy unmount done in the background.

use std::ffi::CString;
use std::io;
use std::os::fd::RawFd;
use std::path::Path;

use super::fd::cstring;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
use super::raw::raw_syscall;
use super::stack::Stack;

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
