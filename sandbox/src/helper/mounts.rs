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

use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use nix::mount::{MntFlags, MsFlags, mount, umount2};

use crate::error::{SetupError, Stage};
use crate::plan::{MountOp, Placeholder};
use crate::sys::{UsernsHolder, harden_mount};

const OLD: &str = "/oldroot";
const DEVICES: &[&str] = &["null", "zero", "full", "random", "urandom", "tty"];

fn err(call: String, e: impl Into<std::io::Error>) -> SetupError {
    SetupError::os(Stage::Mounts, call, &e.into())
}

/// Creates protected paths that do not exist yet, refusing to follow symlinks. Denied-path
/// placeholders are left to [`guard_denied`].
pub fn create_placeholders(list: &[Placeholder]) -> Result<(), SetupError> {
    for ph in list.iter().filter(|ph| !ph.denied) {
        if ph.path.symlink_metadata().is_ok() {
            continue;
        }
        let Some(parent) = ph.path.parent() else {
            continue;
        };
        match parent.symlink_metadata() {
            Ok(m) if m.is_dir() => {}
            Ok(m) if m.file_type().is_symlink() => return Err(symlink_error(parent)),
            _ => continue, // a non-directory parent: nothing can be created below it
        }
        no_symlink_ancestors(parent)?;
        let made = if ph.dir {
            std::fs::create_dir(&ph.path)
        } else {
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&ph.path)
                .map(drop)
        };
        made.map_err(|e| {
            SetupError::os(
                Stage::Placeholders,
                format!("create({})", ph.path.display()),
                &e,
            )
        })?;
    }
    Ok(())
}

/// Marks a denied-path placeholder directory as ours (created by a sandbox run): whichever run
/// holds it last removes it, also one left behind by a helper that was killed. Invisible to
/// the child inside the leaf (masked); an ancestor's marker is visible but only lets an empty
/// directory be removed.
pub(crate) use crate::wire::PLACEHOLDER_MARKER as MARKER;

/// Tries to get hold of a guarded path again when a concurrent run removed it between our
/// `mkdir` and our lock.
const GUARD_ATTEMPTS: usize = 16;

/// The denied-path placeholders of one run, each open and under a shared `flock`. A run
/// removing a placeholder takes the lock exclusively first, so it never removes one another
/// run still masks: removing a directory that is a mount point in another mount namespace
/// succeeds and detaches that mount, which would unmask the path in the other run.
#[derive(Default)]
pub struct Guards(Vec<Guard>);

struct Guard {
    path: PathBuf,
    dir: std::fs::File,
    created: bool,
}

/// Creates (mode 0700) and locks each denied-path placeholder of `list`, parents first,
/// refusing symlinks on the way like [`create_placeholders`]. An entry that already exists is
/// locked as it is; one below a non-directory is skipped (nothing can be created there).
pub fn guard_denied(list: &[Placeholder]) -> Result<Guards, SetupError> {
    let mut guards = Guards::default();
    for ph in list.iter().filter(|ph| ph.denied) {
        match guard_one(&ph.path) {
            Ok(Some(guard)) => guards.0.push(guard),
            Ok(None) => {}
            Err(e) => {
                guards.release();
                return Err(e);
            }
        }
    }
    Ok(guards)
}

fn guard_one(path: &Path) -> Result<Option<Guard>, SetupError> {
    use std::os::unix::fs::DirBuilderExt;
    let Some(parent) = path.parent() else {
        return Ok(None);
    };
    let failed = |call: &str, e: std::io::Error| {
        SetupError::os(
            Stage::Placeholders,
            format!("{call}({})", path.display()),
            &e,
        )
    };
    for _ in 0..GUARD_ATTEMPTS {
        match parent.symlink_metadata() {
            Ok(m) if m.file_type().is_symlink() => return Err(symlink_error(parent)),
            Ok(m) if m.is_dir() => {}
            _ => return Ok(None),
        }
        no_symlink_ancestors(parent)?;
        let created = match std::fs::DirBuilder::new().mode(0o700).create(path) {
            Ok(()) => true,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => false,
            Err(e) => return Err(failed("mkdir", e)),
        };
        let dir = match std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
            .open(path)
        {
            Ok(dir) => dir,
            Err(_) if path.symlink_metadata().is_err() => continue,
            Err(_) if path.is_symlink() => return Err(symlink_error(path)),
            Err(e) => {
                return Err(failed("open", e).hint(
                    "a denied path inside a writable root is not a directory; remove it or \
                     deny its parent",
                ));
            }
        };
        if created {
            // Best effort: without the marker only this run removes it.
            let _ = nix::fcntl::openat(
                &dir,
                MARKER,
                nix::fcntl::OFlag::O_CREAT
                    | nix::fcntl::OFlag::O_EXCL
                    | nix::fcntl::OFlag::O_WRONLY
                    | nix::fcntl::OFlag::O_NOFOLLOW
                    | nix::fcntl::OFlag::O_CLOEXEC,
                nix::sys::stat::Mode::from_bits_truncate(0o600),
            );
        }
        dir.lock_shared().map_err(|e| failed("flock", e))?;
        if same_file(path, &dir) {
            return Ok(Some(Guard {
                path: path.to_path_buf(),
                dir,
                created,
            }));
        }
    }
    Err(SetupError::new(
        Stage::Placeholders,
        format!("{} keeps disappearing", path.display()),
    )
    .hint("another process removes this denied path while sandboxes start; retry"))
}

/// Whether `path` (not followed) is the file `open` refers to.
fn same_file(path: &Path, open: &std::fs::File) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (path.symlink_metadata(), open.metadata()) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

impl Guards {
    /// Whether this run alone holds the placeholder at `path`: its lock is then made exclusive
    /// (a run starting meanwhile waits for [`Guards::release`]). For `crate::git::stage`.
    pub fn alone(&self, path: &Path) -> bool {
        self.0
            .iter()
            .any(|g| g.path == path && g.dir.try_lock().is_ok() && same_file(&g.path, &g.dir))
    }

    /// Closes the descriptors without touching the locks, which the other copies keep (a
    /// forked child: its descriptors must not reach the confined command).
    pub fn forget(&mut self) {
        self.0.clear();
    }

    /// After the run, deepest first: each placeholder no other run holds is removed when it
    /// is still the directory we locked and holds nothing but our marker (or nothing, if this
    /// run created it). Never follows symlinks; anything else found in it stays, our marker
    /// aside. Failures leave the path as it is.
    pub fn release(self) {
        for guard in self.0.into_iter().rev() {
            guard.release();
        }
    }
}

impl Guard {
    fn release(self) {
        use std::os::fd::AsRawFd;
        // Converting to exclusive fails while another run holds it: that run removes it.
        if self.dir.try_lock().is_err() || !same_file(&self.path, &self.dir) {
            return;
        }
        let Ok(entries) = std::fs::read_dir(format!("/proc/self/fd/{}", self.dir.as_raw_fd()))
        else {
            return;
        };
        let names: Vec<std::ffi::OsString> = entries.flatten().map(|e| e.file_name()).collect();
        let marked = names.iter().any(|n| n == MARKER);
        if marked {
            let unmarked =
                nix::unistd::unlinkat(&self.dir, MARKER, nix::unistd::UnlinkatFlags::NoRemoveDir);
            if unmarked.is_err() || names.len() > 1 {
                return;
            }
        } else if !(self.created && names.is_empty()) {
            return;
        }
        let (Some(parent), Some(name)) = (self.path.parent(), self.path.file_name()) else {
            return;
        };
        let Ok(parent) = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
            .open(parent)
        else {
            return;
        };
        use std::os::unix::fs::MetadataExt;
        let Ok(ours) = self.dir.metadata() else {
            return;
        };
        let there =
            nix::sys::stat::fstatat(&parent, name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW);
        if there.is_ok_and(|st| st.st_dev == ours.dev() && st.st_ino == ours.ino()) {
            // rmdir removes only an empty directory: anything created meanwhile keeps it.
            let _ = nix::unistd::unlinkat(&parent, name, nix::unistd::UnlinkatFlags::RemoveDir);
        }
    }
}

fn no_symlink_ancestors(path: &Path) -> Result<(), SetupError> {
    for a in path.ancestors() {
        if a.symlink_metadata()
            .is_ok_and(|m| m.file_type().is_symlink())
        {
            return Err(symlink_error(a));
        }
    }
    Ok(())
}

fn symlink_error(path: &Path) -> SetupError {
    SetupError::new(
        Stage::Placeholders,
        format!("{} is a symlink", path.display()),
    )
    .hint("a protected path or its parent was replaced by a symlink; remove it and retry")
}

/// Read-only roots whose root-owned files must stay unreadable to a child running as uid 0
/// (see [`crate::plan::Plan::unowned`]): prepared by the helper while it still holds the
/// host's privilege, before it enters the new user namespace.
#[derive(Default)]
pub struct Unowned {
    /// Detached copies idmapped so that uid and gid 0 read as `nobody`: a file only root may
    /// read is unreadable inside, whichever files exist when the child runs.
    trees: Vec<(PathBuf, OwnedFd)>,
    /// Where the kernel or filesystem cannot idmap: each root-only file found now
    /// ([`crate::host::scan::unowned_fallback`]), masked.
    masks: Vec<MountOp>,
}

/// The ids of files under an unowned root: 0 becomes 65534 (`nobody`), every other id is
/// unmapped; either way the child's uid 0 is not their owner.
const UNOWNED_MAP: &str = "0 65534 1\n";

/// The idmap user namespace, made once by the zygote (see [`warm_up`]) and inherited by every
/// helper it forks; a helper without one makes its own.
static UNOWNED_USERNS: std::sync::OnceLock<OwnedFd> = std::sync::OnceLock::new();

/// Zygote start-up, as root: makes the idmap user namespace once (a fork and a user
/// namespace fewer per execution). Returns its descriptor, which forked helpers keep open.
pub fn warm_up() -> Option<std::os::fd::RawFd> {
    if !nix::unistd::geteuid().is_root() {
        return None;
    }
    let fd = crate::sys::userns_with_map(UNOWNED_MAP)
        .and_then(|(fd, _holder)| crate::sys::dup_high(fd.as_raw_fd()))
        .ok()?;
    let raw = fd.as_raw_fd();
    UNOWNED_USERNS.set(fd).ok()?;
    Some(raw)
}

fn unowned_userns() -> std::io::Result<(OwnedFd, Option<UsernsHolder>)> {
    match UNOWNED_USERNS.get() {
        Some(fd) => Ok((fd.try_clone()?, None)),
        None => crate::sys::userns_with_map(UNOWNED_MAP).map(|(fd, h)| (fd, Some(h))),
    }
}

impl Unowned {
    /// The descriptors it holds (a child that closes its inherited ones must keep these).
    pub fn fds(&self) -> Vec<std::os::fd::RawFd> {
        self.trees.iter().map(|(_, fd)| fd.as_raw_fd()).collect()
    }

    /// Moves its descriptors to 10 and up, clear of those a child installs its stdio and
    /// pipes on.
    pub fn move_high(&mut self) -> std::io::Result<()> {
        for (_, fd) in &mut self.trees {
            *fd = crate::sys::dup_high(fd.as_raw_fd())?;
        }
        Ok(())
    }

    /// Idmaps each of `roots`, falling back to masking its root-only files. The holder of a
    /// user namespace made for it, if any, comes back too: it ends by itself, and dropping it
    /// reaps it — late enough, and its exit is off the caller's path.
    pub fn prepare(roots: &[PathBuf]) -> (Unowned, Option<UsernsHolder>) {
        let mut out = Unowned::default();
        if roots.is_empty() {
            return (out, None);
        }
        let (userns, holder) = match unowned_userns() {
            Ok((ns, holder)) => (Some(ns), holder),
            Err(_) => (None, None),
        };
        for root in roots {
            let tree = userns.as_ref().and_then(|ns| {
                let tree = crate::sys::clone_tree(root).ok()?;
                crate::sys::idmap_tree_readonly(tree.as_raw_fd(), ns.as_raw_fd()).ok()?;
                Some(tree)
            });
            match tree {
                Some(tree) => out.trees.push((root.clone(), tree)),
                None => {
                    out.masks
                        .extend(
                            crate::host::scan::unowned_fallback(root)
                                .into_iter()
                                .map(|path| match path.symlink_metadata() {
                                    Ok(m) if m.is_dir() => MountOp::MaskDir { path },
                                    _ => MountOp::MaskFile { path },
                                }),
                        )
                }
            }
        }
        (out, holder)
    }

    fn tree(&self, path: &Path) -> Option<&OwnedFd> {
        self.trees.iter().find(|(p, _)| p == path).map(|(_, fd)| fd)
    }
}

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
    fn new() -> Result<SocketSeal, SetupError> {
        mkdir_p(Path::new(EMPTY))?;
        Ok(SocketSeal {
            mountinfo: old(Path::new("/proc/self/mountinfo")),
        })
    }

    /// Covers the read-only directory mounted at `path` with a read-only overlay of it, the
    /// mounts below it attached again on top. Not a directory, or gone: left as it is.
    fn seal(&self, path: &Path) -> Result<(), SetupError> {
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

fn old(path: &Path) -> PathBuf {
    Path::new(OLD).join(path.strip_prefix("/").unwrap_or(path))
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
        MountOp::BindDir { src, path } => bind_dir(src, path),
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
            return Err(err(format!("stat({})", path.display()), e).hint(
                "a writable root or protected path disappeared while the sandbox was built; \
                 recreate it and retry",
            ));
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
    mount(
        Some(&src),
        path,
        None::<&str>,
        MsFlags::MS_BIND | MsFlags::MS_REC,
        None::<&str>,
    )
    .map_err(|e| err(format!("mount({} , bind)", path.display()), e))?;
    harden_mount(path, !rw)
        .map_err(|e| err(format!("mount_setattr({}, ro={})", path.display(), !rw), e))
}

/// A [`MountOp::BindDir`]: the host directory `src` read-write at `path`; neither may be a
/// symlink.
fn bind_dir(src: &Path, path: &Path) -> Result<(), SetupError> {
    let from = old(src);
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
fn mkdir_p(path: &Path) -> Result<(), SetupError> {
    use nix::errno::Errno;
    match nix::unistd::mkdir(path, nix::sys::stat::Mode::from_bits_truncate(0o755)) {
        Ok(()) | Err(Errno::EEXIST) => Ok(()),
        Err(Errno::ENOENT) => {
            if let Some(parent) = path.parent() {
                mkdir_p(parent)?;
            }
            match nix::unistd::mkdir(path, nix::sys::stat::Mode::from_bits_truncate(0o755)) {
                Ok(()) | Err(Errno::EEXIST) => Ok(()),
                Err(e) => Err(err(format!("mkdir -p {}", path.display()), e)),
            }
        }
        Err(e) => Err(err(format!("mkdir -p {}", path.display()), e)),
    }
}

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
