//! A pids cgroup per execution: the process limit that also holds for uid 0 (the kernel does
//! not apply `RLIMIT_NPROC` to root). cgroup v1 `pids` hierarchy or cgroup v2 with the pids
//! controller; the helper joins it before forking, so the whole tree is counted, and removes
//! it once the tree is gone. Absent or not writable: reported, not fatal (unprivileged users
//! are bounded by `RLIMIT_NPROC`).

use std::path::{Path, PathBuf};

use crate::error::{SetupError, Stage};

/// The cgroup the helper created and joined.
pub struct PidsCgroup {
    dir: PathBuf,
    parent: PathBuf,
}

/// Where our own pids cgroup lives, v1 first.
fn own_pids_cgroup() -> Option<PathBuf> {
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let rel = path.trim_start_matches('/');
        if controllers.split(',').any(|c| c == "pids") {
            return Some(Path::new("/sys/fs/cgroup/pids").join(rel));
        }
        if controllers.is_empty() {
            let v2 = Path::new("/sys/fs/cgroup").join(rel);
            if v2.join("cgroup.subtree_control").exists()
                && std::fs::read_to_string(v2.join("cgroup.subtree_control"))
                    .is_ok_and(|c| c.contains("pids"))
            {
                return Some(v2);
            }
        }
    }
    None
}

/// Creates `zeroclaw-<pid>` with `pids.max = limit` and moves the helper into it. `Ok(None)`
/// when no pids controller is usable here.
pub fn enter(limit: u64) -> Result<Option<PidsCgroup>, SetupError> {
    let Some(parent) = own_pids_cgroup() else {
        return Ok(None);
    };
    sweep(&parent);
    let dir = dir_for(&parent, std::process::id());
    if std::fs::create_dir(&dir).is_err() {
        return Ok(None);
    }
    let cg = PidsCgroup { dir, parent };
    let write = |file: &str, value: String| {
        std::fs::write(cg.dir.join(file), &value).map_err(|e| {
            SetupError::os(
                Stage::Cgroup,
                format!("write({}, {value})", cg.dir.join(file).display()),
                &e,
            )
        })
    };
    if let Err(e) = write("pids.max", limit.to_string())
        .and_then(|_| write("cgroup.procs", std::process::id().to_string()))
    {
        let _ = std::fs::remove_dir(&cg.dir);
        return Err(e);
    }
    Ok(Some(cg))
}

/// Removes cgroups left by helpers that are gone (a helper inside its user namespace cannot
/// remove its own when the launcher died first).
fn sweep(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.strip_prefix("zeroclaw-")) else {
            continue;
        };
        if !Path::new("/proc").join(pid).exists() {
            let _ = std::fs::remove_dir(e.path());
        }
    }
}

fn dir_for(parent: &Path, helper: u32) -> PathBuf {
    parent.join(format!("zeroclaw-{helper}"))
}

/// The launcher's pids cgroup, read once (it does not move; its helpers start there).
fn launcher_pids_cgroup() -> Option<&'static Path> {
    static OWN: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    OWN.get_or_init(own_pids_cgroup).as_deref()
}

/// Launcher side: whether the helper `helper` has a pids cgroup (it must exit before it can
/// be removed).
pub fn exists_for(helper: u32) -> bool {
    launcher_pids_cgroup().is_some_and(|parent| dir_for(parent, helper).exists())
}

/// Launcher side: removes the cgroup of helper `helper` once it has been reaped (the helper
/// started in the launcher's own cgroup, so the path is the same computed from here).
pub fn remove_after(helper: u32) {
    if let Some(parent) = launcher_pids_cgroup() {
        let _ = std::fs::remove_dir(dir_for(parent, helper));
    }
}

impl PidsCgroup {
    /// Leaves and removes the cgroup (call once the tree is dead).
    pub fn remove(self) {
        let _ = std::fs::write(
            self.parent.join("cgroup.procs"),
            std::process::id().to_string(),
        );
        let _ = std::fs::remove_dir(&self.dir);
    }
}
