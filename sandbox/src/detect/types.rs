//! What the probes found and what the report says: plain data, and the probe source trait.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::backend::{Backend, BackendChoice};

/// Landlock ABI at which every requested right is enforced.
pub const FULL_LANDLOCK_ABI: u32 = 6;

/// One probe's outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Check {
    /// It works.
    pub ok: bool,
    /// What was found, or why it failed.
    pub detail: String,
}

/// Raw probe results.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Probes {
    /// `uname -sr`.
    pub kernel: String,
    /// Landlock ABI version, 0 when unavailable.
    pub landlock_abi: u32,
    /// Seccomp filters available.
    pub seccomp: Check,
    /// Unprivileged (or root) user + mount + pid + net namespaces work.
    pub user_namespaces: Check,
    /// bubblewrap found and a preflight run succeeded.
    pub bubblewrap: Check,
    /// Path of bwrap, when found.
    pub bwrap_path: Option<PathBuf>,
    /// cgroup v2 mounted at /sys/fs/cgroup.
    pub cgroup_v2: Check,
    /// A memory cgroup per execution can be made (root, a writable memory controller): the
    /// bound on the whole execution's memory. Without it only `RLIMIT_DATA` applies.
    pub memory_cgroup: Check,
    /// What can bound a call's process count here (see [`process_limit`]).
    pub process_limit: ProcessLimitProbe,
    /// `/usr/bin/sandbox-exec` present (macOS).
    pub sandbox_exec: Check,
}

/// The facts that decide what bounds a call's process count (the helper's choice in
/// `helper::run`): `RLIMIT_NPROC` binds every uid but 0; for uid 0 the namespaces rung lowers
/// its pid namespace's `pid_max`, and the other rungs (or the namespaces rung on an older
/// kernel) put the call in a pids cgroup.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessLimitProbe {
    /// We run as uid 0, which the kernel exempts from `RLIMIT_NPROC`.
    pub root: bool,
    /// Each pid namespace has its own `pid_max` (Linux 6.14+) and the default limit fits it.
    pub pid_namespace_pid_max: Check,
    /// A pids cgroup (v1 hierarchy or v2 with the pids controller) we can create calls in.
    pub pids_cgroup: Check,
}

/// A backend's availability.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackendStatus {
    /// The backend.
    pub backend: Backend,
    /// Usable in full.
    pub available: bool,
    /// Usable but with a partial Landlock ruleset.
    pub partial: bool,
    /// Why not, and how to fix it (empty when available).
    pub reason: String,
}

/// A guarantee and the mechanism it rests on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Guarantee {
    /// What is guaranteed.
    pub what: String,
    /// Which mechanism enforces it.
    pub mechanism: String,
}

/// The capability report `zeroclaw doctor` prints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    /// What was asked for.
    pub requested: BackendChoice,
    /// Whether partial Landlock enforcement is accepted.
    pub allow_partial: bool,
    /// The backend that will be used, if any.
    pub chosen: Option<Backend>,
    /// Why nothing can be used (when `chosen` is `None`).
    pub error: Option<String>,
    /// Probe results.
    pub probes: Probes,
    /// Every backend, strongest first.
    pub backends: Vec<BackendStatus>,
    /// What the chosen backend guarantees and how.
    pub guarantees: Vec<Guarantee>,
    /// What is missing on this machine and how to fix it.
    pub missing: Vec<String>,
}

/// Probe results, possibly computed lazily (the launcher only probes what its choice needs).
pub trait ProbeSource {
    /// Landlock ABI, 0 when unavailable.
    fn landlock_abi(&self) -> u32;
    /// Seccomp filters.
    fn seccomp(&self) -> Check;
    /// User namespaces really work.
    fn user_namespaces(&self) -> Check;
    /// bubblewrap present and its preflight passes.
    fn bubblewrap(&self) -> Check;
    /// `sandbox-exec` present.
    fn sandbox_exec(&self) -> Check;
}

impl ProbeSource for Probes {
    fn landlock_abi(&self) -> u32 {
        self.landlock_abi
    }
    fn seccomp(&self) -> Check {
        self.seccomp.clone()
    }
    fn user_namespaces(&self) -> Check {
        self.user_namespaces.clone()
    }
    fn bubblewrap(&self) -> Check {
        self.bubblewrap.clone()
    }
    fn sandbox_exec(&self) -> Check {
        self.sandbox_exec.clone()
    }
}
