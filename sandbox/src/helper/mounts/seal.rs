//! The socket seal: each read-only root covered by a read-only overlay of itself, which hides
//! the host's Unix sockets in it.

use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use nix::mount::{MsFlags, mount};

use crate::error::SetupError;
use crate::plan::MountOp;

use super::prim::{err, mkdir_p, old};

/// The empty lower layer of the read-only overlays, in the new root (an empty directory).
pub use crate::wire::EMPTY_DIR as EMPTY;

/// Read-only roots become read-only overlays of themselves: the same files, but a pathname
/// Unix socket seen through an overlay is an overlay inode no listener is bound to, so
/// `connect` gets ECONNREFUSED. A listener a host process binds under `/opt`, `/usr`, `/etc`
/// or a toolchain directory is thus unreachable, whenever it appears, at no cost per socket;
/// sockets in the writable roots and `/tmp` (plain binds and tmpfs) work as before. An
/// overlay does not show the mounts below its lower layer, so those (a host's submounts, our
/// masks) are cloned first and attached again on top.
pub struct SocketSeal {
    /// Where this process's mount table is readable (before the new `/proc` exists, the
    /// host's under [`OLD`]).
    mountinfo: PathBuf,
}

impl SocketSeal {
    /// For the namespace backend's init, right after `pivot_root` (creates [`EMPTY`]).
    pub(super) fn new() -> Result<SocketSeal, SetupError> {
        mkdir_p(Path::new(EMPTY))?;
        Ok(SocketSeal {
            mountinfo: old(Path::new("/proc/self/mountinfo")),
        })
    }

    /// Covers the read-only directory mounted at `path` with a read-only overlay of it, the
    /// mounts below it attached again on top. Not a directory, or gone: left as it is.
    pub(super) fn seal(&self, path: &Path) -> Result<(), SetupError> {
        if !path.symlink_metadata().is_ok_and(|m| m.is_dir()) {
            return Ok(());
        }
        let info = std::fs::read_to_string(&self.mountinfo)
            .map_err(|e| err(format!("read({})", self.mountinfo.display()), e))?;
        let mut below: Vec<PathBuf> = info
            .lines()
            .filter_map(|l| l.split(' ').nth(4))
            .map(unescape_mountinfo)
            .filter(|m| m.starts_with(path) && m != path)
            .collect();
        below.sort_by_key(|m| m.components().count());
        below.dedup();
        // The outermost ones: a recursive clone carries what is below them.
        let mut outer: Vec<PathBuf> = Vec::new();
        for m in below {
            if !outer.iter().any(|o| m.starts_with(o)) {
                outer.push(m);
            }
        }
        let clones = outer
            .iter()
            .map(|m| {
                crate::sys::clone_tree(m)
                    .map(|fd| (m, fd))
                    .map_err(|e| err(format!("open_tree({}, clone)", m.display()), e))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let data = format!(
            "lowerdir={}:{EMPTY}",
            escape_overlay(&path.display().to_string())
        );
        let flags = MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV;
        mount(
            Some("overlay"),
            path,
            Some("overlay"),
            flags,
            Some(data.as_str()),
        )
        .map_err(|e| {
            err(format!("mount(overlay, {}, {data})", path.display()), e)
                .hint("read-only roots are mounted as overlays (Linux >= 5.11 in a user namespace)")
        })?;
        for (m, fd) in clones {
            crate::sys::attach_tree(fd.as_raw_fd(), m)
                .map_err(|e| err(format!("move_mount({}, over its overlay)", m.display()), e))?;
        }
        Ok(())
    }
}

/// The enforcement note of a bubblewrap run whose read-only roots could not be sealed.
pub const UNSEALED: &str = "Unix sockets under read-only roots not hidden: bwrap started by a \
     non-root user runs the sandbox in a nested user namespace, which cannot mount overlays";

/// The bubblewrap backend's inner stage, before it confines itself: when bwrap left it
/// `CAP_SYS_ADMIN` over its mount namespace (started by root: see `bubblewrap.rs`), seals each
/// read-only root of `ops` as the namespace backend does ([`SocketSeal`]; bwrap made
/// [`EMPTY`]). False when it could not (an unprivileged bwrap nests the sandbox's user
/// namespace below the one owning its mounts).
pub fn seal_read_only_roots(ops: &[MountOp]) -> Result<bool, SetupError> {
    let can_mount = caps::has_cap(
        None,
        caps::CapSet::Effective,
        caps::Capability::CAP_SYS_ADMIN,
    )
    .unwrap_or(false);
    if !can_mount {
        return Ok(false);
    }
    let seal = SocketSeal {
        mountinfo: PathBuf::from("/proc/self/mountinfo"),
    };
    for op in ops {
        if let MountOp::Bind {
            path,
            rw: false,
            optional: true,
        } = op
        {
            seal.seal(path)?;
        }
    }
    Ok(true)
}

/// A mount point as `/proc/self/mountinfo` writes it (space, tab, newline and backslash as
/// octal escapes).
fn unescape_mountinfo(field: &str) -> PathBuf {
    use std::os::unix::ffi::OsStringExt;
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|b| (b'0'..=b'7').contains(b)));
        match (bytes[i], octal) {
            (b'\\', Some(d)) => {
                out.push(d.iter().fold(0u8, |n, b| n.wrapping_mul(8) + (b - b'0')));
                i += 4;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    PathBuf::from(std::ffi::OsString::from_vec(out))
}

/// A path as an overlay option value: `\`, `:` and `,` escaped.
fn escape_overlay(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for c in path.chars() {
        if matches!(c, '\\' | ':' | ',') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_and_overlay_escapes() {
        assert_eq!(
            unescape_mountinfo(r"/oldroot/a\040b\011c\134d"),
            PathBuf::from("/oldroot/a b\tc\\d")
        );
        assert_eq!(unescape_mountinfo("/usr"), PathBuf::from("/usr"));
        assert_eq!(escape_overlay("/a:b,c\\d"), r"/a\:b\,c\\d");
    }
}
