//! The plan: a [`Profile`] resolved for one backend into exact instructions for the helper
//! (mount operations, Landlock paths, seccomp switches, environment). Pure; sent as JSON.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::backend::Backend;
use crate::profile::{Limits, Network, Profile, home_dir};

/// One step of building the new root (namespace and bubblewrap backends), in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum MountOp {
    /// Bind `src` (host path) at the same path, read-only or read-write.
    Bind {
        /// Host path, also the path inside.
        path: PathBuf,
        /// Writable.
        rw: bool,
        /// Skipped when the path is gone by the time the helper mounts (a read-only root that
        /// existed when the plan was built; bwrap's `--ro-bind-try`). Otherwise a missing path
        /// fails the call: a writable root or a protected path must be there.
        #[serde(default)]
        optional: bool,
    },
    /// A symlink in the new root (e.g. `/bin -> usr/bin` on merged-usr systems).
    Symlink {
        /// Where the link is.
        path: PathBuf,
        /// What it points to.
        target: PathBuf,
    },
    /// A private, empty, writable tmpfs.
    Tmpfs {
        /// Mount point.
        path: PathBuf,
        /// Mode of its root directory.
        mode: u32,
    },
    /// Hide a file (bind `/dev/null` read-only over it).
    MaskFile {
        /// The hidden file.
        path: PathBuf,
    },
    /// Hide a directory (an empty read-only tmpfs over it).
    MaskDir {
        /// The hidden directory.
        path: PathBuf,
    },
}

impl MountOp {
    /// The path inside the sandbox this operation creates.
    pub fn path(&self) -> &Path {
        match self {
            MountOp::Bind { path, .. }
            | MountOp::Symlink { path, .. }
            | MountOp::Tmpfs { path, .. }
            | MountOp::MaskFile { path }
            | MountOp::MaskDir { path } => path,
        }
    }
}

/// A path inside a writable root that must exist before the mounts, so that a mount can sit on
/// it: a protected path that does not exist yet (kept afterwards), or a denied path and each
/// directory between its writable root and it (`denied`, listed whether they exist or not).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placeholder {
    /// Absolute path inside a writable root.
    pub path: PathBuf,
    /// Directory (else an empty file).
    pub dir: bool,
    /// On the way to (or at) a denied path: always a directory, created when missing, held
    /// under a shared lock for the run (so a concurrent run's cleanup cannot remove it from
    /// under this run's mask) and removed afterwards when it is still empty and ours.
    #[serde(default)]
    pub denied: bool,
}

/// Paths for the Landlock ruleset (paths as seen by the confined command).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LandlockPlan {
    /// Read and execute.
    pub read: Vec<PathBuf>,
    /// Everything (read, write, create, remove, rename).
    pub write: Vec<PathBuf>,
    /// Device files: read, write, ioctl.
    pub devices: Vec<PathBuf>,
    /// Deny TCP bind/connect and scope abstract sockets.
    pub deny_network: bool,
    /// Open rule paths refusing any symlink on the way (host paths, Landlock-only backend:
    /// a link planted after planning must not move a rule onto its target).
    pub no_symlinks: bool,
    /// Root-only `/proc` files left out of the `/proc` rules (Landlock-only backend started
    /// by root; see [`proc_private`]).
    #[serde(default)]
    pub proc_hidden: Vec<PathBuf>,
}

/// Switches for the seccomp filter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeccompPlan {
    /// Deny `socket()` for every family but `AF_UNIX`.
    pub deny_inet: bool,
    /// Landlock-only backend (no namespaces; Landlock does not cover attribute changes nor
    /// pathname Unix sockets): route mode, time and owner changes and `connect` to the
    /// helper's supervisor (`helper/notify/`), refuse Unix datagram sockets, the host's IPC
    /// and other processes' rlimits and scheduling.
    pub deny_attr_changes: bool,
}

/// Everything the helper needs, resolved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// The backend to apply.
    pub backend: Backend,
    /// The command.
    pub argv: Vec<OsString>,
    /// A registered in-process operation to run instead of `argv` (payload on stdin).
    pub op: Option<String>,
    /// The complete environment.
    pub env: Vec<(OsString, OsString)>,
    /// Working directory inside the sandbox.
    pub cwd: PathBuf,
    /// New-root construction (namespace and bubblewrap backends).
    pub mounts: Vec<MountOp>,
    /// Read-only roots among `mounts` whose root-owned files must stay unreadable to a child
    /// running as uid 0 (the namespace backend started by root: `/etc` and the toolchain
    /// directories under `$HOME`). The helper attaches them idmapped (uid and gid 0 read as
    /// `nobody`), or masks their root-only files where the kernel cannot (for a toolchain, those
    /// outside its bulk: see [`toolchain_private`]); with this, the launcher needs no scan.
    pub unowned: Vec<PathBuf>,
    /// Root-only files of `/proc` masked once the new `/proc` is mounted (namespace backends
    /// started by root, whose child is uid 0; see [`proc_private`]).
    #[serde(default)]
    pub proc_masks: Vec<PathBuf>,
    /// Placeholders to create (and, for denied paths, lock) before mounting.
    pub placeholders: Vec<Placeholder>,
    /// Protected paths (for backends that express them directly, like Seatbelt).
    pub protected: Vec<PathBuf>,
    /// Denied paths (likewise).
    pub denied: Vec<PathBuf>,
    /// Paths removed after the run if they appeared (see [`scrub_list`]).
    pub scrub: Vec<PathBuf>,
    /// Landlock rules.
    pub landlock: LandlockPlan,
    /// Seccomp switches.
    pub seccomp: SeccompPlan,
    /// Resource limits.
    pub limits: Limits,
    /// Accept a partially enforced Landlock ruleset.
    pub allow_partial: bool,
    /// New network namespace.
    pub unshare_net: bool,
    /// Private HOME/TMPDIR directory the helper creates and removes (Landlock-only backend).
    pub scratch: Option<PathBuf>,
    /// bubblewrap executable (bubblewrap backend).
    pub bwrap: Option<PathBuf>,
    /// bubblewrap started by root: bwrap keeps the inner stage the capabilities to cover the
    /// read-only roots with overlays (see `helper::mounts::SocketSeal`).
    #[serde(default)]
    pub seal_in_bwrap: bool,
    /// pid of the launcher, so the helper notices if it died before `PR_SET_PDEATHSIG`.
    pub launcher_pid: u32,
    /// A warm helper (see [`crate::warm`]): the init waits on [`crate::wire::GO_FD`] for the
    /// call's plan and stdio once the root is built.
    #[serde(default)]
    pub warm: bool,
    /// Per-user count maxima (`/proc/sys/user/max_*`, by file name) for the child's user
    /// namespace, from the host's values, read once per process (the namespace backends; see
    /// `helper/ucounts.rs`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub user_limits: Vec<(String, u64)>,
}

/// Where the private HOME lives inside the sandbox on the namespace backends.
fn sandbox_home() -> PathBuf {
    home_dir().unwrap_or_else(|| PathBuf::from("/home/sandbox"))
}

/// Resolves `profile` for `backend`. `scratch` is the Landlock-only backend's private dir.
pub fn build(
    backend: Backend,
    profile: &Profile,
    argv: Vec<OsString>,
    scratch: Option<PathBuf>,
) -> Plan {
    let git_targets = crate::gitconfig::targets(&profile.workspace);
    let mut extended;
    let profile = if git_targets.is_empty() {
        profile
    } else {
        extended = profile.clone();
        extended
            .protected
            .extend(git_targets.iter().map(|t| t.path.clone()));
        &extended
    };
    let namespaced = matches!(backend, Backend::Namespaces | Backend::Bubblewrap);
    let unowned = if backend == Backend::Namespaces {
        unowned_roots(profile)
    } else {
        Vec::new()
    };
    let root_only_proc = if nix::unistd::geteuid().is_root() && backend != Backend::None {
        // A new network namespace has its own `/proc/sys/net`, not the host's.
        proc_private(profile.network != Network::Deny)
    } else {
        Vec::new()
    };
    let (home, tmp) = match (&scratch, namespaced) {
        (Some(s), false) => (s.join("home"), s.join("tmp")),
        _ => (sandbox_home(), PathBuf::from("/tmp")),
    };
    Plan {
        backend,
        env: environment(profile, &home, &tmp),
        argv,
        op: None,
        cwd: profile.cwd.clone(),
        mounts: if namespaced {
            mounts_with(profile, &home, &unowned)
        } else {
            Vec::new()
        },
        unowned,
        proc_masks: if namespaced {
            root_only_proc.clone()
        } else {
            Vec::new()
        },
        placeholders: if namespaced {
            placeholders_with(profile, &git_targets)
        } else {
            Vec::new()
        },
        protected: profile.protected.clone(),
        denied: profile.denied.clone(),
        scrub: scrub_list(profile),
        landlock: if backend == Backend::None {
            LandlockPlan::default() // unconfined: no ruleset, no /etc scan
        } else {
            LandlockPlan {
                proc_hidden: if namespaced {
                    Vec::new()
                } else {
                    root_only_proc
                },
                ..landlock(profile, namespaced, &home, &tmp)
            }
        },
        seccomp: SeccompPlan {
            deny_inet: profile.network == Network::Deny,
            deny_attr_changes: !namespaced,
        },
        limits: profile.limits.clone(),
        allow_partial: false,
        unshare_net: profile.network == Network::Deny,
        scratch,
        bwrap: None,
        seal_in_bwrap: backend == Backend::Bubblewrap && nix::unistd::geteuid().is_root(),
        launcher_pid: std::process::id(),
        warm: false,
        user_limits: if namespaced {
            crate::host::user_counts::host_limits()
        } else {
            Vec::new()
        },
    }
}

fn depth(p: &Path) -> usize {
    p.components().count()
}

fn is_under(path: &Path, root: &Path) -> bool {
    path.starts_with(root)
}

/// `/etc` and the exposed toolchain directories under `$HOME` when root launches: root inside
/// would own their root-only files (keys, registry tokens such as a node prefix's
/// `etc/npmrc`). Only roots that are plain read-only directories with no other root below
/// them (those would be bound unmapped).
fn unowned_roots(profile: &Profile) -> Vec<PathBuf> {
    if !nix::unistd::geteuid().is_root() {
        return Vec::new();
    }
    let etc = PathBuf::from("/etc");
    let candidates = std::iter::once(etc).chain(toolchain_roots(profile));
    candidates
        .filter(|root| {
            let below = profile
                .read_only
                .iter()
                .chain(profile.writable_roots())
                .any(|r| r.starts_with(root) && r != root);
            let plain_dir = root.symlink_metadata().is_ok_and(|m| m.is_dir());
            plain_dir && !below && profile.read_only.contains(root)
        })
        .collect()
}

/// The read-only roots that are toolchain directories under `$HOME` ([`crate::profile::HOME_TOOLCHAINS`]).
pub fn toolchain_roots(profile: &Profile) -> Vec<PathBuf> {
    let Some(home) = home_dir() else {
        return Vec::new();
    };
    crate::profile::HOME_TOOLCHAINS
        .iter()
        .map(|t| home.join(t))
        .filter(|t| profile.read_only.contains(t) && t.symlink_metadata().is_ok())
        .collect()
}

/// Directory names a toolchain scan does not enter: the bulk of a toolchain (libraries,
/// headers, documentation, sources), tens of thousands of files that a scan per launcher
/// process cannot afford.
const TOOLCHAIN_BULK: &[&str] = &[
    "lib",
    "lib64",
    "libexec",
    "include",
    "share",
    "node_modules",
    "src",
    "man",
    "doc",
    "docs",
    ".git",
];

/// Root-only files and directories of a toolchain directory outside its bulk
/// ([`TOOLCHAIN_BULK`]): its configuration (`etc/`, `settings.toml`, `.npmrc`...) and top
/// levels, for the backends that cannot attach it idmapped. Cached per process and root (a few
/// hundred entries for rustup and pyenv together, under 10 ms).
pub fn toolchain_private(root: &Path) -> Vec<PathBuf> {
    type Cache = std::sync::Mutex<std::collections::HashMap<PathBuf, Vec<PathBuf>>>;
    static CACHE: std::sync::OnceLock<Cache> = std::sync::OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(found) = cache.lock().ok().and_then(|c| c.get(root).cloned()) {
        return found;
    }
    let mut out = Vec::new();
    walk_toolchain(root, &mut out, 0);
    if let Ok(mut c) = cache.lock() {
        c.insert(root.to_path_buf(), out.clone());
    }
    out
}

fn walk_toolchain(dir: &Path, out: &mut Vec<PathBuf>, depth: usize) {
    use std::os::unix::fs::PermissionsExt;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let Ok(kind) = e.file_type() else { continue };
        if kind.is_symlink() {
            continue;
        }
        let Ok(meta) = e.metadata() else { continue };
        let mode = meta.permissions().mode();
        if kind.is_dir() {
            let bulk = e
                .file_name()
                .to_str()
                .is_some_and(|n| TOOLCHAIN_BULK.contains(&n));
            if mode & 0o005 != 0o005 {
                out.push(e.path());
            } else if !bulk && depth < 8 {
                walk_toolchain(&e.path(), out, depth + 1);
            }
        } else if mode & 0o004 == 0 {
            out.push(e.path());
        }
    }
}

/// What the helper masks under an unowned root it could not attach idmapped: every root-only
/// file of `/etc`, the root-only files outside a toolchain's bulk ([`toolchain_private`]).
pub fn unowned_fallback(root: &Path) -> Vec<PathBuf> {
    if root == Path::new("/etc") {
        private_files(root)
    } else {
        toolchain_private(root)
    }
}

/// The new root: read-only roots, private HOME and /tmp, writable roots, pinned parents of
/// protected and guarded denied paths, protected paths read-only, denied paths masked (also,
/// inside a writable root, when they do not exist yet: see [`guarded_denied`]). Parents
/// before children.
pub fn mounts(profile: &Profile, home: &Path) -> Vec<MountOp> {
    mounts_with(profile, home, &[])
}

/// Like [`mounts`]; root-only files under `unowned` roots are left to the helper.
fn mounts_with(profile: &Profile, home: &Path, unowned: &[PathBuf]) -> Vec<MountOp> {
    let mut ops = Vec::new();
    for root in existing(&profile.read_only) {
        ops.push(bind_or_link(&root));
    }
    let home_allowed = profile
        .read_only
        .iter()
        .chain(profile.writable_roots())
        .any(|r| home.starts_with(r));
    if !home_allowed {
        ops.push(MountOp::Tmpfs {
            path: home.to_path_buf(),
            mode: 0o700,
        });
    }
    ops.push(MountOp::Tmpfs {
        path: PathBuf::from("/tmp"),
        mode: 0o1777,
    });
    for root in existing(profile.writable_roots()) {
        ops.push(MountOp::Bind {
            path: root,
            rw: true,
            optional: false,
        });
    }
    ops.extend(protected_mounts(profile));
    for op in denied_mounts(profile) {
        if !ops.contains(&op) {
            ops.push(op);
        }
    }
    ops.extend(masks(profile, &ops, unowned));
    ops.sort_by_key(|op| depth(op.path()));
    ops
}

fn existing<'a>(paths: impl IntoIterator<Item = &'a PathBuf>) -> Vec<PathBuf> {
    paths
        .into_iter()
        .filter(|p| p.symlink_metadata().is_ok())
        .cloned()
        .collect()
}

/// A read-only root: the same symlink when it is one, else an optional read-only bind.
fn bind_or_link(root: &Path) -> MountOp {
    match std::fs::read_link(root) {
        Ok(target) => MountOp::Symlink {
            path: root.to_path_buf(),
            target,
        },
        Err(_) => MountOp::Bind {
            path: root.to_path_buf(),
            rw: false,
            optional: true,
        },
    }
}

/// Binds each ancestor of `path` strictly below `root` onto itself (once), so none can be
/// renamed or replaced during the run.
fn pin_ancestors(path: &Path, root: &Path, ops: &mut Vec<MountOp>) {
    for ancestor in path.ancestors().skip(1) {
        if ancestor == root || !is_under(ancestor, root) {
            break;
        }
        let pin = MountOp::Bind {
            path: ancestor.to_path_buf(),
            rw: true,
            optional: false,
        };
        if !ops.contains(&pin) {
            ops.push(pin);
        }
    }
}

/// Every ancestor of a protected path below its writable root is pinned (bound onto itself, so
/// it cannot be renamed or replaced), and the protected path itself is bound read-only.
fn protected_mounts(profile: &Profile) -> Vec<MountOp> {
    let mut ops = Vec::new();
    for path in &profile.protected {
        let Some(root) = profile.writable_roots().find(|r| is_under(path, r)) else {
            continue;
        };
        pin_ancestors(path, root, &mut ops);
        ops.push(MountOp::Bind {
            path: path.clone(),
            rw: false,
            optional: false,
        });
    }
    ops
}

/// Denied paths a child could otherwise create or swap inside a writable root (the namespace
/// backends), with that root: every denied path below the innermost existing writable root
/// holding it, unless a deeper read-only root or protected path covers it (nothing can be
/// created there), another denied path above it hides it, or it exists as something other
/// than a directory (a file is masked as before). An existing denied directory is guarded too:
/// it may be another run's placeholder, which must not be removed while this run masks it. A
/// chain through a symlink is guarded only when the denied path is missing (the helper then
/// refuses the symlink); an existing one is masked as before.
pub fn guarded_denied(profile: &Profile) -> Vec<(&Path, &Path)> {
    let mut out = Vec::new();
    for denied in &profile.denied {
        let Some(root) = profile
            .writable_roots()
            .filter(|r| is_under(denied, r) && *r != denied && r.is_dir())
            .max_by_key(|r| depth(r))
        else {
            continue;
        };
        let covered = profile
            .read_only
            .iter()
            .filter(|r| r.symlink_metadata().is_ok())
            .chain(&profile.protected)
            .any(|r| is_under(denied, r) && depth(r) > depth(root));
        let hidden = profile
            .denied
            .iter()
            .any(|d| d != denied && is_under(denied, d));
        if covered || hidden {
            continue;
        }
        let chain: Vec<&Path> = denied
            .ancestors()
            .take_while(|a| *a != root.as_path())
            .collect();
        let kinds: Vec<Option<std::fs::FileType>> = chain
            .iter()
            .map(|p| p.symlink_metadata().ok().map(|m| m.file_type()))
            .collect();
        let leaf_missing = kinds[0].is_none();
        let through_link = kinds.iter().flatten().any(|k| k.is_symlink());
        let non_dir = kinds[1..]
            .iter()
            .flatten()
            .any(|k| !k.is_dir() && !k.is_symlink())
            || kinds[0].is_some_and(|k| !k.is_dir());
        if non_dir || (through_link && !leaf_missing) {
            continue;
        }
        out.push((root.as_path(), denied.as_path()));
    }
    out
}

/// For each guarded denied path: its ancestors below the writable root pinned (bound onto
/// themselves, so no parent can be renamed away and recreated without the mask), and the path
/// itself masked with an empty read-only tmpfs when it does not exist yet (the helper creates
/// it as a directory first). An existing one is masked by [`masks`].
fn denied_mounts(profile: &Profile) -> Vec<MountOp> {
    let mut ops = Vec::new();
    for (root, denied) in guarded_denied(profile) {
        pin_ancestors(denied, root, &mut ops);
        if denied.symlink_metadata().is_err() {
            ops.push(MountOp::MaskDir {
                path: denied.to_path_buf(),
            });
        }
    }
    ops
}

fn masks(profile: &Profile, ops: &[MountOp], unowned: &[PathBuf]) -> Vec<MountOp> {
    let visible = |p: &Path| {
        ops.iter()
            .any(|op| matches!(op, MountOp::Bind { path, .. } if is_under(p, path)))
    };
    let etc_unowned = unowned.iter().any(|u| u == Path::new("/etc"));
    let private: &[PathBuf] = if etc_unowned { &[] } else { etc_private() };
    let toolchains: Vec<PathBuf> = if nix::unistd::geteuid().is_root() {
        toolchain_roots(profile)
            .iter()
            .filter(|t| !unowned.contains(t))
            .flat_map(|t| toolchain_private(t))
            .collect()
    } else {
        Vec::new()
    };
    let mut seen = std::collections::HashSet::new();
    let all: Vec<MountOp> = profile
        .denied
        .iter()
        .chain(private.iter())
        .chain(toolchains.iter())
        .filter(|p| seen.insert(*p))
        .filter(|p| visible(p))
        .filter_map(|p| match p.symlink_metadata() {
            Ok(m) if m.is_dir() => Some(MountOp::MaskDir { path: p.clone() }),
            Ok(_) => Some(MountOp::MaskFile { path: p.clone() }),
            Err(_) => None,
        })
        .collect();
    // A path below a masked directory is already hidden (the mask is an empty tmpfs), and a
    // mount on it would need a mount point created inside that read-only tmpfs (bwrap fails
    // with "Can't mkdir ...: Read-only file system").
    let hidden_dirs: Vec<PathBuf> = all
        .iter()
        .filter_map(|op| match op {
            MountOp::MaskDir { path } => Some(path.clone()),
            _ => None,
        })
        .collect();
    all.into_iter()
        .filter(|op| {
            !hidden_dirs
                .iter()
                .any(|d| op.path() != d && op.path().starts_with(d))
        })
        .collect()
}

/// Everything under `/etc` that is not world-readable (keys, credentials): root inside the
/// sandbox would still own it, so it is masked like an explicit secret. Cached per process.
pub fn etc_private() -> &'static [PathBuf] {
    static CACHE: std::sync::OnceLock<Vec<PathBuf>> = std::sync::OnceLock::new();
    CACHE.get_or_init(|| private_files(Path::new("/etc")))
}

/// Files and directories under `dir` that others may not read (not cached).
pub fn private_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    walk_private(dir, &mut out, 0);
    out
}

fn walk_private(dir: &Path, out: &mut Vec<PathBuf>, depth: usize) {
    use std::os::unix::fs::PermissionsExt;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        // The type comes with the entry (no stat for the many links of /etc); the mode from a
        // stat relative to the directory already open, not a lookup from `/`.
        if e.file_type().is_ok_and(|t| t.is_symlink()) {
            continue;
        }
        let Ok(meta) = e.metadata() else {
            continue;
        };
        let mode = meta.permissions().mode();
        if meta.file_type().is_symlink() {
            continue;
        }
        if meta.is_dir() {
            if mode & 0o005 != 0o005 {
                out.push(e.path());
            } else if depth < 8 {
                walk_private(&e.path(), out, depth + 1);
            }
        } else if mode & 0o004 == 0 {
            out.push(e.path());
        }
    }
}

/// Files of `/proc` that only root may read (`kpageflags`, `slabinfo`, `timer_list`,
/// `vmallocinfo`, `kmsg`, ... at the top; `kernel/cad_pid`, `vm/mmap_rnd_bits`, ... in
/// `/proc/sys`, and with `net` the host network's, `net/ipv4/tcp_fastopen_key`, ...): a child
/// running as uid 0 would read them. Top-level entries that are not process directories and
/// the `/proc/sys` tree, by mode: readable by their owner, not by others (write-only triggers
/// such as `drop_caches` are left alone, `/proc/sys` is read-only). Scanned once per process
/// (the set is the kernel's): about 380 entries, and 1100 more for `net`.
pub fn proc_private(net: bool) -> Vec<PathBuf> {
    static BASE: std::sync::OnceLock<Vec<PathBuf>> = std::sync::OnceLock::new();
    static NET: std::sync::OnceLock<Vec<PathBuf>> = std::sync::OnceLock::new();
    let mut out = BASE
        .get_or_init(|| {
            let mut out = Vec::new();
            walk_proc(Path::new("/proc"), &mut out, 0);
            out
        })
        .clone();
    if net {
        out.extend_from_slice(NET.get_or_init(|| {
            let mut out = Vec::new();
            walk_proc(Path::new("/proc/sys/net"), &mut out, 2);
            out
        }));
    }
    out
}

fn walk_proc(dir: &Path, out: &mut Vec<PathBuf>, depth: usize) {
    use std::os::unix::fs::PermissionsExt;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let name = name.as_encoded_bytes();
        if depth == 0 && name.iter().all(u8::is_ascii_digit) {
            continue; // a process directory
        }
        let Ok(kind) = e.file_type() else { continue };
        if kind.is_symlink() {
            continue;
        }
        let Ok(meta) = e.metadata() else { continue };
        let mode = meta.permissions().mode();
        if kind.is_dir() {
            if mode & 0o005 != 0o005 && mode & 0o500 != 0 {
                out.push(e.path());
            } else if (depth == 0 && name == b"sys")
                || (depth == 1 && name != b"net")
                || (depth > 1 && depth < 8)
            {
                walk_proc(&e.path(), out, depth + 1);
            }
        } else if mode & 0o004 == 0 && mode & 0o444 != 0 {
            out.push(e.path());
        }
    }
}

/// Paths that must not appear during a run (they would redirect git's hooks and config to
/// files the child controls); the helper removes them once the tree is gone.
pub fn scrub_list(profile: &Profile) -> Vec<PathBuf> {
    let commondir = profile.workspace.join(".git/commondir");
    if commondir.symlink_metadata().is_ok() {
        Vec::new()
    } else {
        vec![commondir]
    }
}

/// Protected paths that do not exist yet (parents are created as directories too), then each
/// guarded denied path with the directories above it (see [`guarded_denied`]).
pub fn placeholders(profile: &Profile) -> Vec<Placeholder> {
    placeholders_with(profile, &[])
}

/// Like [`placeholders`], with the kinds known from the git config.
fn placeholders_with(profile: &Profile, known: &[crate::gitconfig::Target]) -> Vec<Placeholder> {
    let mut out: Vec<Placeholder> = Vec::new();
    for path in &profile.protected {
        let Some(root) = profile.writable_roots().find(|r| is_under(path, r)) else {
            continue;
        };
        let mut chain: Vec<&Path> = path
            .ancestors()
            .take_while(|a| *a != root.as_path())
            .collect();
        chain.reverse();
        for p in chain {
            if p.symlink_metadata().is_err() {
                let known_dir = known.iter().find(|t| t.path == p).map(|t| t.dir);
                let dir = p != path.as_path() || known_dir.unwrap_or_else(|| guess_dir(p));
                let ph = Placeholder {
                    path: p.to_path_buf(),
                    dir,
                    denied: false,
                };
                if !out.contains(&ph) {
                    out.push(ph);
                }
            }
        }
    }
    // A missing denied path is always a directory: nothing can be created at its name or in
    // it (the mask is an empty read-only tmpfs), whatever the name (`.ssh` or `.netrc`).
    for (root, denied) in guarded_denied(profile) {
        let mut chain: Vec<&Path> = denied.ancestors().take_while(|a| *a != root).collect();
        chain.reverse();
        for p in chain {
            if !out.iter().any(|ph| ph.path == p) {
                out.push(Placeholder {
                    path: p.to_path_buf(),
                    dir: true,
                    denied: true,
                });
            }
        }
    }
    out
}

/// A missing protected leaf is a file when its name looks like one (`config`, `*.toml`), else
/// a directory (`hooks`).
fn guess_dir(p: &Path) -> bool {
    let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
    !(name == "config" || name.contains('.'))
}

fn landlock(profile: &Profile, namespaced: bool, home: &Path, tmp: &Path) -> LandlockPlan {
    let mut write: Vec<PathBuf> = profile.writable_roots().cloned().collect();
    let read = if namespaced {
        // The new root holds only what may be seen (the read-only roots, the private HOME and
        // /tmp, the writable roots, /dev, /proc; denied paths masked by mounts), so listing
        // and reading it is harmless. Landlock grants a right held on any directory above a
        // file, across mount points, so this one rule covers every root mounted beneath it:
        // a rule per root would repeat it (each costs an open, two fstat and an add_rule).
        write.push(home.to_path_buf());
        write.push(tmp.to_path_buf());
        vec![PathBuf::from("/")]
    } else {
        // The helper opens rule paths refusing every symlink on the way, so name each root by
        // its real path (a home under a symlinked /home keeps its rules).
        let read = existing(&profile.read_only)
            .into_iter()
            .filter(|p| std::fs::read_link(p).is_err())
            .collect();
        let read = canonical(read);
        write = canonical(write);
        // Without a new root nothing masks the denied paths: Landlock must leave them out of
        // every rule. Root owns /etc's root-only files (TLS keys, database auth): those too.
        let mut hidden = profile.denied.clone();
        hidden.extend(canonical(profile.denied.clone()));
        if nix::unistd::geteuid().is_root() {
            hidden.extend(etc_private().iter().cloned());
            for toolchain in toolchain_roots(profile) {
                let private = toolchain_private(&toolchain);
                hidden.extend(canonical(private.clone()));
                hidden.extend(private);
            }
        }
        let mut read = subtract(read, &hidden);
        // A writable root holding a denied path (a workspace with `.ssh` in it) is carved the
        // same way: its entries get the rights, the denied path gets none. Trade-off, fail
        // closed: a Landlock right on a directory covers everything beneath it, so the root
        // itself keeps no rights of its own — nothing can be listed, created, removed or
        // renamed directly in it (its existing entries stay fully usable); the same holds
        // for every directory between the root and the denied path.
        write = subtract(write, &hidden);
        read.push(PathBuf::from("/proc"));
        if let Some(scratch) = home.parent() {
            write.push(scratch.to_path_buf());
        }
        read
    };
    let devices = if namespaced {
        vec![PathBuf::from("/dev")]
    } else {
        [
            "/dev/null",
            "/dev/zero",
            "/dev/full",
            "/dev/random",
            "/dev/urandom",
            "/dev/ptmx", // new ptys; their slaves come from the supervisor (notify/pty.rs)
        ]
        .iter()
        .map(PathBuf::from)
        .collect()
    };
    LandlockPlan {
        read,
        write,
        devices,
        deny_network: profile.network == Network::Deny,
        no_symlinks: !namespaced,
        proc_hidden: Vec::new(),
    }
}

/// Each path by its real path (symlinks resolved), or as given when it cannot be resolved.
fn canonical(paths: Vec<PathBuf>) -> Vec<PathBuf> {
    paths
        .into_iter()
        .map(|p| std::fs::canonicalize(&p).unwrap_or(p))
        .collect()
}

/// Replaces every root that contains a denied path by its children, recursively, leaving the
/// denied paths out (Landlock is an allow-list by hierarchy). Children that are symlinks are
/// left out too: a rule is opened through the link and would land on its target (a link
/// planted in a workspace could point at the denied path itself); a path through a link to an
/// allowed place still resolves to that place's own rule.
pub fn subtract(roots: Vec<PathBuf>, denied: &[PathBuf]) -> Vec<PathBuf> {
    // Paths are compared as bytes, normalized (`.` and repeated or trailing `/` gone): then a
    // byte prefix that ends at a `/` is what `Path::starts_with` tests component by component,
    // at a fraction of the cost for the hundreds of `/etc` entries against every hidden path.
    let normalized = |p: &Path| p.components().collect::<PathBuf>();
    let denied: Vec<PathBuf> = denied.iter().map(|d| normalized(d)).collect();
    let mut out = Vec::new();
    for root in roots {
        subtract_normalized(normalized(&root), &denied, &mut out);
    }
    out
}

/// [`subtract`] of one normalized root (a directory entry joined to one is normalized too).
fn subtract_normalized(root: PathBuf, denied: &[PathBuf], out: &mut Vec<PathBuf>) {
    use std::os::unix::ffi::OsStrExt;
    let key = root.as_os_str().as_bytes();
    let under = |path: &Path| {
        let path = path.as_os_str().as_bytes();
        path.starts_with(key)
            && (path.len() == key.len() || key.ends_with(b"/") || path[key.len()] == b'/')
    };
    if denied.iter().any(|d| d.as_os_str().as_bytes() == key) {
        return;
    }
    if !denied.iter().any(|d| under(d)) {
        out.push(root);
        return;
    }
    let Ok(entries) = std::fs::read_dir(&root) else {
        return;
    };
    for e in entries.flatten() {
        if e.file_type().is_ok_and(|t| !t.is_symlink()) {
            subtract_normalized(e.path(), denied, out);
        }
    }
}

/// PATH, LANG, TERM, a private HOME and TMPDIR, pass-through names, explicit values.
pub fn environment(profile: &Profile, home: &Path, tmp: &Path) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = Vec::new();
    let mut set = |k: &str, v: OsString| {
        env.retain(|(name, _)| name != k);
        env.push((k.into(), v));
    };
    set("PATH", path_var().into());
    set(
        "LANG",
        std::env::var_os("LANG").unwrap_or_else(|| "C.UTF-8".into()),
    );
    set(
        "TERM",
        std::env::var_os("TERM").unwrap_or_else(|| "dumb".into()),
    );
    set("HOME", home.into());
    set("TMPDIR", tmp.into());
    if let Some(real_home) = home_dir() {
        let rustup = real_home.join(".rustup");
        if rustup.is_dir() {
            set("RUSTUP_HOME", rustup.into());
        }
    }
    for name in &profile.env.pass {
        if let Some(v) = std::env::var_os(name) {
            set(name, v);
        }
    }
    for (k, v) in &profile.env.set {
        set(k, v.into());
    }
    env
}

fn path_var() -> String {
    let mut dirs: Vec<String> = Vec::new();
    if let Some(home) = home_dir() {
        let cargo = home.join(".cargo/bin");
        if cargo.is_dir() {
            dirs.push(cargo.display().to_string());
        }
    }
    let base = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
    dirs.push(base.to_string());
    dirs.join(":")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch directory outside any git repository (and outside `/tmp`).
    fn scratch() -> tempfile::TempDir {
        tempfile::Builder::new()
            .prefix("zc-plan-")
            .tempdir_in("/var/tmp")
            .unwrap()
    }

    fn ws() -> (tempfile::TempDir, Profile) {
        let dir = scratch();
        let p = Profile::for_workspace(dir.path());
        (dir, p)
    }

    #[test]
    fn parents_are_mounted_before_children() {
        let (_d, p) = ws();
        let ops = mounts(&p, Path::new("/root"));
        let depths: Vec<usize> = ops.iter().map(|o| depth(o.path())).collect();
        let mut sorted = depths.clone();
        sorted.sort();
        assert_eq!(depths, sorted);
    }

    #[test]
    fn workspace_is_bound_writable_and_system_read_only() {
        let (_d, p) = ws();
        let ops = mounts(&p, Path::new("/root"));
        assert!(ops.contains(&MountOp::Bind {
            path: p.workspace.clone(),
            rw: true,
            optional: false
        }));
        assert!(ops.contains(&MountOp::Bind {
            path: "/usr".into(),
            rw: false,
            optional: true
        }));
        assert!(ops.contains(&MountOp::Tmpfs {
            path: "/tmp".into(),
            mode: 0o1777
        }));
    }

    #[test]
    fn namespaced_ruleset_reads_through_one_rule_on_the_new_root() {
        let (_d, p) = ws();
        for backend in [Backend::Namespaces, Backend::Bubblewrap] {
            let plan = build(backend, &p, vec!["true".into()], None);
            let ll = &plan.landlock;
            assert_eq!(ll.read, [PathBuf::from("/")], "{backend:?}");
            assert!(ll.write.contains(&p.workspace), "{backend:?}");
            assert!(ll.write.contains(&PathBuf::from("/tmp")), "{backend:?}");
            assert_eq!(ll.devices, [PathBuf::from("/dev")], "{backend:?}");
            assert!(!ll.no_symlinks, "{backend:?}");
        }
    }

    #[test]
    fn git_dir_is_pinned_and_hooks_bound_read_only() {
        let (_d, p) = ws();
        let ops = mounts(&p, Path::new("/root"));
        let git = p.workspace.join(".git");
        assert!(ops.contains(&MountOp::Bind {
            path: git.clone(),
            rw: true,
            optional: false
        }));
        assert!(ops.contains(&MountOp::Bind {
            path: git.join("hooks"),
            rw: false,
            optional: false
        }));
        assert!(ops.contains(&MountOp::Bind {
            path: git.join("config"),
            rw: false,
            optional: false
        }));
    }

    #[test]
    fn only_read_only_roots_may_vanish_before_mounting() {
        let (_d, p) = ws();
        let extra = scratch();
        let extra = crate::profile::absolute(extra.path());
        let (ro, rw) = (extra.join("ro"), extra.join("rw"));
        std::fs::create_dir(&ro).unwrap();
        std::fs::create_dir(&rw).unwrap();
        let p = p.allow_read(&ro).allow_write(&rw);
        let ops = mounts(&p, Path::new("/root"));
        let optional = |path: &Path| {
            ops.iter().find_map(|op| match op {
                MountOp::Bind {
                    path: at, optional, ..
                } if at == path => Some(*optional),
                _ => None,
            })
        };
        assert_eq!(optional(&ro), Some(true));
        assert_eq!(optional(&rw), Some(false));
        assert_eq!(optional(&p.workspace), Some(false));
        assert_eq!(optional(&p.workspace.join(".git/hooks")), Some(false));
    }

    #[test]
    fn a_denied_path_inside_a_masked_directory_is_not_masked_again() {
        let (_d, p) = ws();
        let dir = scratch();
        let data = crate::profile::absolute(dir.path());
        let outer = data.join("secret");
        std::fs::create_dir_all(outer.join("sub")).unwrap();
        std::fs::write(outer.join("key"), "").unwrap();
        std::fs::write(data.join("token"), "").unwrap();
        let p = p
            .allow_read(&data)
            .deny(outer.join("sub"))
            .deny(&outer)
            .deny(outer.join("key"))
            .deny(data.join("token"));
        let ops = mounts(&p, Path::new("/root"));
        let mut masked: Vec<&Path> = ops
            .iter()
            .filter(|op| matches!(op, MountOp::MaskDir { .. } | MountOp::MaskFile { .. }))
            .map(MountOp::path)
            .filter(|m| m.starts_with(&data))
            .collect();
        masked.sort();
        assert_eq!(masked, vec![outer.as_path(), &data.join("token")]);
        assert!(ops.contains(&MountOp::MaskDir { path: outer }));
    }

    #[test]
    fn missing_git_gets_placeholders_dir_hooks_file_config() {
        let (_d, p) = ws();
        let ph = placeholders(&p);
        let git = p.workspace.join(".git");
        assert!(ph.contains(&Placeholder {
            path: git.clone(),
            dir: true,
            denied: false
        }));
        assert!(ph.contains(&Placeholder {
            path: git.join("hooks"),
            dir: true,
            denied: false
        }));
        assert!(ph.contains(&Placeholder {
            path: git.join("config"),
            dir: false,
            denied: false
        }));
    }

    /// Denied paths missing from a writable root get directory placeholders (parents first,
    /// a file-like name too) and an empty read-only mask, their parents a pin; one missing
    /// from a read-only root gets neither (nothing can be created there).
    #[test]
    fn missing_denied_paths_in_a_writable_root_get_placeholders_pins_and_masks() {
        let (_d, p) = ws();
        let ws = p.workspace.clone();
        let ro = scratch();
        let ro = crate::profile::absolute(ro.path());
        let (ssh, netrc, cargo) = (ws.join(".ssh"), ws.join(".netrc"), ws.join(".cargo"));
        let creds = cargo.join("credentials.toml");
        let p = p
            .allow_read(&ro)
            .deny(&ssh)
            .deny(&netrc)
            .deny(&creds)
            .deny(ro.join(".ssh"));
        let plan = build(Backend::Namespaces, &p, vec!["true".into()], None);
        let guarded: Vec<&Path> = plan
            .placeholders
            .iter()
            .filter(|ph| ph.denied)
            .inspect(|ph| assert!(ph.dir, "{ph:?}"))
            .map(|ph| ph.path.as_path())
            .collect();
        assert_eq!(guarded, [ssh.as_path(), &netrc, &cargo, &creds]);
        for masked in [&ssh, &netrc, &creds] {
            assert!(
                plan.mounts.contains(&MountOp::MaskDir {
                    path: masked.clone()
                }),
                "{masked:?} not masked: {:?}",
                plan.mounts
            );
        }
        assert!(plan.mounts.contains(&MountOp::Bind {
            path: cargo.clone(),
            rw: true,
            optional: false
        }));
        let depths: Vec<usize> = plan.mounts.iter().map(|o| depth(o.path())).collect();
        assert!(depths.is_sorted());
        assert!(
            !plan
                .mounts
                .iter()
                .any(|op| op.path().starts_with(&ro) && op.path() != ro)
        );
        assert!(!plan.placeholders.iter().any(|ph| ph.path.starts_with(&ro)));
        // The Landlock-only rung carves instead: nothing is created.
        let plan = build(
            Backend::Landlock,
            &p,
            vec!["true".into()],
            Some("/s".into()),
        );
        assert!(plan.placeholders.is_empty());
    }

    /// An existing denied directory in a writable root is held too (it may be another run's
    /// placeholder); an existing denied file is masked as before, and a path below another
    /// denied path is left to that one's mask.
    #[test]
    fn existing_denied_directories_are_held_files_and_nested_paths_are_not() {
        let (_d, p) = ws();
        let ws = p.workspace.clone();
        std::fs::create_dir(ws.join(".aws")).unwrap();
        std::fs::write(ws.join(".npmrc"), "").unwrap();
        let p = p
            .deny(ws.join(".aws"))
            .deny(ws.join(".npmrc"))
            .deny(ws.join(".aws/credentials"));
        let guarded: Vec<PathBuf> = placeholders(&p)
            .into_iter()
            .filter(|ph| ph.denied)
            .map(|ph| ph.path)
            .collect();
        assert_eq!(guarded, [ws.join(".aws")]);
        let ops = mounts(&p, Path::new("/root"));
        assert!(ops.contains(&MountOp::MaskDir {
            path: ws.join(".aws")
        }));
        assert!(ops.contains(&MountOp::MaskFile {
            path: ws.join(".npmrc")
        }));
        assert!(
            !ops.iter()
                .any(|op| op.path() == ws.join(".aws/credentials"))
        );
    }

    #[test]
    fn etc_shadow_is_masked_when_present() {
        let (_d, p) = ws();
        let ops = mounts(&p, Path::new("/root"));
        if Path::new("/etc/shadow").exists() {
            assert!(ops.contains(&MountOp::MaskFile {
                path: "/etc/shadow".into()
            }));
        }
    }

    /// The root-only files of `/proc` are found by mode, the world-readable ones are not, and
    /// the host's `/proc/sys/net` only when asked for.
    #[test]
    fn proc_private_lists_root_only_proc_files() {
        let base = proc_private(false);
        for f in [
            "/proc/kpageflags",
            "/proc/slabinfo",
            "/proc/sys/kernel/cad_pid",
        ] {
            if Path::new(f).exists() {
                assert!(base.contains(&PathBuf::from(f)), "{f} missing: {base:?}");
            }
        }
        for f in ["/proc/cpuinfo", "/proc/meminfo", "/proc/sys/kernel/ostype"] {
            assert!(!base.contains(&PathBuf::from(f)), "{f} listed");
        }
        assert!(!base.iter().any(|p| p.starts_with("/proc/sys/net")));
        assert!(
            base.iter().all(|p| !p
                .strip_prefix("/proc")
                .unwrap()
                .components()
                .next()
                .is_some_and(|c| c
                    .as_os_str()
                    .as_encoded_bytes()
                    .iter()
                    .all(u8::is_ascii_digit))),
            "a process directory listed: {base:?}"
        );
        let with_net = proc_private(true);
        assert!(with_net.len() >= base.len());
    }

    #[test]
    fn subtract_leaves_out_symlinks_beside_the_denied_path() {
        let d = scratch();
        let d = d.path();
        std::fs::create_dir(d.join("secret")).unwrap();
        std::fs::write(d.join("a"), "").unwrap();
        std::os::unix::fs::symlink(d.join("secret"), d.join("link")).unwrap();
        std::os::unix::fs::symlink("/etc", d.join("etc-link")).unwrap();
        let out = subtract(vec![d.into()], &[d.join("secret")]);
        assert_eq!(out, vec![d.join("a")]);
    }

    #[test]
    fn landlock_only_plan_carves_denied_paths_out_of_writable_roots() {
        let (d, p) = ws();
        let ws = p.workspace.clone();
        let ssh = ws.join(".ssh");
        std::fs::create_dir_all(ssh.join("keys")).unwrap();
        std::fs::create_dir(ws.join("src")).unwrap();
        std::fs::write(ws.join("README"), "").unwrap();
        let out = scratch();
        let out_dir = crate::profile::absolute(out.path());
        std::fs::create_dir(out_dir.join("cache")).unwrap();
        let p = p
            .deny(&ssh)
            .allow_write(&out_dir)
            .deny(out_dir.join("cache/secret"));
        let plan = build(
            Backend::Landlock,
            &p,
            vec!["true".into()],
            Some("/s".into()),
        );
        let write = &plan.landlock.write;
        for granted in [ws.join("src"), ws.join("README"), PathBuf::from("/s")] {
            assert!(
                write.contains(&granted),
                "{granted:?} missing from {write:?}"
            );
        }
        for denied in [
            &ws,
            &ssh,
            &ssh.join("keys"),
            &out_dir,
            &out_dir.join("cache"),
        ] {
            assert!(
                !write.iter().chain(&plan.landlock.read).any(|w| w == denied),
                "{denied:?} granted: {write:?}"
            );
        }
        assert!(!write.iter().any(|w| w.starts_with(&ssh)));
        // The namespace backends mask instead: their Landlock stage keeps the whole root.
        let plan = build(Backend::Namespaces, &p, vec!["true".into()], None);
        assert!(plan.landlock.write.contains(&ws));
        assert!(plan.mounts.contains(&MountOp::MaskDir { path: ssh }));
        drop(d);
    }

    #[test]
    fn subtract_compares_whole_components_however_paths_are_spelled() {
        let d = scratch();
        let d = d.path();
        for dir in ["ssl", "ssl2", "sub"] {
            std::fs::create_dir(d.join(dir)).unwrap();
        }
        for f in ["sub/key", "sub/ok"] {
            std::fs::write(d.join(f), "").unwrap();
        }
        // `ssl` begins the bytes of the denied `ssl2`, not its components: it stays whole.
        let denied = [d.join("ssl2/"), d.join("./sub//key")];
        let mut out = subtract(vec![d.join(".")], &denied);
        out.sort();
        assert_eq!(out, vec![d.join("ssl"), d.join("sub/ok")]);
        let from_root = subtract(vec!["/".into()], &denied);
        assert!(from_root.contains(&PathBuf::from("/usr")), "{from_root:?}");
        assert!(from_root.contains(&d.join("ssl")), "{from_root:?}");
        assert!(
            !from_root.iter().any(|p| d.join("ssl2").starts_with(p)),
            "{from_root:?}"
        );
    }

    #[test]
    fn subtract_expands_a_root_around_the_denied_path() {
        let d = tempfile::tempdir().unwrap();
        for f in ["a", "b", "secret"] {
            std::fs::write(d.path().join(f), "").unwrap();
        }
        let out = subtract(vec![d.path().into()], &[d.path().join("secret")]);
        assert_eq!(out.len(), 2);
        assert!(!out.contains(&d.path().join("secret")));
        let untouched = subtract(vec!["/usr".into()], &[d.path().join("secret")]);
        assert_eq!(untouched, vec![PathBuf::from("/usr")]);
    }

    #[test]
    fn environment_is_an_allowlist() {
        let (_d, p) = ws();
        let p = p.set_env("FOO", "bar");
        let env = environment(&p, Path::new("/h"), Path::new("/t"));
        let names: Vec<_> = env.iter().map(|(k, _)| k.to_str().unwrap()).collect();
        for n in &names {
            assert!(
                [
                    "PATH",
                    "LANG",
                    "TERM",
                    "HOME",
                    "TMPDIR",
                    "RUSTUP_HOME",
                    "FOO"
                ]
                .contains(n),
                "{n}"
            );
        }
        assert!(env.contains(&("HOME".into(), "/h".into())));
        assert!(env.contains(&("FOO".into(), "bar".into())));
    }

    #[test]
    fn landlock_only_plan_supervises_attributes_and_uses_scratch() {
        let (_d, p) = ws();
        let plan = build(
            Backend::Landlock,
            &p,
            vec!["true".into()],
            Some("/s".into()),
        );
        assert!(plan.seccomp.deny_attr_changes);
        assert!(plan.mounts.is_empty());
        assert!(plan.landlock.write.contains(&PathBuf::from("/s")));
        assert!(plan.env.contains(&("HOME".into(), "/s/home".into())));
        assert!(!plan.landlock.read.contains(&PathBuf::from("/etc")));
    }
}
