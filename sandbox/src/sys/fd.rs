//! Descriptors: duplicate, install at a fixed number, close ranges, adopt what a parent
//! installed or the kernel sent (`SCM_RIGHTS`), a sealed memfd.

use std::ffi::CString;
use std::io;
use std::os::fd::RawFd;
use std::path::Path;

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

/// Borrows descriptor `fd`, which whoever started this process installed at that fixed
/// number and which stays open for the process's whole life: a helper's report, lifeline and
/// launcher-pidfd descriptors ([`crate::wire`]), or a foreground caller's stdin (0). Only for
/// those; a borrow is used for one call.
pub fn borrow_inherited(fd: RawFd) -> std::os::fd::BorrowedFd<'static> {
    // SAFETY: REPORT_FD, LIFELINE_FD and (when a zygote installed it) LAUNCHER_FD are installed
    // by the launcher (or the zygote) before the helper starts and stay open for its whole
    // life; descriptor 0 belongs to the process for its whole life (a closed fd 0 reports
    // POLLNVAL/EBADF to the caller, which handles it). Callers pass no other descriptor.
    unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) }
}

/// Takes ownership of descriptor `fd`, installed for this process by whoever started it (the
/// plan at `PLAN_FD`, the zygote's control socket at `CONTROL_FD`), exactly once.
pub fn take_inherited(fd: RawFd) -> std::os::fd::OwnedFd {
    use std::os::fd::FromRawFd;
    // SAFETY: the launcher installs `fd` before exec; the process takes ownership of it here
    // exactly once and nothing else refers to it.
    unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) }
}

/// Takes ownership of the descriptors an `SCM_RIGHTS` message just installed in our table.
/// Pass the message's `ScmRights` list as it came: each descriptor is adopted once, as the
/// iterator reaches it.
pub fn adopt_received(fds: Vec<RawFd>) -> impl Iterator<Item = std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    fds.into_iter()
        // SAFETY: SCM_RIGHTS descriptors are new in this process and owned by nobody.
        .map(|fd| unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
}
