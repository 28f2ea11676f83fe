//! Calls on a descriptor we hold, for the seccomp supervisor: `openat2` with resolve flags,
//! mode, owner and time changes through `AT_EMPTY_PATH`, `TIOCGPTPEER`, and a socket's
//! `SO_DOMAIN` and `connect` with a raw address.

use std::ffi::CStr;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

use nix::errno::Errno;

/// `openat2(dir, path, flags, resolve)`: a new descriptor.
pub fn openat2(dir: RawFd, path: &CStr, flags: u64, resolve: u64) -> Result<OwnedFd, Errno> {
    // SAFETY: open_how is plain old data; zeroed is a valid value before the fields are set.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = flags;
    how.resolve = resolve;
    // SAFETY: `path` is a valid NUL-terminated path and `how` a live open_how of the size
    // passed; the call only returns a new descriptor.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir,
            path.as_ptr(),
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

/// `fchmodat2(file, "", mode, AT_EMPTY_PATH)` (system call number `nr`: libc may lack it).
pub fn fchmod_empty_path(nr: libc::c_long, file: BorrowedFd<'_>, mode: u32) -> Result<(), Errno> {
    // SAFETY: the empty path with AT_EMPTY_PATH names `file` itself; nothing else is read.
    let rc = unsafe {
        libc::syscall(
            nr,
            file.as_raw_fd(),
            c"".as_ptr(),
            mode,
            libc::AT_EMPTY_PATH,
        )
    };
    if rc == 0 { Ok(()) } else { Err(Errno::last()) }
}

/// `fchownat(file, "", uid, gid, AT_EMPTY_PATH)`.
pub fn fchown_empty_path(file: BorrowedFd<'_>, uid: u32, gid: u32) -> Result<(), Errno> {
    // SAFETY: the empty path with AT_EMPTY_PATH names `file` itself; nothing else is read.
    let rc = unsafe {
        libc::fchownat(
            file.as_raw_fd(),
            c"".as_ptr(),
            uid,
            gid,
            libc::AT_EMPTY_PATH,
        )
    };
    if rc == 0 { Ok(()) } else { Err(Errno::last()) }
}

/// `utimensat(file, "", times, AT_EMPTY_PATH)`; `None` sets both to now.
pub fn utimens_empty_path(
    file: BorrowedFd<'_>,
    times: Option<&[libc::timespec; 2]>,
) -> Result<(), Errno> {
    let ptr = times.map_or(std::ptr::null(), |t| t.as_ptr());
    // SAFETY: the empty path with AT_EMPTY_PATH names `file`; `ptr` is NULL or points
    // at two live timespecs the kernel only reads.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_utimensat,
            file.as_raw_fd(),
            c"".as_ptr(),
            ptr,
            libc::AT_EMPTY_PATH,
        )
    };
    if rc == 0 { Ok(()) } else { Err(Errno::last()) }
}

/// `ioctl(master, TIOCGPTPEER, flags)`: the slave of the pty `master`, opened with `flags`.
pub fn pty_peer(master: BorrowedFd<'_>, flags: libc::c_int) -> Result<OwnedFd, Errno> {
    // SAFETY: TIOCGPTPEER takes its open flags by value and returns a new descriptor.
    let peer = unsafe { libc::ioctl(master.as_raw_fd(), libc::TIOCGPTPEER, flags) };
    if peer < 0 {
        return Err(Errno::last());
    }
    // SAFETY: `peer` is the fresh descriptor the kernel just returned; we own it alone.
    Ok(unsafe { OwnedFd::from_raw_fd(peer as RawFd) })
}

/// `SO_DOMAIN` of a socket.
pub fn socket_domain(sock: BorrowedFd<'_>) -> Result<i32, Errno> {
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

/// `connect(sock, addr)` with `addr` a raw `sockaddr` (empty: NULL, length 0).
pub fn connect_raw(sock: BorrowedFd<'_>, addr: &[u8]) -> Result<(), Errno> {
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
