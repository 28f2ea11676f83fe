//! Where this process's cgroups live (read from `/proc/self/cgroup` and `/sys/fs/cgroup`):
//! what `detect` reports, what a foreground run decides on, and where the helper makes its
//! per-execution cgroups ([`crate::helper`]'s `cgroup`). Reads only.

use std::path::{Path, PathBuf};

/// Where our own pids cgroup lives, v1 first.
pub(crate) fn own_pids_cgroup() -> Option<PathBuf> {
    own_cgroup(Controller::Pids)
}

/// A controller of a per-execution cgroup.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Controller {
    Pids,
    Memory,
}

impl Controller {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Controller::Pids => "pids",
            Controller::Memory => "memory",
        }
    }
}

/// Where our own cgroup of `controller` lives, v1 first.
pub(crate) fn own_cgroup(controller: Controller) -> Option<PathBuf> {
    let name = controller.name();
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let rel = path.trim_start_matches('/');
        if controllers.split(',').any(|c| c == name) {
            return Some(Path::new("/sys/fs/cgroup").join(name).join(rel));
        }
        if controllers.is_empty() {
            let v2 = Path::new("/sys/fs/cgroup").join(rel);
            if std::fs::read_to_string(v2.join("cgroup.subtree_control"))
                .is_ok_and(|c| c.split_whitespace().any(|c| c == name))
            {
                return Some(v2);
            }
        }
    }
    None
}

/// Whether this process could make a memory cgroup per execution (root, a memory controller
/// whose directory it may write): what `doctor` reports, and what makes a foreground run fork
/// a helper to join it.
pub fn memory_usable() -> bool {
    nix::unistd::geteuid().is_root()
        && launcher_cgroup(Controller::Memory)
            .is_some_and(|dir| nix::unistd::access(dir, nix::unistd::AccessFlags::W_OK).is_ok())
}

/// The launcher's cgroup of `controller`, read once (it does not move; its helpers start
/// there).
pub(crate) fn launcher_cgroup(controller: Controller) -> Option<&'static Path> {
    static PIDS: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    static MEMORY: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    let cell = match controller {
        Controller::Pids => &PIDS,
        Controller::Memory => &MEMORY,
    };
    cell.get_or_init(|| own_cgroup(controller)).as_deref()
}
