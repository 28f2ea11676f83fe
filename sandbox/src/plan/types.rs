//! The plan's data: what the helper receives, sent as JSON.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::sections::{BwrapPlan, EgressPlan, HomePlan, ProcessPlan, ProxyPorts};
use crate::backend::Backend;

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
    /// A read-only file holding `contents` over the file at `path` (the namespace backend's
    /// transparent egress: the child's `/etc/hosts` and `/etc/resolv.conf`); skipped when
    /// nothing is at `path` to cover.
    File {
        /// The covered file.
        path: PathBuf,
        /// What the child reads there.
        contents: String,
    },
    /// The workspace root as a writable overlay of itself (the transactional workspace, see
    /// [`crate::layer`]): the host's directory `path` is the lower layer, `dir`'s `upper/`
    /// and `work/` the call's private layer; the writable binds planned below `path` become
    /// [`MountOp::Pin`]s, so their writes land through it too.
    Layer {
        /// The workspace root, also the path inside.
        path: PathBuf,
        /// The call's layer directory ([`crate::layer::create`] makes it in the helper).
        dir: PathBuf,
    },
    /// A directory below a layered workspace bound onto itself from the overlay (a protected
    /// or denied path's ancestors, `plan::layer`): its writes stay in the call's layer, and
    /// it cannot be renamed or removed while the call runs (EBUSY), as a pin of the host's
    /// directory cannot in a workspace without a layer.
    Pin {
        /// The pinned directory, inside the workspace.
        path: PathBuf,
    },
    /// Bind the host directory `src` read-write at `path` (another place): a persistent
    /// directory of the HOME (`home_binds.rs`). Both exist before mounting.
    BindDir {
        /// Host directory.
        src: PathBuf,
        /// Where it appears inside.
        path: PathBuf,
    },
    /// A repository's private stage (see `crate::git::stage`): the host directory `src`,
    /// inside the git directory `path`, bound read-write at `path`; validated and applied
    /// once the call's tree is gone. Declared as such, so that every part of the plan finds
    /// a call's stages by their kind. Both exist before mounting.
    Stage {
        /// The stage directory (`<git>/.zeroclaw-stage-<id>`).
        src: PathBuf,
        /// The git directory it stands in for.
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
            | MountOp::MaskDir { path }
            | MountOp::File { path, .. }
            | MountOp::BindDir { path, .. }
            | MountOp::Stage { path, .. }
            | MountOp::Layer { path, .. }
            | MountOp::Pin { path } => path,
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

/// The first Landlock ABI with TCP rules (`LANDLOCK_ACCESS_NET_CONNECT_TCP`, `BIND_TCP`):
/// what `network = proxy` on the Landlock-only rung needs.
pub const LANDLOCK_NET_ABI: u32 = 4;

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
    /// With `deny_network`, the TCP ports that may still be connected to: the egress proxy's
    /// listeners on the host's loopback (`network = proxy` on the Landlock-only rung, filled
    /// in by the launcher once it bound them; see [`crate::plan::egress`]). Needs ABI >= 4.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub connect_tcp: Vec<u16>,
    /// Open rule paths refusing any symlink on the way (host paths, Landlock-only backend:
    /// a link planted after planning must not move a rule onto its target).
    pub no_symlinks: bool,
    /// Root-only `/proc` files left out of the `/proc` rules (Landlock-only backend started
    /// by root; see [`proc_private`](super::proc_private)).
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
    /// `network = proxy` on the Landlock-only rung (no network namespace): IP sockets are TCP
    /// streams only (no UDP, raw, packet or other family but `AF_UNIX`), no `MSG_FASTOPEN`
    /// send (an implicit connect), and the supervisor connects them only to 127.0.0.1 at
    /// these ports (filled in by the launcher once it bound them).
    #[serde(default)]
    pub proxy_only: Option<ProxyPorts>,
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
    /// outside its bulk: see [`toolchain_private`](super::toolchain_private)); with this, the launcher needs no scan.
    pub unowned: Vec<PathBuf>,
    /// Root-only files of `/proc` masked once the new `/proc` is mounted (namespace backends
    /// started by root, whose child is uid 0; see [`proc_private`](super::proc_private)).
    #[serde(default)]
    pub proc_masks: Vec<PathBuf>,
    /// Placeholders to create (and, for denied paths, lock) before mounting.
    pub placeholders: Vec<Placeholder>,
    /// Protected paths (for backends that express them directly, like Seatbelt).
    pub protected: Vec<PathBuf>,
    /// Denied paths (likewise).
    pub denied: Vec<PathBuf>,
    /// Paths removed after the run if they appeared (see [`scrub_list`](super::scrub_list)).
    pub scrub: Vec<PathBuf>,
    /// Landlock rules.
    pub landlock: LandlockPlan,
    /// Seccomp switches.
    pub seccomp: SeccompPlan,
    /// Accept a partially enforced Landlock ruleset.
    pub allow_partial: bool,
    /// The child's network and the egress proxy.
    pub egress: EgressPlan,
    /// Resource limits, umask and per-user counts.
    pub process: ProcessPlan,
    /// The private HOME's scratch directory, links and git configuration.
    pub home: HomePlan,
    /// bubblewrap's executable and switches (bubblewrap backend).
    pub bwrap: Option<BwrapPlan>,
    /// The plan's shape ([`super::shape::digest`]), recorded by the planner once the plan is
    /// whole: the launcher gives a call the warm helper prepared for the same shape. (The
    /// init of that helper compares the shapes themselves, not this field.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<[u8; 32]>,
    /// pid of the launcher, so the helper notices if it died before `PR_SET_PDEATHSIG`.
    pub launcher_pid: u32,
    /// A warm helper's (see [`crate::warm`]): the init waits on [`crate::wire::GO_FD`] for
    /// the call's plan and stdio once the root is built; `None` for a call's own plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warm: Option<WarmPlan>,
}

/// What a warm helper builds before its call arrives, decided once by the pool that
/// prepares it (`crate::warm`), which the helper and its init execute as given.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WarmPlan {
    /// The root's mounts and placeholders when they differ from the plan's: without its git
    /// stages, made once the call arrives (`helper::git_late`); in a layered workspace the
    /// host's `.git` bound on itself instead (`crate::git::stage::deferred`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deferred: Option<DeferredRoot>,
}

/// A warm helper's root without what waits for its call ([`WarmPlan::deferred`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeferredRoot {
    /// The mounts the root is built with.
    pub mounts: Vec<MountOp>,
    /// The placeholders made and held before it is built.
    pub placeholders: Vec<Placeholder>,
}

impl Plan {
    /// Whether this is a warm helper's plan ([`Plan::warm`]).
    pub fn is_warm(&self) -> bool {
        self.warm.is_some()
    }

    /// The root a warm helper builds before its call arrives, when it is not the plan's
    /// ([`WarmPlan::deferred`]).
    pub fn deferred_root(&self) -> Option<&DeferredRoot> {
        self.warm.as_ref().and_then(|w| w.deferred.as_ref())
    }

    /// The mounts of the root built now: a warm helper's deferred root's, else the plan's.
    pub fn root_mounts(&self) -> &[MountOp] {
        self.deferred_root().map_or(&self.mounts, |d| &d.mounts)
    }

    /// The placeholders made now: a warm helper's deferred root's, else the plan's.
    pub fn root_placeholders(&self) -> &[Placeholder] {
        self.deferred_root()
            .map_or(&self.placeholders, |d| &d.placeholders)
    }

    /// The transactional workspace's `(workspace, layer directory)`, when the call has one
    /// ([`MountOp::Layer`]).
    pub fn layer(&self) -> Option<(&Path, &Path)> {
        self.mounts.iter().find_map(|op| match op {
            MountOp::Layer { path, dir } => Some((path.as_path(), dir.as_path())),
            _ => None,
        })
    }

    /// Bubblewrap started by root: the inner stage seals the read-only roots
    /// ([`BwrapPlan::seal`]).
    pub fn seals_in_bwrap(&self) -> bool {
        self.bwrap.as_ref().is_some_and(|b| b.seal)
    }
}
