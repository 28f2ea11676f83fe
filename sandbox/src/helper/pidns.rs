//! The process limit of the namespace backend: since Linux 6.14 `kernel.pid_max` belongs to
//! each pid namespace and its owner may lower it, so the namespace's init caps how many pids
//! the tree can hold. Unlike `RLIMIT_NPROC` it binds uid 0 too, and it costs one write where a
//! pids cgroup costs a migration (an RCU grace period, 5–10 ms, on cgroup v1).
//!
//! On older kernels `pid_max` is global and a uid-0 writer would change the host's value, so
//! the write is never attempted there (the pids cgroup is used instead).

use crate::error::{SetupError, Stage};
use crate::host::pid_max::{PID_MAX, per_namespace_pid_max, pid_max_for};

/// Called by the init of the new pid namespace (it holds `CAP_SYS_ADMIN` over it): lowers the
/// namespace's `pid_max` and checks that the value took.
pub fn apply(processes: u64) -> Result<(), SetupError> {
    let Some(value) = pid_max_for(processes).filter(|_| per_namespace_pid_max()) else {
        return Err(SetupError::new(
            Stage::Init,
            format!("no per-namespace pid_max for a limit of {processes} processes"),
        ));
    };
    let fail = |call: String, e: std::io::Error| SetupError::os(Stage::Init, call, &e);
    std::fs::write(PID_MAX, value.to_string())
        .map_err(|e| fail(format!("write({PID_MAX}, {value})"), e))?;
    let read = std::fs::read_to_string(PID_MAX).map_err(|e| fail(format!("read({PID_MAX})"), e))?;
    if read.trim() == value.to_string() {
        Ok(())
    } else {
        Err(SetupError::new(
            Stage::Init,
            format!("{PID_MAX} reads {} after writing {value}", read.trim()),
        ))
    }
}
