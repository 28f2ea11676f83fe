//! The new root of the namespace backend, built by the pid namespace's init in its own mount
//! namespace, in this order:
//! 1. make every mount private;
//! 2. a tmpfs becomes `/` via `pivot_root`, the host root stays at `/oldroot`;
//! 3. the plan's binds, links, tmpfs and masks (parents first); the [`Unowned`] roots are
//!    attached as idmapped trees instead of binds; each read-only root is then covered by a
//!    read-only overlay of itself, which hides the host's Unix sockets in it ([`SocketSeal`]);
//! 4. `/dev` and `/proc` (its root-only files masked);
//! 5. detach `/oldroot`;
//! 6. `/` read-only.
//!
//! Also creates protected-path placeholders, and the directories that keep denied paths inside
//! writable roots maskable ([`guard_denied`]: created when missing, held under a shared lock
//! for the run, removed afterwards when still empty and ours), before the namespaces exist.
//!
//! Placeholders and guards of denied paths are in `guards`, the unowned roots' idmapped trees in
//! `unowned`, the read-only roots' socket seal in `seal`.

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use nix::mount::{MntFlags, MsFlags, mount, umount2};

use crate::error::{SetupError, Stage};
use crate::plan::MountOp;
use crate::sys::harden_mount;

mod guards;
mod prim;
mod seal;
mod unowned;

pub use guards::{Guards, create_placeholders, guard_denied};
use prim::{OLD, err, mkdir_p, old};
pub use seal::{SocketSeal, UNSEALED, layer_in_bwrap, seal_read_only_roots};
pub use unowned::{Unowned, warm_up};

const DEVICES: &[&str] = &["null", "zero", "full", "random", "urandom", "tty"];

/// Builds the new root from `ops` (with `unowned` roots attached idmapped), then detaches the
/// host root. `tmpfs_bytes` caps each tmpfs; `proc_masks` are hidden in the new `/proc`.
pub fn build_root(
    ops: &[MountOp],
    tmpfs_bytes: u64,
    unowned: &Unowned,
    proc_masks: &[PathBuf],
) -> Result<HostRoot, SetupError> {
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    )
    .map_err(|e| err("mount(/, MS_REC|MS_PRIVATE)".into(), e))?;
    pivot_to_tmpfs()?;
    let sealer = SocketSeal::new()?;
    for op in ops {
        match (op, op_tree(op, unowned)) {
            (MountOp::Bind { path, .. }, Some(tree)) => {
                attach(path, tree)?;
                sealer.seal(path)?;
            }
            // A read-only root (a protected path is a bind with `optional: false`).
            (
                MountOp::Bind {
                    path,
                    rw: false,
                    optional: true,
                },
                None,
            ) => {
                apply(op, tmpfs_bytes)?;
                sealer.seal(path)?;
            }
            _ => apply(op, tmpfs_bytes)?,
        }
    }
    for mask in &unowned.masks {
        apply(mask, tmpfs_bytes)?;
    }
    mount_dev()?;
    mount_proc()?;
    mask_proc(proc_masks, tmpfs_bytes)?;
    Ok(HostRoot(()))
}

/// The new root's flags once the host's root is detached.
const ROOT_READ_ONLY: MsFlags = MsFlags::MS_REMOUNT
    .union(MsFlags::MS_BIND)
    .union(MsFlags::MS_RDONLY)
    .union(MsFlags::MS_NOSUID)
    .union(MsFlags::MS_NODEV);

/// The host's root, still attached at [`OLD`] inside the new one when [`build_root`] returns.
/// Nothing but our own code may run in the namespace until it is detached.
#[must_use = "the host's root stays reachable until detached"]
pub struct HostRoot(());

impl HostRoot {
    /// Detaches it (the lazy unmount waits for an RCU grace period), removes its mount point
    /// and makes the new root read-only.
    pub fn detach(self) -> Result<(), SetupError> {
        umount2(OLD, MntFlags::MNT_DETACH)
            .map_err(|e| err(format!("umount2({OLD}, MNT_DETACH)"), e))?;
        let _ = std::fs::remove_dir(OLD);
        mount(
            None::<&str>,
            "/",
            None::<&str>,
            ROOT_READ_ONLY,
            None::<&str>,
        )
        .map_err(|e| err("mount(/, remount ro)".into(), e))
    }

    /// As [`HostRoot::detach`], in a child sharing our memory
    /// ([`crate::sys::detach_in_background`]), so its grace period overlaps the command's
    /// confinement. The command must pass the returned gate before it execs.
    pub fn detach_in_background(self) -> Result<DetachGate, SetupError> {
        let flags = libc::c_ulong::from(ROOT_READ_ONLY.bits());
        match crate::sys::detach_in_background(Path::new(OLD), flags) {
            Ok(fd) => Ok(DetachGate(Some(fd))),
            Err(e) if e.kind() == std::io::ErrorKind::Unsupported => {
                self.detach().map(|()| DetachGate(None))
            }
            Err(e) => Err(err(format!("clone(detach {OLD})"), e)),
        }
    }
}

/// The outcome of a background [`HostRoot::detach_in_background`] (`None`: already detached).
pub struct DetachGate(Option<OwnedFd>);

impl DetachGate {
    /// Its descriptor, which a child that closes its strays must keep.
    pub fn fd(&self) -> Option<std::os::fd::RawFd> {
        self.0.as_ref().map(AsRawFd::as_raw_fd)
    }

    /// Blocks until the host's root is detached and the new root read-only; an error if that
    /// failed (then the command must not run).
    pub fn pass(&self) -> Result<(), SetupError> {
        let Some(fd) = &self.0 else { return Ok(()) };
        let mut errno = [0u8; 4];
        let mut got = 0;
        while got < errno.len() {
            match nix::unistd::read(fd, &mut errno[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(err("read(detach gate)".into(), e)),
            }
        }
        match (got, i32::from_ne_bytes(errno)) {
            (4, 0) => Ok(()),
            (4, code) => Err(err(
                format!("umount2({OLD}, MNT_DETACH) / mount(/, remount ro)"),
                std::io::Error::from_raw_os_error(code),
            )),
            _ => Err(SetupError::new(
                Stage::Mounts,
                format!("the child detaching {OLD} ended without a word"),
            )),
        }
    }
}

fn op_tree<'a>(op: &MountOp, unowned: &'a Unowned) -> Option<&'a OwnedFd> {
    match op {
        MountOp::Bind {
            path, rw: false, ..
        } => unowned.tree(path),
        _ => None,
    }
}

fn attach(path: &Path, tree: &OwnedFd) -> Result<(), SetupError> {
    mkdir_p(path)?;
    crate::sys::attach_tree(tree.as_raw_fd(), path).map_err(|e| {
        err(
            format!(
                "move_mount(idmapped {}, {})",
                path.display(),
                path.display()
            ),
            e,
        )
    })
}

fn pivot_to_tmpfs() -> Result<(), SetupError> {
    let base = "/tmp";
    mount(
        Some("tmpfs"),
        base,
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        Some("mode=0755,size=1m"),
    )
    .map_err(|e| err(format!("mount(tmpfs, {base})"), e))?;
    std::fs::create_dir(format!("{base}{OLD}"))
        .map_err(|e| err(format!("mkdir({base}{OLD})"), e))?;
    nix::unistd::pivot_root(base, format!("{base}{OLD}").as_str())
        .map_err(|e| err(format!("pivot_root({base}, {base}{OLD})"), e))?;
    nix::unistd::chdir("/").map_err(|e| err("chdir(/)".into(), e))
}

fn apply(op: &MountOp, tmpfs_bytes: u64) -> Result<(), SetupError> {
    match op {
        MountOp::Bind { path, rw, optional } => bind(path, *rw, *optional),
        MountOp::Symlink { path, target } => {
            let failed = |e| {
                err(
                    format!("symlink({} -> {})", path.display(), target.display()),
                    e,
                )
            };
            match std::os::unix::fs::symlink(target, path) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    mkdir_p(path.parent().unwrap_or(Path::new("/")))?;
                    std::os::unix::fs::symlink(target, path).map_err(failed)
                }
                made => made.map_err(failed),
            }
        }
        MountOp::Tmpfs { path, mode } => {
            tmpfs(path, &format!("mode={mode:o},size={tmpfs_bytes}"), false)
        }
        MountOp::MaskDir { path } => {
            let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV;
            let data = "mode=0,size=4k";
            let mounted = mount(Some("tmpfs"), path, Some("tmpfs"), flags, Some(data));
            mask_mounted(path, mounted, || {
                format!("mount(tmpfs, {}, {data})", path.display())
            })
        }
        MountOp::BindDir { src, path } | MountOp::Stage { src, path } => bind_dir(src, path),
        MountOp::Layer { path, dir } => layer(path, dir),
        MountOp::Pin { path } => prim::pin(path),
        MountOp::File { path, contents } => bind_contents(path, contents),
        MountOp::MaskFile { path } => {
            let null = Path::new(OLD).join("dev/null");
            let flags = MsFlags::MS_BIND;
            let mounted = mount(Some(&null), path, None::<&str>, flags, None::<&str>);
            mask_mounted(path, mounted, || {
                format!("mount(/dev/null -> {}, bind)", path.display())
            })
        }
    }
}

/// Finishes a mask mounted over `path` (read-only, nosuid, nodev). A path with nothing there
/// (nor possible, below a non-directory) has nothing to hide and is skipped: the mount's
/// ENOENT/ENOTDIR says so without a `stat` first. Anything that is there but could not be
/// masked (a dangling symlink, a file where a directory was planned) fails the call.
fn mask_mounted(
    path: &Path,
    mounted: nix::Result<()>,
    call: impl FnOnce() -> String,
) -> Result<(), SetupError> {
    use nix::errno::Errno;
    match mounted {
        Ok(()) => harden_mount(path, true)
            .map_err(|e| err(format!("mount_setattr({}, ro)", path.display()), e)),
        Err(Errno::ENOENT | Errno::ENOTDIR) if path.symlink_metadata().is_err() => Ok(()),
        Err(e) => Err(err(call(), e)),
    }
}

/// Binds the host's `path` at the same place. A source gone since the plan was built is
/// skipped when the bind is `optional` (a read-only root), and an error otherwise (a writable
/// root or protected path must be there).
fn bind(path: &Path, rw: bool, optional: bool) -> Result<(), SetupError> {
    let src = old(path);
    let meta = match src.symlink_metadata() {
        Ok(m) => m,
        Err(_) if has_non_dir_ancestor(&src) => return Ok(()),
        Err(e) if optional && e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => {
            let gone = e.kind() == std::io::ErrorKind::NotFound;
            let error = err(format!("stat({})", path.display()), e).hint(
                "a writable root or protected path disappeared while the sandbox was built; \
                 recreate it and retry",
            );
            return Err(if gone { error.host_changed() } else { error });
        }
    };
    if meta.file_type().is_symlink() {
        return Err(
            SetupError::new(Stage::Mounts, format!("{} is a symlink", path.display())).hint(
                "a protected path or sandbox root is a symlink; remove it or name its target",
            ),
        );
    }
    if meta.is_dir() {
        mkdir_p(path)?;
    } else {
        touch(path)?;
    }
    let bind_it = || {
        mount(
            Some(&src),
            path,
            None::<&str>,
            MsFlags::MS_BIND | MsFlags::MS_REC,
            None::<&str>,
        )
    };
    // A read-only root removed between the `lstat` and the bind is skipped like one gone
    // before; one removed and made again meanwhile is bound as it is now.
    let mut bound = bind_it();
    for _ in 0..3 {
        match bound {
            Err(nix::errno::Errno::ENOENT) if optional => match src.symlink_metadata() {
                Err(_) => return Ok(()),
                Ok(m) if m.is_dir() == meta.is_dir() => bound = bind_it(),
                Ok(_) => break,
            },
            _ => break,
        }
    }
    bound.map_err(|e| err(format!("mount({} , bind)", path.display()), e))?;
    harden_mount(path, !rw)
        .map_err(|e| err(format!("mount_setattr({}, ro={})", path.display(), !rw), e))
}

/// A [`MountOp::Layer`]: the host's directory `path` as the lower layer of a writable overlay
/// at the same place, over the call's upper layer in `dir` (see [`crate::layer`]). In a user
/// namespace overlayfs keeps its own attributes as `user.overlay.*` (`userxattr`), which rules
/// out `redirect_dir`: renaming a directory the host had gives EXDEV (`mv` copies instead).
/// `userxattr` also forces `redirect_dir=nofollow` and `metacopy=off`, whatever the module's
/// defaults: the landing moves whole files and takes a directory in the upper layer for the
/// one at its own path.
/// `volatile`: a layer that did not land is discarded, so nothing in it needs syncing before
/// the landing, which syncs what it landed.
fn layer(path: &Path, dir: &Path) -> Result<(), SetupError> {
    mkdir_p(path)?;
    mount_layer(path, &old(path), &old(dir))
}

/// The workspace's layer at `path` (the layer's directory `dir`) for bubblewrap launched by
/// another user (`plan::layer::Layering`), in the process about to exec bwrap, once it is in a
/// user and a mount namespace of its own (`helper::idmap::enter_user_and_mount`): the overlay
/// covers the host's workspace in place; bwrap then binds it from there, and the helper,
/// outside, lands the layer once bwrap is gone.
pub fn layer_outside(path: &Path, dir: &Path) -> Result<(), SetupError> {
    mount_layer(path, path, dir)
}

/// The overlay of the host's directory `lower` (a directory, or the call fails) at `path`,
/// over the layer directory `dir`'s upper and work directories.
fn mount_layer(path: &Path, lower: &Path, dir: &Path) -> Result<(), SetupError> {
    if !lower.symlink_metadata().is_ok_and(|m| m.is_dir()) {
        return Err(SetupError::new(
            Stage::Mounts,
            format!("the workspace {} is not a directory", path.display()),
        )
        .hint("the workspace disappeared while the sandbox was built; recreate it and retry"));
    }
    let data = format!(
        "lowerdir={},upperdir={},workdir={},userxattr,volatile",
        seal::escape_overlay(&lower.display().to_string()),
        seal::escape_overlay(&crate::layer::upper(dir).display().to_string()),
        seal::escape_overlay(&crate::layer::work(dir).display().to_string()),
    );
    let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV;
    mount(
        Some("overlay"),
        path,
        Some("overlay"),
        flags,
        Some(data.as_str()),
    )
    .map_err(|e| {
        err(format!("mount(overlay, {}, {data})", path.display()), e).hint(
            "the workspace is mounted as a writable overlay (Linux >= 5.11 in a user namespace)",
        )
    })
}

/// A [`MountOp::BindDir`] or [`MountOp::Stage`]: the host directory `src` read-write at
/// `path`; neither may be a symlink.
fn bind_dir(src: &Path, path: &Path) -> Result<(), SetupError> {
    let from = old(src);
    // A linked worktree's main repository lies outside the roots: its place is made.
    if path.symlink_metadata().is_err() {
        mkdir_p(path)?;
    }
    for p in [&from, &path.to_path_buf()] {
        match p.symlink_metadata() {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                return Err(SetupError::new(
                    Stage::Mounts,
                    format!("{} is not a directory", p.display()),
                ));
            }
            Err(e) => return Err(err(format!("stat({})", p.display()), e)),
        }
    }
    let flags = MsFlags::MS_BIND | MsFlags::MS_REC;
    mount(Some(&from), path, None::<&str>, flags, None::<&str>).map_err(|e| {
        err(
            format!("mount({} -> {}, bind)", src.display(), path.display()),
            e,
        )
    })?;
    harden_mount(path, false).map_err(|e| err(format!("mount_setattr({})", path.display()), e))
}

/// Bubblewrap's inner stage, after the seal (root launched) or in its own mount namespace
/// (launched by another user): each [`MountOp::File`] of `ops`.
pub fn bind_files(ops: &[MountOp]) -> Result<(), SetupError> {
    for op in ops {
        if let MountOp::File { path, contents } = op {
            bind_contents(path, contents)?;
        }
    }
    Ok(())
}

/// A [`MountOp::File`]: `contents` in a file of a small tmpfs staged in the new root, bound
/// read-only over `path`; the staging tmpfs is then detached (the bind keeps the file). A
/// `path` with nothing there, or a dangling symlink (a `resolv.conf` pointing into `/run`), is
/// left alone: the resolver then falls back to 127.0.0.1, and there are no host names.
fn bind_contents(path: &Path, contents: &str) -> Result<(), SetupError> {
    // In the private /tmp (mounted before: parents first), writable on every backend.
    const STAGE: &str = "/tmp/.zeroclaw-file";
    if std::fs::metadata(path).is_err() {
        return Ok(());
    }
    tmpfs(Path::new(STAGE), "mode=0755,size=64k", false)?;
    let file = Path::new(STAGE).join("f");
    std::fs::write(&file, contents).map_err(|e| err(format!("write({})", file.display()), e))?;
    let bound = mount(
        Some(&file),
        path,
        None::<&str>,
        MsFlags::MS_BIND,
        None::<&str>,
    )
    .map_err(|e| err(format!("mount({} , bind)", path.display()), e));
    let hardened = bound.and_then(|()| {
        harden_mount(path, true)
            .map_err(|e| err(format!("mount_setattr({}, ro)", path.display()), e))
    });
    umount2(STAGE, MntFlags::MNT_DETACH).map_err(|e| err(format!("umount2({STAGE})"), e))?;
    let _ = std::fs::remove_dir(STAGE);
    hardened
}

/// Whether something above `path` is not a directory (so `path` cannot exist).
pub fn has_non_dir_ancestor(path: &Path) -> bool {
    path.ancestors()
        .skip(1)
        .any(|a| a.symlink_metadata().is_ok_and(|m| !m.is_dir()))
}

fn tmpfs(path: &Path, data: &str, readonly: bool) -> Result<(), SetupError> {
    mkdir_p(path)?;
    let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV;
    mount(Some("tmpfs"), path, Some("tmpfs"), flags, Some(data))
        .map_err(|e| err(format!("mount(tmpfs, {}, {data})", path.display()), e))?;
    if readonly {
        harden_mount(path, true)
            .map_err(|e| err(format!("mount_setattr({}, ro)", path.display()), e))?;
    }
    Ok(())
}

/// `mkdir -p`, one `mkdir` per directory in the usual cases: the path itself first (it exists,
/// or only it is missing), its parents only when that says they are missing. Something other
/// than a directory in the way is left for the mount on it to refuse.
/// An empty file at `path` to mount a file on (one `mknod`; kept if something is there).
fn touch(path: &Path) -> Result<(), SetupError> {
    use nix::errno::Errno;
    use nix::sys::stat::{Mode, SFlag, mknod};
    let make = || mknod(path, SFlag::S_IFREG, Mode::from_bits_truncate(0o644), 0);
    match make() {
        Ok(()) | Err(Errno::EEXIST) => Ok(()),
        Err(Errno::ENOENT) => {
            mkdir_p(path.parent().unwrap_or(Path::new("/")))?;
            match make() {
                Ok(()) | Err(Errno::EEXIST) => Ok(()),
                Err(e) => Err(err(format!("create({})", path.display()), e)),
            }
        }
        Err(e) => Err(err(format!("create({})", path.display()), e)),
    }
}

/// A minimal `/dev`: the harmless character devices bound from the host, a private `/dev/shm`
/// and, when the kernel allows it, a private devpts.
fn mount_dev() -> Result<(), SetupError> {
    tmpfs(Path::new("/dev"), "mode=0755,size=64k", false)?;
    for dev in DEVICES {
        let path = Path::new("/dev").join(dev);
        let src = Path::new(OLD).join("dev").join(dev);
        touch(&path)?;
        match mount(
            Some(&src),
            &path,
            None::<&str>,
            MsFlags::MS_BIND,
            None::<&str>,
        ) {
            Ok(()) => {}
            // Not on the host: no node either.
            Err(nix::errno::Errno::ENOENT) => drop(std::fs::remove_file(&path)),
            Err(e) => return Err(err(format!("mount({}, bind)", path.display()), e)),
        }
    }
    for (link, target) in [
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
        ("ptmx", "pts/ptmx"),
    ] {
        let _ = std::os::unix::fs::symlink(target, Path::new("/dev").join(link));
    }
    tmpfs(Path::new("/dev/shm"), "mode=1777,size=64m", false)?;
    mkdir_p(Path::new("/dev/pts"))?;
    let _ = mount(
        Some("devpts"),
        "/dev/pts",
        Some("devpts"),
        MsFlags::MS_NOSUID | MsFlags::MS_NOEXEC,
        Some("newinstance,ptmxmode=0666,mode=620"),
    );
    Ok(())
}

/// A `/proc` of the new pid namespace, with `/proc/sys` read-only.
fn mount_proc() -> Result<(), SetupError> {
    mkdir_p(Path::new("/proc"))?;
    let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC;
    mount(Some("proc"), "/proc", Some("proc"), flags, None::<&str>).map_err(|e| {
        err("mount(proc, /proc)".into(), e)
            .hint("the host's /proc is partly masked (container?); run on a host or use backend = \"landlock\"")
    })?;
    for sub in ["/proc/sys", "/proc/sysrq-trigger"] {
        let flags = MsFlags::MS_BIND | MsFlags::MS_REC;
        match mount(Some(sub), sub, None::<&str>, flags, None::<&str>) {
            Ok(()) => harden_mount(Path::new(sub), true)
                .map_err(|e| err(format!("mount_setattr({sub}, ro)"), e))?,
            // Not in this kernel's /proc (sysrq-trigger without CONFIG_MAGIC_SYSRQ).
            Err(nix::errno::Errno::ENOENT) => {}
            Err(e) => return Err(err(format!("mount({sub}, bind)"), e)),
        }
    }
    Ok(())
}

/// Hides root-only files of the new `/proc` (see [`crate::host::scan::proc_private`]): `/dev/null`
/// over each file, an empty tmpfs over a directory. One missing in this `/proc` (another
/// network namespace's entries) is skipped.
fn mask_proc(paths: &[PathBuf], tmpfs_bytes: u64) -> Result<(), SetupError> {
    for path in paths {
        let op = match path.symlink_metadata() {
            Ok(m) if m.is_dir() => MountOp::MaskDir { path: path.clone() },
            Ok(_) => MountOp::MaskFile { path: path.clone() },
            Err(_) => continue,
        };
        apply(&op, tmpfs_bytes)?;
    }
    Ok(())
}

/// Removes paths that appeared during the run (see [`crate::plan::scrub_list`]).
pub fn scrub(paths: &[PathBuf]) {
    for p in paths {
        match p.symlink_metadata() {
            Ok(m) if m.is_dir() => drop(std::fs::remove_dir_all(p)),
            Ok(_) => drop(std::fs::remove_file(p)),
            Err(_) => {}
        }
    }
}

/// The binds bubblewrap can apply: none below a non-directory, and none through a symlink.
pub fn bwrap_binds(ops: &[MountOp]) -> Result<Vec<MountOp>, SetupError> {
    let mut out = Vec::new();
    for op in ops {
        // Nothing there to cover (or a dangling link): left alone, as `bind_contents` does.
        if let MountOp::File { path, .. } = op
            && std::fs::metadata(path).is_err()
        {
            continue;
        }
        if let MountOp::Bind { path, .. } = op {
            if has_non_dir_ancestor(path) {
                continue;
            }
            if path
                .symlink_metadata()
                .is_ok_and(|m| m.file_type().is_symlink())
            {
                return Err(SetupError::new(
                    Stage::Mounts,
                    format!("{} is a symlink", path.display()),
                )
                .hint(
                    "a protected path or sandbox root is a symlink; remove it or name its target",
                ));
            }
        }
        out.push(op.clone());
    }
    Ok(out)
}
