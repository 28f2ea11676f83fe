//! Probes the machine once (cached): Landlock ABI, seccomp, whether user namespaces really
//! work (a forked child tries them), bubblewrap presence plus a preflight run, cgroup v2, what
//! can bound a call's process count (uid, per-namespace `pid_max`, a writable pids cgroup),
//! `sandbox-exec` on macOS. Chooses the rung of the ladder and explains it as a [`Report`],
//! naming per rung the mechanism that really enforces each limit and what nothing enforces.
//! A caller that must answer at once may keep the probes across processes ([`probes_kept_in`]).

mod choice;
mod guarantees;
mod kept;
mod probes;
mod root_files;
#[cfg(test)]
mod tests;
mod types;

pub use choice::{choose, report, report_from, statuses};
pub use guarantees::{guarantees, guarantees_here};
pub use kept::{FILE_NAME as KEPT_PROBES_FILE, probes_kept_in};
pub use probes::{FirstRunTries, Live, bwrap_path, probes, process_limit};
pub use root_files::{LIST_CAP, RootReadable, SCAN_CAP, root_readable};
pub use types::{
    BackendStatus, Check, FULL_LANDLOCK_ABI, Guarantee, ProbeSource, Probes, ProcessLimitProbe,
    Report,
};
