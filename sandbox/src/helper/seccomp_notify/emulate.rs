//! Performing a change on the supervisor's own descriptor: opening the target as the caller
//! would reach it (`pidfd_getfd`, or `openat2` relative to its directory), the checks against
//! the writable roots, the denied paths and the owner, then `fchmodat2`/`fchownat`/`utimensat`
//! with `AT_EMPTY_PATH`.

use std::ffi::{CString, OsString};
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;

use nix::errno::Errno;

use super::decode::{Change, Target};
use super::filter::SYS_FCHMODAT2;

/// `pidfd_getfd(pidfd, fd)`: our own copy of the caller's descriptor `fd`.
pub(super) fn fetch_fd(pidfd: &OwnedFd, fd: i32) -> Result<OwnedFd, Errno> {
    if fd < 0 {
        return Err(Errno::EBADF);
    }
    crate::sys::pidfd_getfd(pidfd.as_fd(), fd).map_err(|e| match e {
        Errno::EBADF => Errno::EBADF,
        _ => Errno::EPERM,
    })
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
pub(super) fn open_target(target: &Target, tid: u32, pidfd: &OwnedFd) -> Result<OwnedFd, Errno> {
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
pub(super) fn openat2(dir: RawFd, path: &[u8], follow: bool) -> Result<OwnedFd, Errno> {
    let c = CString::new(path).map_err(|_| Errno::EINVAL)?;
    let mut flags = (libc::O_PATH | libc::O_CLOEXEC) as u64;
    if !follow {
        flags |= libc::O_NOFOLLOW as u64;
    }
    crate::sys::openat2(dir, &c, flags, libc::RESOLVE_NO_MAGICLINKS)
}

/// Makes the change on our own descriptor.
pub(super) fn apply(file: &OwnedFd, change: Change) -> Result<(), Errno> {
    let result = match change {
        Change::Mode(mode) => crate::sys::fchmod_empty_path(SYS_FCHMODAT2, file.as_fd(), mode),
        Change::Owner(uid, gid) => crate::sys::fchown_empty_path(file.as_fd(), uid, gid),
        Change::Times(times) => crate::sys::utimens_empty_path(file.as_fd(), times.as_ref()),
    };
    let Err(errno) = result else {
        return Ok(());
    };
    match (errno, change) {
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

#[cfg(test)]
mod tests {

    use super::*;

    #[test]
    fn own_descriptor_paths_name_the_callers_descriptor() {
        assert_eq!(own_fd_path(b"/proc/self/fd/12"), Some(12));
        assert_eq!(own_fd_path(b"/proc/thread-self/fd/3"), Some(3));
        assert_eq!(own_fd_path(b"/proc/self/fd/"), None);
        assert_eq!(own_fd_path(b"/proc/self/fd/3/x"), None);
        assert_eq!(own_fd_path(b"/proc/1/fd/3"), None);
    }
}
