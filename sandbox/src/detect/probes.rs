//! The probes of this machine: each runs once per process on first use ([`Live`]), or is
//! assumed for a one-shot caller's first run ([`FirstRunTries`]).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::types::{Check, ProbeSource, Probes, ProcessLimitProbe};
use crate::backend::Backend;

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

/// Every probe of this machine (cached). The two that start children (the user-namespace
/// trial and bwrap's preflight run) run side by side: each waits on its own children, so
/// together they take as long as the slower one.
pub fn probes() -> Probes {
    let live = Live;
    let (user_namespaces, bubblewrap) = std::thread::scope(|s| {
        let bwrap = s.spawn(|| Live.bubblewrap());
        let userns = live.user_namespaces();
        let bwrap = bwrap.join().unwrap_or_else(|_| Check {
            ok: false,
            detail: "the bwrap preflight probe panicked".into(),
        });
        (userns, bwrap)
    });
    Probes {
        kernel: kernel(),
        landlock_abi: live.landlock_abi(),
        seccomp: live.seccomp(),
        user_namespaces,
        bubblewrap,
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
