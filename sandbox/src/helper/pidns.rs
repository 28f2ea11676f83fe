//! The process limit of the namespace backend: since Linux 6.14 `kernel.pid_max` belongs to
//! each pid namespace and its owner may lower it, so the namespace's init caps how many pids
//! the tree can hold. Unlike `RLIMIT_NPROC` it binds uid 0 too, and it costs one write where a
//! pids cgroup costs a migration (an RCU grace period, 5–10 ms, on cgroup v1).
//!
//! On older kernels `pid_max` is global and a uid-0 writer would change the host's value, so
//! the write is never attempted there (the pids cgroup is used instead).

use crate::error::{SetupError, Stage};

/// The smallest value the kernel accepts (`RESERVED_PIDS + 1`).
const MIN_PID_MAX: u64 = 301;

const PID_MAX: &str = "/proc/sys/kernel/pid_max";

/// `pid_max` holding the init plus `processes` processes (pids `1..=processes + 1`), or
/// `None` when that is below what the kernel accepts.
pub fn pid_max_for(processes: u64) -> Option<u64> {
    let value = processes.checked_add(2)?;
    (value >= MIN_PID_MAX).then_some(value)
}

/// Whether the namespace backend can bound `processes` this way on this kernel.
pub fn usable(processes: u64) -> bool {
    per_namespace_pid_max() && pid_max_for(processes).is_some()
}

/// Linux 6.14 or later.
fn per_namespace_pid_max() -> bool {
    let Ok(uts) = nix::sys::utsname::uname() else {
        return false;
    };
    kernel_at_least(&uts.release().to_string_lossy(), (6, 14))
}

fn kernel_at_least(release: &str, want: (u32, u32)) -> bool {
    let mut parts = release
        .split(|c: char| !c.is_ascii_digit())
        .map(|p| p.parse::<u32>().unwrap_or(0));
    let major = parts.next().unwrap_or(0);
    let minor = parts.next().unwrap_or(0);
    (major, minor) >= want
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions() {
        assert!(kernel_at_least("6.18.44-fc-v857", (6, 14)));
        assert!(kernel_at_least("6.14.0", (6, 14)));
        assert!(kernel_at_least("7.0.1", (6, 14)));
        assert!(!kernel_at_least("6.13.9-arch1", (6, 14)));
        assert!(!kernel_at_least("5.19.0", (6, 14)));
        assert!(!kernel_at_least("garbage", (6, 14)));
    }

    #[test]
    fn bounds() {
        assert_eq!(pid_max_for(1024), Some(1026));
        assert_eq!(pid_max_for(299), Some(301));
        assert_eq!(pid_max_for(298), None);
        assert_eq!(pid_max_for(u64::MAX), None);
    }
}
