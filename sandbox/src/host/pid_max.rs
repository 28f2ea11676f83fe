//! Whether the namespace backend can bound a tree's processes with its pid namespace's
//! `pid_max` (Linux 6.14 or later; older kernels have one global value, never written), and
//! the value it would write. Reads only; the write is the helper's (`helper/pidns.rs`).

/// The smallest value the kernel accepts (`RESERVED_PIDS + 1`).
const MIN_PID_MAX: u64 = 301;

pub(crate) const PID_MAX: &str = "/proc/sys/kernel/pid_max";

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
pub(crate) fn per_namespace_pid_max() -> bool {
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
