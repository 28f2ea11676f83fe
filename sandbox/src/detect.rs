//! Probes the machine once (cached): Landlock ABI, seccomp, whether user namespaces really
//! work (a forked child tries them), bubblewrap presence plus a preflight run, cgroup v2, what
//! can bound a call's process count (uid, per-namespace `pid_max`, a writable pids cgroup),
//! `sandbox-exec` on macOS. Chooses the rung of the ladder and explains it as a [`Report`],
//! naming per rung the mechanism that really enforces each limit and what nothing enforces.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::backend::{Backend, BackendChoice, LANDLOCK_RUNG_LIMITS};
use crate::error::SandboxError;

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

/// This machine, each probe run once per process on first use.
pub struct Live;

fn cached(cell: &'static OnceLock<Check>, probe: fn() -> Check) -> Check {
    cell.get_or_init(probe).clone()
}

impl ProbeSource for Live {
    fn landlock_abi(&self) -> u32 {
        static ABI: OnceLock<u32> = OnceLock::new();
        *ABI.get_or_init(landlock_abi)
    }
    fn seccomp(&self) -> Check {
        static C: OnceLock<Check> = OnceLock::new();
        cached(&C, seccomp)
    }
    fn user_namespaces(&self) -> Check {
        static C: OnceLock<Check> = OnceLock::new();
        cached(&C, user_namespaces)
    }
    fn bubblewrap(&self) -> Check {
        static C: OnceLock<Check> = OnceLock::new();
        cached(&C, || bubblewrap(bwrap_path().as_deref()))
    }
    fn sandbox_exec(&self) -> Check {
        static C: OnceLock<Check> = OnceLock::new();
        cached(&C, sandbox_exec)
    }
}

/// This machine, taking a one-shot caller's first confined run as the trial of what that run
/// would otherwise probe first: user namespaces (a forked child) and bwrap's preflight run (a
/// bwrap found on PATH is assumed to work). A failure surfaces as a
/// [`crate::Stage::Namespaces`] or [`crate::Stage::Bubblewrap`] setup error, before the
/// command ran, after which the caller can probe for real ([`Live`]).
pub struct FirstRunTries;

impl ProbeSource for FirstRunTries {
    fn landlock_abi(&self) -> u32 {
        Live.landlock_abi()
    }
    fn seccomp(&self) -> Check {
        Live.seccomp()
    }
    fn user_namespaces(&self) -> Check {
        Check {
            ok: true,
            detail: "assumed; the run itself tries them".into(),
        }
    }
    fn bubblewrap(&self) -> Check {
        match bwrap_path() {
            Some(path) => Check {
                ok: true,
                detail: format!(
                    "{} assumed to work; the run itself tries it",
                    path.display()
                ),
            },
            None => Live.bubblewrap(),
        }
    }
    fn sandbox_exec(&self) -> Check {
        Live.sandbox_exec()
    }
}

/// Where bwrap is, if anywhere.
pub fn bwrap_path() -> Option<PathBuf> {
    which("bwrap")
}

/// Every probe of this machine (cached).
pub fn probes() -> Probes {
    let live = Live;
    Probes {
        kernel: kernel(),
        landlock_abi: live.landlock_abi(),
        seccomp: live.seccomp(),
        user_namespaces: live.user_namespaces(),
        bubblewrap: live.bubblewrap(),
        bwrap_path: bwrap_path(),
        cgroup_v2: cgroup_v2(),
        memory_cgroup: memory_cgroup(),
        process_limit: process_limit_probe(),
        sandbox_exec: live.sandbox_exec(),
    }
}

fn kernel() -> String {
    let u = nix_uname();
    format!("{} {}", std::env::consts::OS, u)
}

#[cfg(target_os = "linux")]
fn nix_uname() -> String {
    nix::sys::utsname::uname()
        .map(|u| u.release().to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[cfg(not(target_os = "linux"))]
fn nix_uname() -> String {
    String::new()
}

#[cfg(target_os = "linux")]
fn landlock_abi() -> u32 {
    crate::sys::landlock_abi().unwrap_or(0)
}

#[cfg(not(target_os = "linux"))]
fn landlock_abi() -> u32 {
    0
}

#[cfg(target_os = "linux")]
fn seccomp() -> Check {
    let ok = crate::sys::seccomp_filters_available();
    Check {
        ok,
        detail: if ok {
            "seccomp filters available".into()
        } else {
            "no seccomp filters (kernel without CONFIG_SECCOMP_FILTER)".into()
        },
    }
}

#[cfg(not(target_os = "linux"))]
fn seccomp() -> Check {
    Check {
        ok: false,
        detail: "seccomp is Linux only".into(),
    }
}

#[cfg(target_os = "linux")]
fn user_namespaces() -> Check {
    match crate::sys::probe_user_namespaces() {
        Ok(()) => Check {
            ok: true,
            detail: "user, mount, pid, net, ipc, uts namespaces and a tmpfs mount work".into(),
        },
        Err(step) => Check {
            ok: false,
            detail: format!(
                "{step} failed: enable unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, \
                 user.max_user_namespaces>0, kernel.apparmor_restrict_unprivileged_userns=0)"
            ),
        },
    }
}

#[cfg(not(target_os = "linux"))]
fn user_namespaces() -> Check {
    Check {
        ok: false,
        detail: "not Linux".into(),
    }
}

fn bubblewrap(path: Option<&Path>) -> Check {
    let Some(path) = path else {
        return Check {
            ok: false,
            detail: "bwrap not found on PATH: apt-get install bubblewrap".into(),
        };
    };
    let out = std::process::Command::new(path)
        .args([
            "--ro-bind",
            "/",
            "/",
            "--unshare-all",
            // --unshare-all only *tries* a user namespace; the backend requires one.
            "--unshare-user",
            "--die-with-parent",
            "--",
            "/bin/true",
        ])
        .stdin(std::process::Stdio::null())
        .output();
    match out {
        Ok(o) if o.status.success() => Check {
            ok: true,
            detail: format!("{} preflight ok", path.display()),
        },
        Ok(o) => Check {
            ok: false,
            detail: format!(
                "{} preflight failed: {}",
                path.display(),
                String::from_utf8_lossy(&o.stderr).trim()
            ),
        },
        Err(e) => Check {
            ok: false,
            detail: format!("{}: {e}", path.display()),
        },
    }
}

fn cgroup_v2() -> Check {
    let ok = Path::new("/sys/fs/cgroup/cgroup.controllers").exists();
    Check {
        ok,
        detail: if ok {
            "cgroup v2 at /sys/fs/cgroup".into()
        } else {
            "no cgroup v2 at /sys/fs/cgroup".into()
        },
    }
}

#[cfg(target_os = "linux")]
fn memory_cgroup() -> Check {
    let ok = crate::host::cgroup::memory_usable();
    Check {
        ok,
        detail: if ok {
            "a memory cgroup per execution bounds its whole memory".into()
        } else {
            "no writable memory cgroup (needs root and a memory controller): only RLIMIT_DATA \
             per process applies; shared mappings, tmpfs files and several processes together \
             are not bounded"
                .into()
        },
    }
}

#[cfg(target_os = "linux")]
fn process_limit_probe() -> ProcessLimitProbe {
    let processes = crate::Limits::default().processes;
    let pid_max = crate::host::pid_max::usable(processes);
    let pid_namespace_pid_max = Check {
        ok: pid_max,
        detail: if pid_max {
            "per-namespace pid_max (Linux 6.14+; a limit below 299 processes uses the pids cgroup)"
                .into()
        } else {
            "pid_max is global on this kernel (before Linux 6.14)".into()
        },
    };
    let cgroup = crate::host::cgroup::own_pids_cgroup();
    let writable = cgroup
        .as_deref()
        .is_some_and(|dir| nix::unistd::access(dir, nix::unistd::AccessFlags::W_OK).is_ok());
    let pids_cgroup = match (&cgroup, writable) {
        (Some(dir), true) => Check {
            ok: true,
            detail: format!("{} at {}", cgroup_version(dir), dir.display()),
        },
        (Some(dir), false) => Check {
            ok: false,
            detail: format!(
                "{} at {} is not writable",
                cgroup_version(dir),
                dir.display()
            ),
        },
        (None, _) => Check {
            ok: false,
            detail: "no pids controller (cgroup v1 pids hierarchy or cgroup v2 with pids enabled)"
                .into(),
        },
    };
    ProcessLimitProbe {
        root: nix::unistd::geteuid().is_root(),
        pid_namespace_pid_max,
        pids_cgroup,
    }
}

#[cfg(not(target_os = "linux"))]
fn memory_cgroup() -> Check {
    Check {
        ok: false,
        detail: "no memory cgroup on this platform".into(),
    }
}

#[cfg(not(target_os = "linux"))]
fn process_limit_probe() -> ProcessLimitProbe {
    let no = |detail: &str| Check {
        ok: false,
        detail: detail.into(),
    };
    ProcessLimitProbe {
        root: false,
        pid_namespace_pid_max: no("Linux only"),
        pids_cgroup: no("Linux only"),
    }
}

#[cfg(target_os = "linux")]
fn cgroup_version(dir: &Path) -> &'static str {
    if dir.starts_with("/sys/fs/cgroup/pids") {
        "cgroup v1 pids"
    } else {
        "cgroup v2 pids"
    }
}

/// What bounds the process count of one call on `b` here, or `None` when nothing does (uid 0
/// outside a pids cgroup, without a per-namespace `pid_max`). Mirrors the helper's choice.
pub fn process_limit(b: Backend, p: &ProcessLimitProbe) -> Option<String> {
    let confined = matches!(
        b,
        Backend::Namespaces | Backend::Bubblewrap | Backend::Landlock
    );
    let pid_max = b == Backend::Namespaces && p.pid_namespace_pid_max.ok;
    let mut by = Vec::new();
    if pid_max {
        by.push("the pid namespace's pid_max".to_string());
    } else if p.root && confined && p.pids_cgroup.ok {
        by.push(format!("a pids cgroup per call ({})", p.pids_cgroup.detail));
    }
    if !p.root {
        by.push("RLIMIT_NPROC".to_string());
    }
    (!by.is_empty()).then(|| by.join(" + "))
}

fn sandbox_exec() -> Check {
    let ok = cfg!(target_os = "macos") && Path::new("/usr/bin/sandbox-exec").exists();
    Check {
        ok,
        detail: if ok {
            "/usr/bin/sandbox-exec".into()
        } else {
            "not macOS".into()
        },
    }
}

fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/bin"), PathBuf::from("/usr/local/bin")])
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Availability of every backend given `p`.
pub fn statuses(p: &impl ProbeSource) -> Vec<BackendStatus> {
    Backend::LADDER.iter().map(|b| status(*b, p)).collect()
}

fn status(backend: Backend, p: &impl ProbeSource) -> BackendStatus {
    let mut reasons = Vec::new();
    let linux_needs = |reasons: &mut Vec<String>| {
        if !p.seccomp().ok {
            reasons.push("seccomp filters unavailable (CONFIG_SECCOMP_FILTER)".to_string());
        }
        if p.landlock_abi() == 0 {
            reasons.push("Landlock unavailable (Linux >= 5.13 with lsm=...,landlock)".to_string());
        }
    };
    match backend {
        Backend::Namespaces => {
            linux_needs(&mut reasons);
            let c = p.user_namespaces();
            if !c.ok {
                reasons.push(c.detail);
            }
        }
        Backend::Bubblewrap => {
            linux_needs(&mut reasons);
            let c = p.bubblewrap();
            if !c.ok {
                reasons.push(c.detail);
            }
        }
        Backend::Landlock => linux_needs(&mut reasons),
        Backend::Seatbelt => {
            if !p.sandbox_exec().ok {
                reasons.push("sandbox-exec is macOS only".into());
            }
        }
        Backend::None => {}
    }
    let linux = matches!(
        backend,
        Backend::Namespaces | Backend::Bubblewrap | Backend::Landlock
    );
    let partial = linux && reasons.is_empty() && p.landlock_abi() < FULL_LANDLOCK_ABI;
    BackendStatus {
        backend,
        available: reasons.is_empty(),
        partial,
        reason: reasons.join("; "),
    }
}

/// Picks the backend for `choice`: a named backend must be available, `auto` takes the
/// strongest rung with namespaces (namespaces, bubblewrap; Seatbelt on macOS) and never the
/// Landlock-only rung, which is used only when named; `none` only when named; partial
/// Landlock only when allowed.
pub fn choose(
    choice: BackendChoice,
    allow_partial: bool,
    p: &impl ProbeSource,
) -> Result<Backend, SandboxError> {
    let usable = |s: &BackendStatus| s.available && (!s.partial || allow_partial);
    if let Some(named) = choice.named() {
        let s = &status(named, p);
        if !s.available {
            return Err(SandboxError::Unavailable {
                requested: choice,
                reason: s.reason.clone(),
            });
        }
        if !usable(s) {
            return Err(SandboxError::Partial {
                backend: named,
                reason: format!("Landlock ABI {} < {FULL_LANDLOCK_ABI}", p.landlock_abi()),
            });
        }
        return Ok(named);
    }
    let automatic = |b: &&Backend| !matches!(b, Backend::None | Backend::Landlock);
    // The first usable rung wins; a lower rung's probe (a bwrap preflight run) is not paid
    // for unless every rung above it failed.
    let mut candidates: Vec<BackendStatus> = Vec::new();
    for b in Backend::LADDER.iter().filter(automatic) {
        let s = status(*b, p);
        if usable(&s) {
            return Ok(s.backend);
        }
        candidates.push(s);
    }
    let why = |s: &BackendStatus| {
        if s.partial {
            "partial Landlock (allow_partial = false)".to_string()
        } else {
            s.reason.clone()
        }
    };
    let mut reason = candidates
        .iter()
        .map(|s| format!("{}: {}", s.backend, why(s)))
        .collect::<Vec<_>>()
        .join("; ");
    let landlock = status(Backend::Landlock, p);
    reason += &if usable(&landlock) {
        format!(
            ". The reduced Landlock-only rung works here but is never chosen automatically: \
             set [sandbox] backend = \"landlock\" (CLI: --backend landlock) to accept it; it does not guarantee: {}",
            LANDLOCK_RUNG_LIMITS.join("; ")
        )
    } else {
        format!(
            ". The reduced Landlock-only rung (backend = \"landlock\", only by name) is not \
             usable either: {}",
            why(&landlock)
        )
    };
    Err(SandboxError::Unavailable {
        requested: choice,
        reason,
    })
}

/// The full report for `choice`.
pub fn report(choice: BackendChoice, allow_partial: bool) -> Report {
    report_from(choice, allow_partial, probes())
}

/// The report for given probes (pure; used by tests).
pub fn report_from(choice: BackendChoice, allow_partial: bool, probes: Probes) -> Report {
    let chosen = choose(choice, allow_partial, &probes);
    let backends = statuses(&probes);
    let mut missing: Vec<String> = backends
        .iter()
        .filter(|s| !s.available && s.backend != Backend::Seatbelt && s.backend != Backend::None)
        .map(|s| format!("{}: {}", s.backend, s.reason))
        .collect();
    let linux_confined = chosen.as_ref().is_ok_and(|b| {
        matches!(
            b,
            Backend::Namespaces | Backend::Bubblewrap | Backend::Landlock
        )
    });
    if linux_confined && !probes.memory_cgroup.ok {
        missing.push(format!(
            "whole-execution memory limit: {}",
            probes.memory_cgroup.detail
        ));
    }
    if let Ok(b) = &chosen {
        missing.extend(missing_process_limit(*b, &probes.process_limit));
    }
    Report {
        requested: choice,
        allow_partial,
        guarantees: chosen
            .as_ref()
            .map(|b| guarantees_here(*b, &probes.process_limit))
            .unwrap_or_default(),
        chosen: chosen.as_ref().ok().copied(),
        error: chosen.err().map(|e| e.to_string()),
        probes,
        backends,
        missing,
    }
}

fn g(what: &str, mechanism: &str) -> Guarantee {
    Guarantee {
        what: what.into(),
        mechanism: mechanism.into(),
    }
}

/// [`guarantees`] with the process count's real mechanism on this machine filled in.
pub fn guarantees_here(b: Backend, p: &ProcessLimitProbe) -> Vec<Guarantee> {
    let mut v = guarantees(b);
    if let Some(limits) = v.iter_mut().find(|g| g.what == RESOURCE_LIMITS) {
        let processes =
            process_limit(b, p).unwrap_or_else(|| "NOT ENFORCED (see missing)".to_string());
        limits.mechanism = format!("{RLIMITS}; process count: {processes}; {MEMORY}");
    }
    v
}

/// The process count left unbounded on `b` here, as a missing guarantee with its fix.
fn missing_process_limit(b: Backend, p: &ProcessLimitProbe) -> Option<String> {
    let confined = matches!(
        b,
        Backend::Namespaces | Backend::Bubblewrap | Backend::Landlock
    );
    if !confined || process_limit(b, p).is_some() {
        return None;
    }
    let pid_max = if b == Backend::Namespaces {
        format!("{}; ", p.pid_namespace_pid_max.detail)
    } else {
        String::new()
    };
    Some(format!(
        "process count on {b}: not enforced (uid 0 ignores RLIMIT_NPROC; {pid_max}{}): run as a \
         non-root user, or give zeroclaw a writable pids cgroup",
        p.pids_cgroup.detail
    ))
}

const RESOURCE_LIMITS: &str = "resource limits";
const RLIMITS: &str = "rlimits (CPU time, memory, file size, open files)";
const MEMORY: &str = "whole-execution memory: a memory cgroup per call (uid 0)";

/// Which guarantee rests on which mechanism, per backend (the process count's mechanism
/// depends on the machine: [`guarantees_here`]).
pub fn guarantees(b: Backend) -> Vec<Guarantee> {
    match b {
        Backend::Namespaces | Backend::Bubblewrap => {
            let ns = if b == Backend::Namespaces {
                "mount namespace"
            } else {
                "bubblewrap mount namespace"
            };
            vec![
                g(
                    "reads limited to allowed roots; secrets masked",
                    &format!("{ns} + Landlock"),
                ),
                g(
                    "writes limited to the workspace; .git/hooks, .git/config read-only",
                    &format!("{ns} (read-only binds, pinned .git)"),
                ),
                g("private /tmp and HOME", &format!("{ns} (tmpfs)")),
                g(
                    "no network, no abstract or outside Unix sockets",
                    if b == Backend::Namespaces {
                        "net namespace + seccomp socket filter + Landlock + read-only roots as overlays"
                    } else {
                        "net namespace + seccomp socket filter + Landlock + read-only roots as overlays (bwrap started by root only)"
                    },
                ),
                g(
                    "no signals/ptrace to outside processes",
                    "pid namespace + Landlock scope + seccomp",
                ),
                g(
                    "no privilege: capabilities dropped, no_new_privs, no new namespaces",
                    "capset/bounding set + prctl + seccomp",
                ),
                g(
                    "no setuid/setgid file, file capability or device node left for the host",
                    "seccomp (mode arguments; attribute writes refused) + capabilities dropped",
                ),
                g(
                    "the host's per-user counts kept: a quarter of its inotify instances and watches",
                    "/proc/sys/user limits of the child's user namespace (bubblewrap: not for a non-root user of a setuid-root bwrap, which refuses --cap-add)",
                ),
                g(
                    "no descendant outlives the call",
                    "pid namespace (init exit kills all)",
                ),
                g(
                    RESOURCE_LIMITS,
                    &format!(
                        "{RLIMITS}; process count: the pid namespace's pid_max, else a pids cgroup (uid 0), else RLIMIT_NPROC; {MEMORY}"
                    ),
                ),
            ]
        }
        Backend::Landlock => {
            let mut v = vec![
                g(
                    "reads limited to allowed roots; secrets excluded",
                    "Landlock (per-entry rules)",
                ),
                g(
                    "writes limited to the workspace and a private TMPDIR/HOME",
                    "Landlock",
                ),
                g(
                    "mode, owner and time changes (chmod, chown, utimensat, ...) only inside the writable roots, on files the uid owns, never setuid/setgid, never to another owner",
                    "seccomp user notification, performed by the helper",
                ),
                g(
                    "other processes' /proc entries hidden",
                    "Landlock (rules on /proc's non-process entries and the command's own)",
                ),
                g(
                    "no network when denied (only Unix sockets; pathname ones only inside the writable roots, no abstract ones)",
                    "seccomp (socket families) + connect performed by the helper + Landlock TCP + scopes",
                ),
                g(
                    "Unix sockets outside the writable roots (docker.sock, ssh-agent) unreachable",
                    "seccomp user notification: connect performed by the helper; Unix datagram sockets denied",
                ),
                g(
                    "no signals/ptrace to outside processes; their rlimits, scheduling and I/O priority unchanged",
                    "Landlock scope + seccomp (pid 0 only)",
                ),
                g(
                    "the host's SysV IPC objects and message queues out of reach",
                    "seccomp (SysV IPC and mq_* denied)",
                ),
                g(
                    "no setuid/setgid file, file capability, ACL or device node left for the host",
                    "seccomp (mode arguments; attribute writes refused) + capabilities dropped",
                ),
                g(
                    "no privilege",
                    "capabilities dropped + no_new_privs + seccomp",
                ),
                g(
                    "no descendant outlives the call",
                    "child subreaper kills every descendant",
                ),
                g(
                    RESOURCE_LIMITS,
                    &format!(
                        "{RLIMITS}; process count: a pids cgroup (uid 0), else RLIMIT_NPROC; {MEMORY}"
                    ),
                ),
            ];
            v.extend(
                LANDLOCK_RUNG_LIMITS
                    .iter()
                    .map(|l| g(&format!("REDUCED (chosen only by name): {l}"), "none")),
            );
            v
        }
        Backend::Seatbelt => vec![g(
            "file, network and process rules",
            "Seatbelt (sandbox-exec)",
        )],
        Backend::None => vec![g(
            "NOTHING: the command runs unconfined (backend = \"none\")",
            "none",
        )],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probes(userns: bool, bwrap: bool, abi: u32) -> Probes {
        let c = |ok: bool| Check {
            ok,
            detail: if ok { "ok".into() } else { "missing".into() },
        };
        Probes {
            kernel: "linux test".into(),
            landlock_abi: abi,
            seccomp: c(true),
            user_namespaces: c(userns),
            bubblewrap: c(bwrap),
            bwrap_path: None,
            cgroup_v2: c(false),
            memory_cgroup: c(true),
            process_limit: ProcessLimitProbe {
                root: false,
                pid_namespace_pid_max: c(false),
                pids_cgroup: c(false),
            },
            sandbox_exec: c(false),
        }
    }

    #[test]
    fn auto_takes_the_strongest_rung() {
        assert_eq!(
            choose(BackendChoice::Auto, false, &probes(true, true, 7)).unwrap(),
            Backend::Namespaces
        );
        assert_eq!(
            choose(BackendChoice::Auto, false, &probes(false, true, 7)).unwrap(),
            Backend::Bubblewrap
        );
    }

    #[test]
    fn auto_never_takes_the_landlock_rung() {
        let e = choose(BackendChoice::Auto, false, &probes(false, false, 7)).unwrap_err();
        let text = e.to_string();
        assert!(matches!(e, SandboxError::Unavailable { .. }), "{text}");
        assert!(text.contains("namespaces: missing"), "{text}");
        assert!(text.contains("bubblewrap: missing"), "{text}");
        assert!(text.contains("backend = \"landlock\""), "{text}");
        assert!(text.contains(".git/hooks"), "{text}");
        // Named, it is still used.
        assert_eq!(
            choose(BackendChoice::Landlock, false, &probes(false, false, 7)).unwrap(),
            Backend::Landlock
        );
        // Without Landlock the error says so instead of offering it.
        let text = choose(BackendChoice::Auto, false, &probes(false, false, 0))
            .unwrap_err()
            .to_string();
        assert!(text.contains("not usable either"), "{text}");
    }

    #[test]
    fn auto_with_nothing_usable_is_an_error_never_none() {
        let e = choose(BackendChoice::Auto, false, &probes(false, false, 0)).unwrap_err();
        assert!(matches!(e, SandboxError::Unavailable { .. }), "{e}");
    }

    #[test]
    fn named_backend_unavailable_is_an_error() {
        let e = choose(BackendChoice::Bubblewrap, false, &probes(true, false, 7)).unwrap_err();
        assert!(matches!(
            e,
            SandboxError::Unavailable {
                requested: BackendChoice::Bubblewrap,
                ..
            }
        ));
    }

    #[test]
    fn none_only_by_name() {
        assert_eq!(
            choose(BackendChoice::None, false, &probes(false, false, 0)).unwrap(),
            Backend::None
        );
    }

    #[test]
    fn old_landlock_is_refused_unless_partial_is_allowed() {
        let p = probes(true, true, 3);
        assert!(matches!(
            choose(BackendChoice::Namespaces, false, &p),
            Err(SandboxError::Partial { .. })
        ));
        assert!(choose(BackendChoice::Auto, false, &p).is_err());
        assert_eq!(
            choose(BackendChoice::Auto, true, &p).unwrap(),
            Backend::Namespaces
        );
    }

    /// Without a writable memory cgroup the report lists the whole-execution memory bound as
    /// missing; with one, it does not.
    #[test]
    fn a_missing_memory_cgroup_is_reported() {
        let bound = "whole-execution memory limit";
        let mut p = probes(true, true, 7);
        let r = report_from(BackendChoice::Auto, false, p.clone());
        assert!(!r.missing.iter().any(|m| m.starts_with(bound)), "{r:?}");
        p.memory_cgroup.ok = false;
        let r = report_from(BackendChoice::Auto, false, p);
        assert!(r.missing.iter().any(|m| m.starts_with(bound)), "{r:?}");
    }

    #[test]
    fn report_names_the_choice_and_its_guarantees() {
        let r = report_from(BackendChoice::Landlock, false, probes(false, false, 7));
        assert_eq!(r.chosen, Some(Backend::Landlock));
        assert!(r.error.is_none());
        assert!(r.guarantees.iter().any(|g| g.what.starts_with("REDUCED")));
        // Mode changes and other processes' /proc are no longer among the reduced ones.
        assert!(
            !r.guarantees
                .iter()
                .any(|g| g.what.starts_with("REDUCED") && g.what.contains("chmod"))
        );
        assert_eq!(r.backends.len(), 5);
        assert!(r.missing.iter().any(|m| m.starts_with("namespaces:")));
        let json = serde_json::to_value(&r).unwrap();
        for key in [
            "requested",
            "chosen",
            "probes",
            "backends",
            "guarantees",
            "missing",
        ] {
            assert!(json.get(key).is_some(), "{key}");
        }
    }

    #[test]
    fn auto_report_without_namespaces_offers_landlock_by_name() {
        let r = report_from(BackendChoice::Auto, false, probes(false, false, 7));
        assert_eq!(r.chosen, None);
        assert!(r.guarantees.is_empty());
        assert!(r.error.unwrap().contains("backend = \"landlock\""));
        let landlock = r.backends.iter().find(|s| s.backend == Backend::Landlock);
        assert!(landlock.is_some_and(|s| s.available));
    }

    #[test]
    fn report_without_a_backend_carries_the_error() {
        let r = report_from(BackendChoice::Namespaces, false, probes(false, false, 7));
        assert_eq!(r.chosen, None);
        assert!(r.error.unwrap().contains("namespaces"));
    }

    fn limit_probe(root: bool, pid_max: bool, cgroup: bool) -> ProcessLimitProbe {
        let c = |ok: bool, what: &str| Check {
            ok,
            detail: what.into(),
        };
        ProcessLimitProbe {
            root,
            pid_namespace_pid_max: c(pid_max, "pid_max probe"),
            pids_cgroup: c(cgroup, "cgroup v1 pids at /x"),
        }
    }

    #[test]
    fn the_process_count_is_reported_by_what_really_bounds_it() {
        let as_root_v1 = limit_probe(true, false, true);
        assert_eq!(
            process_limit(Backend::Landlock, &as_root_v1).unwrap(),
            "a pids cgroup per call (cgroup v1 pids at /x)"
        );
        assert_eq!(
            process_limit(Backend::Bubblewrap, &as_root_v1),
            process_limit(Backend::Landlock, &as_root_v1)
        );
        let new_kernel = limit_probe(true, true, true);
        assert_eq!(
            process_limit(Backend::Namespaces, &new_kernel).unwrap(),
            "the pid namespace's pid_max"
        );
        assert_eq!(
            process_limit(Backend::Namespaces, &limit_probe(false, true, false)).unwrap(),
            "the pid namespace's pid_max + RLIMIT_NPROC"
        );
        assert_eq!(
            process_limit(Backend::Landlock, &limit_probe(false, false, true)).unwrap(),
            "RLIMIT_NPROC"
        );
        let nothing = limit_probe(true, false, false);
        assert_eq!(process_limit(Backend::Landlock, &nothing), None);
        let missing = missing_process_limit(Backend::Landlock, &nothing).unwrap();
        assert!(
            missing.starts_with("process count on landlock: not enforced"),
            "{missing}"
        );
        assert!(missing_process_limit(Backend::Landlock, &as_root_v1).is_none());
        let limits = guarantees_here(Backend::Landlock, &nothing)
            .into_iter()
            .find(|g| g.what == RESOURCE_LIMITS)
            .unwrap();
        assert!(
            limits.mechanism.contains("NOT ENFORCED"),
            "{}",
            limits.mechanism
        );
    }

    #[test]
    fn a_report_lists_an_unbounded_process_count_as_missing() {
        let mut p = probes(false, false, 7);
        p.process_limit = limit_probe(true, false, false);
        let r = report_from(BackendChoice::Landlock, false, p);
        assert!(
            r.missing
                .iter()
                .any(|m| m.starts_with("process count on landlock")),
            "{:?}",
            r.missing
        );
    }
}
