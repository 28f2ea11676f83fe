//! Facts about this machine that both sides read: where our cgroups live, whether a pid
//! namespace's `pid_max` can bound a tree, the host's per-user kernel counts, the threads of
//! this process, the root-only files of `/etc`, `/proc` and the toolchains (`scan`), the mount table
//! (`mountinfo`, its one parser). Reads only (no file is written, no process started); the writes belong to the
//! helper.

pub(crate) mod cgroup;
pub mod mountinfo;
pub mod pid_max;
pub mod scan;
pub(crate) mod user_counts;

/// The threads of this process.
pub(crate) fn thread_count() -> std::io::Result<usize> {
    Ok(std::fs::read_dir("/proc/self/task")?.count())
}
