//! Shared by the cgroup tests: where this process's cgroup of a controller lives, and
//! the calls' cgroups appearing below it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// This process's cgroup of `controller` (v1 first, else a v2 cgroup that delegates it):
/// helpers started from here make theirs below it.
pub fn parent(controller: &str) -> Option<PathBuf> {
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    text.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, rel) = (parts.next()?, parts.next()?, parts.next()?);
        let rel = rel.trim_start_matches('/');
        if controllers.split(',').any(|c| c == controller) {
            return Some(Path::new("/sys/fs/cgroup").join(controller).join(rel));
        }
        let v2 = Path::new("/sys/fs/cgroup").join(rel);
        let delegated = std::fs::read_to_string(v2.join("cgroup.subtree_control"))
            .is_ok_and(|c| c.contains(controller));
        (controllers.is_empty() && delegated).then_some(v2)
    })
}

/// The calls' cgroups under `parent` now.
pub fn call_cgroups(parent: &Path) -> BTreeSet<String> {
    let Ok(dir) = std::fs::read_dir(parent) else {
        return BTreeSet::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|name| name.starts_with("zeroclaw-"))
        .collect()
}

/// Those of the calls' cgroups under `parent` that are not in `before`, once `done` holds for
/// them or after 5 s.
pub async fn new_cgroups(
    parent: &Path,
    before: &BTreeSet<String>,
    done: impl Fn(usize) -> bool,
) -> Vec<String> {
    for _ in 0..500 {
        let new: Vec<String> = call_cgroups(parent).difference(before).cloned().collect();
        if done(new.len()) {
            return new;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    call_cgroups(parent).difference(before).cloned().collect()
}

/// Held by each test that watches the calls' cgroups for its whole run: on cgroup v2 the pids
/// and the memory test look below the same directory, and each must see only its own calls'.
pub async fn exclusive() -> tokio::sync::MutexGuard<'static, ()> {
    static CGROUPS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    CGROUPS.lock().await
}
