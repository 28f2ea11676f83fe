//! Seccomp: installing a classic-BPF filter, and the user-notification ioctls on its listener
//! (receive, still-pending check, answer, add a descriptor to the caller), plus
//! `pidfd_getfd`, the supervisor's way to a caller's descriptor.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

use nix::errno::Errno;

/// Installs `prog` on the calling thread (no_new_privs must be set) with the
/// `SECCOMP_FILTER_FLAG_*` `flags`; returns the kernel's answer (the listener descriptor with
/// `NEW_LISTENER`, else 0).
pub fn seccomp_install(
    prog: &[libc::sock_filter],
    flags: libc::c_uint,
) -> io::Result<libc::c_long> {
    let fprog = libc::sock_fprog {
        len: u16::try_from(prog.len()).map_err(|_| io::Error::from_raw_os_error(libc::E2BIG))?,
        filter: prog.as_ptr().cast_mut(),
    };
    // SAFETY: `fprog` points at `prog`, a live array of `len` sock_filter entries, for the
    // duration of the call; the kernel only reads it (copying the program) and returns a
    // number: 0, a new descriptor, or -1.
    let r = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            flags,
            &fprog as *const libc::sock_fprog,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// Installs `prog` with `SECCOMP_FILTER_FLAG_NEW_LISTENER` and returns its listener.
pub fn seccomp_install_listener(prog: &[libc::sock_filter]) -> io::Result<OwnedFd> {
    let fd = seccomp_install(prog, libc::SECCOMP_FILTER_FLAG_NEW_LISTENER as libc::c_uint)?;
    // SAFETY: `fd` is the fresh listener descriptor the kernel just returned; we own it alone.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// `SECCOMP_IOCTL_NOTIF_RECV`: the next notification on `listener` (blocks).
pub fn notif_recv(listener: BorrowedFd<'_>) -> Result<libc::seccomp_notif, Errno> {
    // SAFETY: seccomp_notif is plain old data; the kernel requires it zeroed on input.
    let mut notif: libc::seccomp_notif = unsafe { std::mem::zeroed() };
    // SAFETY: `notif` is a live, writable seccomp_notif, the size the request encodes.
    let rc = unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_RECV,
            &mut notif as *mut libc::seccomp_notif,
        )
    };
    if rc != 0 {
        Err(Errno::last())
    } else {
        Ok(notif)
    }
}

/// `SECCOMP_IOCTL_NOTIF_ID_VALID`: whether notification `id` on `listener` is still pending.
pub fn notif_id_valid(listener: BorrowedFd<'_>, id: u64) -> bool {
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

/// `SECCOMP_IOCTL_NOTIF_SEND`: answers notification `id` with 0 (`error` 0) or `-errno`.
pub fn notif_send(listener: BorrowedFd<'_>, id: u64, error: i32) -> Result<(), Errno> {
    let mut resp = libc::seccomp_notif_resp {
        id,
        val: 0,
        error,
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
    if rc == 0 { Ok(()) } else { Err(Errno::last()) }
}

/// `SECCOMP_IOCTL_NOTIF_ADDFD` with `SECCOMP_ADDFD_FLAG_SEND`: installs a copy of `fd` in the
/// caller of notification `id` (close-on-exec when `cloexec`) and answers the call with its
/// number.
pub fn notif_addfd_send(
    listener: BorrowedFd<'_>,
    id: u64,
    fd: BorrowedFd<'_>,
    cloexec: bool,
) -> Result<(), Errno> {
    let mut addfd = libc::seccomp_notif_addfd {
        id,
        flags: libc::SECCOMP_ADDFD_FLAG_SEND as u32,
        srcfd: fd.as_raw_fd() as u32,
        newfd: 0,
        newfd_flags: if cloexec { libc::O_CLOEXEC as u32 } else { 0 },
    };
    // SAFETY: `addfd` is a live seccomp_notif_addfd, the size the request encodes; the
    // kernel only reads it, installs a copy of `fd` in the caller and answers the call
    // with its number.
    let rc = unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_ADDFD,
            &mut addfd as *mut libc::seccomp_notif_addfd,
        )
    };
    if rc < 0 { Err(Errno::last()) } else { Ok(()) }
}

/// `pidfd_getfd(pidfd, fd)`: our own copy (close-on-exec) of descriptor `fd` of the process
/// `pidfd` refers to.
pub fn pidfd_getfd(pidfd: BorrowedFd<'_>, fd: RawFd) -> Result<OwnedFd, Errno> {
    // SAFETY: the call only duplicates a descriptor into our table (close-on-exec) and
    // returns it; no memory is passed.
    let new = unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd.as_raw_fd(), fd, 0u32) };
    if new < 0 {
        return Err(Errno::last());
    }
    // SAFETY: `new` is a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(new as RawFd) })
}
