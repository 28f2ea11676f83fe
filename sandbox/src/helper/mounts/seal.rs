//! The socket seal: each read-only root covered by a read-only overlay of itself, which hides
//! the host's Unix sockets in it.

use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use nix::mount::{MsFlags, mount};

use crate::error::SetupError;
use crate::host::mountinfo;
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
///
/// The mount table is read once, when the seal is made: sealing a root changes no mount
/// point's path (its overlay and the attached clones sit where the root and its submounts
/// were). On the namespace backend that is before the plan's mounts: a read-only root's
/// recursive bind then carries the host's mounts below it, and the plan's own mounts below a
/// root come after it (parents first). On bubblewrap it is once bwrap has built the root.
pub struct SocketSeal {
    /// Every mount point a sealed root may have below it, as paths of the root being built.
    mount_points: Vec<PathBuf>,
}

impl SocketSeal {
    /// Inside a root bwrap has built: every mount point of the table as it is now.
    fn of_this_root() -> Result<SocketSeal, SetupError> {
        let info = read_mount_table(Path::new("/proc/self/mountinfo"))?;
        Ok(SocketSeal {
            mount_points: mountinfo::parse(&info)
                .into_iter()
                .map(|m| m.point)
                .collect(),
        })
    }

    /// For the namespace backend's init, right after `pivot_root` (creates [`EMPTY`]): the
    /// host's mounts, read below [`super::prim::OLD`], as the recursive binds of the
    /// read-only roots will carry them into the new root.
    pub(super) fn new() -> Result<SocketSeal, SetupError> {
        mkdir_p(Path::new(EMPTY))?;
        let info = read_mount_table(&old(Path::new("/proc/self/mountinfo")))?;
        Ok(SocketSeal {
            mount_points: bound_below(&info, Path::new(super::prim::OLD)),
        })
    }

    /// Covers the read-only directory mounted at `path` with a read-only overlay of it, the
    /// mounts below it attached again on top. Not a directory, or gone: left as it is.
    pub(super) fn seal(&self, path: &Path) -> Result<(), SetupError> {
        if !path.symlink_metadata().is_ok_and(|m| m.is_dir()) {
            return Ok(());
        }
        let data = format!(
            "lowerdir={}:{EMPTY}",
            escape_overlay(&path.display().to_string())
        );
        let flags = MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV;
        self.cover(path, &data, flags)
    }

    /// Mounts the overlay `data` over the directory at `path`, the mounts below it attached
    /// again on top.
    fn cover(&self, path: &Path, data: &str, flags: MsFlags) -> Result<(), SetupError> {
        let outer = outermost_below(&self.mount_points, path);
        let clones = outer
            .iter()
            .map(|m| {
                crate::sys::clone_tree(m)
                    .map(|fd| (m, fd))
                    .map_err(|e| err(format!("open_tree({}, clone)", m.display()), e))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mounted = mount(Some("overlay"), path, Some("overlay"), flags, Some(data));
        if mounted == Err(nix::errno::Errno::ENOENT) && removed_on_the_host(path) {
            // Removed on the host since it was bound (another program's temporary directory
            // under a `full` session's read roots): an unlinked directory is empty and takes
            // no new entry, so there is no socket to hide, and its read-only bind stays.
            return Ok(());
        }
        mounted.map_err(|e| {
            let failed = err(format!("mount(overlay, {}, {data})", path.display()), e);
            match clones.first() {
                // The kernel locks the host's mounts copied into a user namespace, and overlayfs
                // takes no lower layer with locked mounts below it (EINVAL).
                Some((below, _)) if e == nix::errno::Errno::EINVAL => failed.hint(format!(
                    "{} is a host mount below the read-only root {}: the kernel locks it in the \
                     sandbox's user namespace, and overlayfs takes no lower layer with locked \
                     mounts below it; leave {} out of the read-only roots, or unmount it",
                    below.display(),
                    path.display(),
                    path.display()
                )),
                _ => failed.hint(
                    "read-only roots are mounted as overlays (Linux >= 5.11 in a user namespace)",
                ),
            }
        })?;
        for (m, fd) in clones {
            crate::sys::attach_tree(fd.as_raw_fd(), m)
                .map_err(|e| err(format!("move_mount({}, over its overlay)", m.display()), e))?;
        }
        Ok(())
    }
}

/// Whether the directory mounted at `path` was removed on the host (overlayfs refuses an
/// unlinked lower layer with ENOENT): a removed directory has no links left.
fn removed_on_the_host(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    path.metadata().is_ok_and(|m| m.is_dir() && m.nlink() == 0)
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
    // bwrap has built the whole root: the table as it is now is the one every seal sees.
    let seal = SocketSeal::of_this_root()?;
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

/// The bubblewrap backend's inner stage started by root (bwrap left it `CAP_SYS_ADMIN` over
/// its mount namespace, `BwrapPlan::seal`): the workspace's [`MountOp::Layer`] — which bwrap
/// bound as a plain bind, with the layer's directory at [`crate::wire::LAYER_DIR`] — becomes
/// the writable overlay the namespace backend mounts, its submounts (protected paths, masks)
/// attached again on top and its [`MountOp::Pin`]s bound; the layer's directory is then detached. In bwrap's user namespace,
/// as on the namespace backend: `userxattr`, which also forces `redirect_dir=nofollow` and
/// `metacopy=off` (the landing moves whole files, and a renamed host directory gives EXDEV).
pub fn layer_in_bwrap(ops: &[MountOp]) -> Result<(), SetupError> {
    let Some(path) = ops.iter().find_map(|op| match op {
        MountOp::Layer { path, .. } => Some(path),
        _ => None,
    }) else {
        return Ok(());
    };
    let seal = SocketSeal::of_this_root()?;
    let dir = Path::new(crate::wire::LAYER_DIR);
    let data = format!(
        "lowerdir={},upperdir={},workdir={},userxattr,volatile",
        escape_overlay(&path.display().to_string()),
        escape_overlay(&crate::layer::upper(dir).display().to_string()),
        escape_overlay(&crate::layer::work(dir).display().to_string()),
    );
    seal.cover(path, &data, MsFlags::MS_NOSUID | MsFlags::MS_NODEV)?;
    // The pins, in the overlay (bwrap could only bind the host's directories), parents first.
    for op in ops {
        if let MountOp::Pin { path } = op {
            super::prim::pin(path)?;
        }
    }
    nix::mount::umount2(dir, nix::mount::MntFlags::MNT_DETACH)
        .map_err(|e| err(format!("umount2({}, MNT_DETACH)", dir.display()), e))
}

/// The mount table readable at `path`, whole.
fn read_mount_table(path: &Path) -> Result<String, SetupError> {
    std::fs::read_to_string(path).map_err(|e| err(format!("read({})", path.display()), e))
}

/// The mount points of a table read after `pivot_root` that a recursive bind of a host
/// directory carries, as paths of the new root: those below `old` (the host's root) with the
/// prefix taken off. Unbindable mounts, and what is below them, a recursive bind leaves out.
fn bound_below(info: &str, old: &Path) -> Vec<PathBuf> {
    let mut points = Vec::new();
    let mut unbindable = Vec::new();
    for mount in mountinfo::parse(info) {
        let Ok(rel) = mount.point.strip_prefix(old) else {
            continue;
        };
        let point = Path::new("/").join(rel);
        if mount.unbindable {
            unbindable.push(point);
        } else {
            points.push(point);
        }
    }
    points.retain(|p| !unbindable.iter().any(|u| p.starts_with(u)));
    points
}

/// The outermost of `mount_points` strictly below `path` (a recursive clone of each carries
/// what is below it), each once.
fn outermost_below(mount_points: &[PathBuf], path: &Path) -> Vec<PathBuf> {
    let mut below: Vec<&PathBuf> = mount_points
        .iter()
        .filter(|m| m.starts_with(path) && m.as_path() != path)
        .collect();
    below.sort_by_key(|m| m.components().count());
    let mut outer: Vec<PathBuf> = Vec::new();
    for m in below {
        if !outer.iter().any(|o| m.starts_with(o)) {
            outer.push(m.clone());
        }
    }
    outer
}

/// A path as an overlay option value: `\`, `:` and `,` escaped.
pub(super) fn escape_overlay(path: &str) -> String {
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
    fn overlay_escapes() {
        assert_eq!(escape_overlay("/a:b,c\\d"), r"/a\:b\,c\\d");
    }

    /// A line of `/proc/self/mountinfo` mounted at `point`, with `optional` fields.
    fn line(id: u32, point: &str, optional: &str) -> String {
        format!("{id} 1 0:{id} / {point} rw,relatime {optional} - tmpfs tmpfs rw")
    }

    #[test]
    fn the_host_mounts_a_recursive_bind_carries_are_read_below_the_old_root() {
        let info = [
            line(1, "/", ""),
            line(2, "/oldroot", "shared:1"),
            line(3, "/oldroot/usr/lib/a\\040b", "master:2"),
            line(4, "/oldroot/etc/hosts", ""),
            line(5, "/oldroot/opt/private", "unbindable"),
            line(6, "/oldroot/opt/private/inner", ""),
            line(7, "/oldrootx/usr", ""),
            line(8, "/usr", ""),
        ]
        .join("\n");
        assert_eq!(
            bound_below(&info, Path::new("/oldroot")),
            [
                PathBuf::from("/"),
                PathBuf::from("/usr/lib/a b"),
                PathBuf::from("/etc/hosts"),
            ]
        );
    }

    #[test]
    fn a_root_is_sealed_around_the_outermost_mounts_below_it() {
        let points: Vec<PathBuf> = [
            "/",
            "/usr/lib/x/y",
            "/usr",
            "/usr/lib/x",
            "/usr/share",
            "/usrx",
            "/usr/lib/x",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        assert_eq!(
            outermost_below(&points, Path::new("/usr")),
            [PathBuf::from("/usr/share"), PathBuf::from("/usr/lib/x")]
        );
        assert!(outermost_below(&points, Path::new("/opt")).is_empty());
    }
}
