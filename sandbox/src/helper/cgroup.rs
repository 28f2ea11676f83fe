//! Per-execution cgroups: a pids cgroup, the process limit that also holds for uid 0 (the
//! kernel does not apply `RLIMIT_NPROC` to root), and a memory cgroup, the bound on the whole
//! execution's memory (shared mappings and tmpfs files, which `RLIMIT_DATA` does not count,
//! and every process together). cgroup v1 `pids`/`memory` hierarchies or cgroup v2 with the
//! controller; the helper joins them before forking, so the whole tree is counted, and removes
//! them once the tree is gone. Absent or not writable: reported, not fatal (unprivileged users
//! are bounded by `RLIMIT_NPROC` and `RLIMIT_DATA` only; `doctor` says so).
//!
//! Moving a process between cgroups write-locks a global semaphore whose writer waits for an
//! RCU grace period (12–17 ms on an idle machine). On v1 a single-threaded helper moves its one
//! thread instead (`0` written to `tasks`), which the kernel does without that lock.

use std::path::{Path, PathBuf};

use crate::host::cgroup::{Controller, launcher_cgroup, own_cgroup};

use crate::error::{SetupError, Stage};

/// A cgroup the helper created and joined.
pub struct Cgroup {
    dir: PathBuf,
    parent: PathBuf,
}

/// Creates `zeroclaw-<pid>` with `pids.max = limit` and moves the helper into it. `Ok(None)`
/// when no pids controller is usable here.
pub fn enter(limit: u64) -> Result<Option<Cgroup>, SetupError> {
    enter_with(Controller::Pids, &[("pids.max", limit.to_string())])
}

/// Creates `zeroclaw-<pid>` in the memory hierarchy bounding the whole tree's memory to
/// `limit` bytes, swap included where the kernel accounts it (v1 `memory.limit_in_bytes` and
/// `memory.memsw.limit_in_bytes`; v2 `memory.max`, `memory.swap.max = 0`), and moves the
/// helper into it: past the limit the kernel reclaims, then OOM-kills inside the cgroup only.
/// `Ok(None)` when no memory controller is usable here.
pub fn enter_memory(limit: u64) -> Result<Option<Cgroup>, SetupError> {
    let limit = limit.to_string();
    let Some(parent) = own_cgroup(Controller::Memory) else {
        return Ok(None);
    };
    let settings: Vec<(&str, String)> = if parent.join("memory.limit_in_bytes").exists() {
        let mut v1 = vec![("memory.limit_in_bytes", limit.clone())];
        if parent.join("memory.memsw.limit_in_bytes").exists() {
            v1.push(("memory.memsw.limit_in_bytes", limit));
        }
        v1
    } else {
        let mut v2 = vec![("memory.max", limit)];
        if parent.join("memory.swap.max").exists() {
            v2.push(("memory.swap.max", "0".into()));
        }
        v2
    };
    enter_with(Controller::Memory, &settings)
}

fn enter_with(
    controller: Controller,
    settings: &[(&str, String)],
) -> Result<Option<Cgroup>, SetupError> {
    let Some(parent) = own_cgroup(controller) else {
        return Ok(None);
    };
    sweep(&parent);
    let dir = dir_for(&parent, std::process::id());
    if std::fs::create_dir(&dir).is_err() {
        return Ok(None);
    }
    let cg = Cgroup { dir, parent };
    let write = |file: &str, value: &str| {
        std::fs::write(cg.dir.join(file), value).map_err(|e| {
            SetupError::os(
                Stage::Cgroup,
                format!("write({}, {value})", cg.dir.join(file).display()),
                &e,
            )
        })
    };
    let joined = settings
        .iter()
        .try_for_each(|(file, value)| write(file, value))
        .and_then(|_| {
            join(&cg.dir).map_err(|e| {
                SetupError::os(Stage::Cgroup, format!("join {}", cg.dir.display()), &e)
            })
        });
    if let Err(e) = joined {
        let _ = std::fs::remove_dir(&cg.dir);
        return Err(e);
    }
    Ok(Some(cg))
}

/// Moves this process into the cgroup `dir`: its only thread through v1's `tasks` when it has
/// one thread (no global lock, see the module doc), the whole process otherwise.
fn join(dir: &Path) -> std::io::Result<()> {
    if crate::host::thread_count().is_ok_and(|n| n == 1) {
        match std::fs::write(dir.join("tasks"), "0") {
            // cgroup v2 has no `tasks` (and moves threads only inside threaded subtrees).
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            done => return done,
        }
    }
    std::fs::write(dir.join("cgroup.procs"), std::process::id().to_string())
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

/// Launcher side: removes the cgroups of helper `helper` once it has been reaped, if the helper
/// did not (it died first). The helper started in the launcher's own cgroups, so the paths are
/// the same computed from here.
pub fn remove_after(helper: u32) {
    for controller in [Controller::Pids, Controller::Memory] {
        if let Some(parent) = launcher_cgroup(controller) {
            let _ = std::fs::remove_dir(dir_for(parent, helper));
        }
    }
}

impl Cgroup {
    /// Leaves and removes the cgroup (call once the tree is dead).
    pub fn remove(self) {
        let _ = join(&self.parent);
        let _ = std::fs::remove_dir(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use nix::sys::wait::{WaitStatus, waitpid};

    use super::*;

    /// In a forked child with `threads` threads: enters a pids cgroup, checks that every
    /// thread is in it with the limit set, leaves it and checks that it is gone. Exits with the
    /// number of the first check that failed, 0 when all held.
    fn child(threads: usize) -> ! {
        for _ in 1..threads {
            std::thread::spawn(|| {
                loop {
                    std::thread::park();
                }
            });
        }
        let all_in = |name: &str| -> bool {
            let tasks = std::fs::read_dir("/proc/self/task").unwrap();
            let cgroups: Vec<String> = tasks
                .flatten()
                .map(|t| std::fs::read_to_string(t.path().join("cgroup")).unwrap_or_default())
                .collect();
            cgroups.len() == threads
                && cgroups.iter().all(|c| {
                    c.lines()
                        .any(|l| l.contains("pids") && l.ends_with(&format!("/{name}")))
                })
        };
        let name = format!("zeroclaw-{}", std::process::id());
        let code = match enter(77) {
            Ok(Some(_)) if !all_in(&name) => 2,
            Ok(Some(cg))
                if std::fs::read_to_string(cg.dir.join("pids.max")).ok() != Some("77\n".into()) =>
            {
                3
            }
            Ok(Some(cg)) => {
                let dir = cg.dir.clone();
                cg.remove();
                if all_in(&name) || dir.exists() { 4 } else { 0 }
            }
            _ => 1,
        };
        crate::sys::exit_now(code)
    }

    fn enter_in_child(threads: usize) {
        if !nix::unistd::geteuid().is_root() || own_cgroup(Controller::Pids).is_none() {
            let why = "needs root and a pids cgroup controller";
            assert_ne!(std::env::var("CI").as_deref(), Ok("true"), "{why}");
            eprintln!("SKIP: {why}");
            return;
        }
        let pid = match crate::sys::fork().unwrap() {
            None => child(threads),
            Some(pid) => pid,
        };
        let status = waitpid(nix::unistd::Pid::from_raw(pid), None).unwrap();
        remove_after(pid as u32);
        let meaning = [
            "ok",
            "no cgroup entered",
            "a thread is outside the cgroup",
            "pids.max not set",
            "the cgroup was not left and removed",
        ];
        match status {
            WaitStatus::Exited(_, 0) => {}
            WaitStatus::Exited(_, code) => panic!(
                "{threads} thread(s): {}",
                meaning.get(code as usize).unwrap_or(&"?")
            ),
            other => panic!("{threads} thread(s): child ended {other:?}"),
        }
    }

    #[test]
    fn a_single_threaded_process_enters_and_leaves() {
        enter_in_child(1);
    }

    #[test]
    fn every_thread_of_a_threaded_process_enters_and_leaves() {
        enter_in_child(3);
    }

    /// In a forked child: enters a memory cgroup, checks its limit and membership, leaves and
    /// removes it.
    #[test]
    fn a_memory_cgroup_bounds_the_tree_and_is_removed() {
        if !crate::host::cgroup::memory_usable() {
            let why = "needs root and a writable memory cgroup controller";
            assert_ne!(std::env::var("CI").as_deref(), Ok("true"), "{why}");
            eprintln!("SKIP: {why}");
            return;
        }
        let limit: u64 = 64 << 20;
        let pid = match crate::sys::fork().unwrap() {
            None => {
                let code = match enter_memory(limit) {
                    Ok(Some(cg)) => {
                        let file = ["memory.limit_in_bytes", "memory.max"]
                            .iter()
                            .find_map(|f| std::fs::read_to_string(cg.dir.join(f)).ok());
                        let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
                        let name = format!("zeroclaw-{}", std::process::id());
                        let dir = cg.dir.clone();
                        if file.as_deref().map(str::trim) != Some(&limit.to_string()) {
                            3
                        } else if !own.lines().any(|l| l.ends_with(&name)) {
                            2
                        } else {
                            cg.remove();
                            if dir.exists() { 4 } else { 0 }
                        }
                    }
                    _ => 1,
                };
                crate::sys::exit_now(code)
            }
            Some(pid) => pid,
        };
        let status = waitpid(nix::unistd::Pid::from_raw(pid), None).unwrap();
        remove_after(pid as u32);
        assert_eq!(
            status,
            WaitStatus::Exited(nix::unistd::Pid::from_raw(pid), 0)
        );
    }
}
