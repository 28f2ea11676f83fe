//! The probes kept across processes: a process that must answer at once (`zeroclaw acp`'s
//! `initialize`, which declares the sandbox) reads the last probes from a file instead of
//! starting the probes' children again, as long as nothing they depend on changed. What they
//! depend on is written beside them as the host's *facts*, read fresh by every process and
//! compared byte for byte: the boot (`boot_id`, so kernel, boot parameters and Landlock
//! ABI), the kernel release, this binary, the user and its user namespace, the process's own
//! confinement (`NoNewPrivs`, seccomp, capabilities, LSM label), its cgroups, the sysctls that
//! gate user namespaces, and the bwrap binary found on `PATH`. Any difference, or a file that
//! cannot be read or parsed, runs the probes and rewrites the file.
//!
//! Only the *declaration* uses kept probes; a confined run still finds out for itself whether
//! its rung works ([`super::FirstRunTries`], [`super::Live`]), so a stale file could at worst
//! misdescribe, never weaken, a run.

use std::fmt::Write as _;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::probes::{bwrap_path, probes};
use super::types::Probes;

/// The file's name in the directory the caller keeps it in.
pub const FILE_NAME: &str = "sandbox-probes.json";

/// The sysctls that decide whether user namespaces work for this user.
const USERNS_SYSCTLS: &[&str] = &[
    "/proc/sys/kernel/unprivileged_userns_clone",
    "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
    "/proc/sys/user/max_user_namespaces",
    "/proc/sys/user/max_mnt_namespaces",
    "/proc/sys/user/max_pid_namespaces",
    "/proc/sys/user/max_net_namespaces",
];

/// The lines of `/proc/self/status` that describe the process's own confinement.
const STATUS_KEYS: &[&str] = &[
    "NoNewPrivs:",
    "Seccomp:",
    "Seccomp_filters:",
    "CapEff:",
    "CapBnd:",
];

#[derive(Serialize, Deserialize)]
struct Kept {
    facts: String,
    probes: Probes,
}

/// This machine's probes: the ones kept in `dir` when the host's facts are unchanged, else
/// fresh ones (then kept in `dir`, best effort: a directory that cannot be written only costs
/// the next process the probes).
pub fn probes_kept_in(dir: &Path) -> Probes {
    let file = dir.join(FILE_NAME);
    let facts = facts();
    if let Some(kept) = read(&file)
        && kept.facts == facts
    {
        return kept.probes;
    }
    let probes = probes();
    let kept = Kept { facts, probes };
    if let Err(e) = write(dir, &file, &kept) {
        tracing::debug!(file = %file.display(), error = %e, "sandbox probes not kept");
    }
    kept.probes
}

fn read(file: &Path) -> Option<Kept> {
    let bytes = std::fs::read(file).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Writes `kept` to `file` through a private temporary file renamed over it, so a reader sees
/// the old file or the whole new one.
fn write(dir: &Path, file: &Path, kept: &Kept) -> std::io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let tmp = dir.join(format!(".{FILE_NAME}.{}", std::process::id()));
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)?;
    out.write_all(&serde_json::to_vec(kept).map_err(std::io::Error::other)?)?;
    drop(out);
    std::fs::rename(&tmp, file).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// Everything the probes' results depend on, one `name=value` line each (a missing source
/// reads as `-`).
fn facts() -> String {
    let mut out = String::new();
    let mut fact = |name: &str, value: String| {
        let _ = writeln!(out, "{name}={}", value.trim_end());
    };
    let text = |path: &str| std::fs::read_to_string(path).unwrap_or_else(|_| "-".into());
    fact("boot", text("/proc/sys/kernel/random/boot_id"));
    let uts = nix::sys::utsname::uname().ok();
    fact(
        "kernel",
        uts.map_or("-".into(), |u| {
            format!(
                "{} {}",
                u.release().to_string_lossy(),
                u.version().to_string_lossy()
            )
        }),
    );
    fact("binary", identity(Path::new("/proc/self/exe")));
    fact(
        "user",
        format!(
            "{} {}",
            nix::unistd::geteuid().as_raw(),
            nix::unistd::getegid().as_raw()
        ),
    );
    let namespace = |path: &str| {
        std::fs::read_link(path).map_or("-".into(), |l| l.to_string_lossy().into_owned())
    };
    fact("userns", namespace("/proc/self/ns/user"));
    fact("mntns", namespace("/proc/self/ns/mnt"));
    let status = text("/proc/self/status");
    for key in STATUS_KEYS {
        let line = status.lines().find(|l| l.starts_with(key)).unwrap_or("-");
        fact(key.trim_end_matches(':'), line.to_string());
    }
    fact("lsm", text("/proc/self/attr/current"));
    fact("cgroup", text("/proc/self/cgroup").replace('\n', ";"));
    for sysctl in USERNS_SYSCTLS {
        fact(sysctl, text(sysctl));
    }
    fact(
        "bwrap",
        bwrap_path().map_or("-".into(), |p| format!("{} {}", p.display(), identity(&p))),
    );
    out
}

/// A file's identity: device, inode, size, mode, owner and change time (`-` if it cannot be
/// read), following symlinks (the file itself is what runs).
fn identity(path: &Path) -> String {
    match std::fs::metadata(path) {
        Ok(m) => format!(
            "{}:{} {} {:o} {} {}.{}",
            m.dev(),
            m.ino(),
            m.size(),
            m.mode(),
            m.uid(),
            m.ctime(),
            m.ctime_nsec()
        ),
        Err(_) => "-".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kept_probes_are_the_live_ones_and_a_changed_fact_probes_again() {
        let dir = tempfile::tempdir().unwrap();
        let first = probes_kept_in(dir.path());
        assert_eq!(first, probes());
        let file = dir.path().join(FILE_NAME);
        let kept: Kept = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        assert_eq!(kept.facts, facts());

        // A kept file with other facts is not believed, whatever it says.
        let mut lying = serde_json::to_value(&kept).unwrap();
        lying["facts"] = "boot=another boot\n".into();
        lying["probes"]["landlock_abi"] = 0.into();
        std::fs::write(&file, serde_json::to_vec(&lying).unwrap()).unwrap();
        assert_eq!(probes_kept_in(dir.path()), probes());

        // With the same facts, the kept probes are what is read (here: a changed ABI).
        let mut marked = serde_json::to_value(&kept).unwrap();
        marked["probes"]["landlock_abi"] = 99.into();
        std::fs::write(&file, serde_json::to_vec(&marked).unwrap()).unwrap();
        assert_eq!(probes_kept_in(dir.path()).landlock_abi, 99);

        // A damaged file is replaced.
        std::fs::write(&file, b"{not json").unwrap();
        assert_eq!(probes_kept_in(dir.path()), probes());
        assert!(read(&file).is_some());
    }

    #[test]
    fn the_facts_name_the_binary_the_boot_and_bwrap() {
        let facts = facts();
        for name in ["boot=", "kernel=", "binary=", "user=", "cgroup=", "bwrap="] {
            assert!(facts.contains(name), "{name} missing from:\n{facts}");
        }
        assert!(!facts.contains("binary=-"), "{facts}");
    }
}
