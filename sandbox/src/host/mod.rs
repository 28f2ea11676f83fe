//! Facts about this machine that both sides read: where our cgroups live, whether a pid
//! namespace's `pid_max` can bound a tree, the host's per-user kernel counts, the threads of
//! this process, whether bwrap refuses `--cap-add` to us, the root-only files of `/etc`,
//! `/proc` and the toolchains (`scan`), the mount table (`mountinfo`, its one parser). Reads
//! only (no file is written, no process started); the writes belong to the helper.

pub(crate) mod cgroup;
pub mod mountinfo;
pub mod pid_max;
pub mod scan;
pub(crate) mod user_counts;

/// Whether `bwrap` is installed setuid root and we are not root: it then refuses
/// `--cap-add`, so its inner stage keeps no capability (no per-user limits, no transparent
/// egress).
pub fn bwrap_refuses_cap_add(bwrap: &std::path::Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let setuid = std::fs::metadata(bwrap).is_ok_and(|m| m.mode() & libc::S_ISUID != 0);
    setuid && !nix::unistd::geteuid().is_root()
}

/// The threads of this process.
pub(crate) fn thread_count() -> std::io::Result<usize> {
    Ok(std::fs::read_dir("/proc/self/task")?.count())
}
