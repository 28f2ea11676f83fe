//! Decoding a notification into a call: which file it names and what change it asks for,
//! from its arguments and the caller's memory (`process_vm_readv`), and who the caller is
//! (`/proc/<tid>/status`).

use std::io::IoSliceMut;

use nix::errno::Errno;

use super::filter::SYS_FCHMODAT2;

/// What a call asks for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Change {
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
pub(super) enum Target {
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
pub(super) type Decoded = Result<Option<(Target, Change)>, Errno>;

/// A notification as the kernel delivers it, with the fields the decoder reads.
pub(super) struct Call {
    pub(super) nr: i64,
    pub(super) args: [u64; 6],
}

/// What `/proc/<tid>/status` says of the caller.
pub(super) struct Status {
    pub(super) tgid: i32,
    pub(super) fsuid: u32,
}

impl Status {
    pub(super) fn of(tid: u32) -> Option<Status> {
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

const UTIME_NOW: i64 = (1 << 30) - 1;
const UTIME_OMIT: i64 = (1 << 30) - 2;

pub(super) fn fd_arg(a: u64) -> i32 {
    a as u32 as i32
}

/// Decodes a call; `read(addr, len)` reads the caller's memory (`len` bytes, or up to a NUL
/// when `len` is 0).
pub(super) fn decode(call: &Call, read: impl Fn(u64, usize) -> Result<Vec<u8>, Errno>) -> Decoded {
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
pub(super) fn read_remote(tid: u32, addr: u64, len: usize) -> Result<Vec<u8>, Errno> {
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
}
