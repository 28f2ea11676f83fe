//! Per-user kernel counts of the child's user namespace (`/proc/sys/user/max_*`): the host's
//! values and the child's shares, read here; written by the helper (`helper/ucounts.rs`). The kernel
//! charges a user namespace's inotify instances and watches to every user namespace up to the
//! host's, so a child holding the host's 128 inotify instances left the host's same uid (the
//! daemon included) with EMFILE. The namespace backend's init, and the bubblewrap backend's
//! inner stage (bwrap leaves it `CAP_SYS_RESOURCE` for this, dropped with the rest before the
//! exec; a setuid-root bwrap refuses that to other users, whose limits then stay as they
//! are), set a quarter of the host's inotify limits in the child's user namespace. The
//! host's values are read once per launcher process, when it plans a run
//! ([`host_limits`]), and travel in the plan: inside the namespace the files show its own.
//! The other counts there (namespaces, fanotify) stay as they are: the seccomp filter refuses
//! creating any of them. The Landlock-only rung has no user namespace: its counts are the
//! host uid's (`doctor` says so).

pub(crate) const DIR: &str = "/proc/sys/user";

/// Each count, with the share of the host's maximum the child gets (`None`: none at all).
/// Each write costs a cold start tens of µs, so only the counts the seccomp filter leaves
/// creatable are here.
const COUNTS: &[(&str, Option<u64>)] = &[
    ("max_inotify_instances", Some(4)),
    ("max_inotify_watches", Some(4)),
];

/// The host's values, read once per process ([`UserLimits::of_host`], by name): for a plan.
pub fn host_limits() -> Vec<(String, u64)> {
    static HOST: std::sync::OnceLock<Vec<(String, u64)>> = std::sync::OnceLock::new();
    HOST.get_or_init(|| UserLimits::of_host().by_name()).clone()
}

/// The maxima for a child's user namespace, by file name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserLimits(pub(crate) Vec<(&'static str, u64)>);

impl UserLimits {
    /// From the host's values (read in the host's user namespace); a count this kernel lacks
    /// is left out.
    pub fn of_host() -> UserLimits {
        let host = |name: &str| -> Option<u64> {
            std::fs::read_to_string(format!("{DIR}/{name}"))
                .ok()?
                .trim()
                .parse()
                .ok()
        };
        UserLimits(
            COUNTS
                .iter()
                .filter_map(|(name, share)| Some((*name, child_max(host(name)?, *share))))
                .collect(),
        )
    }

    /// The maxima by file name, to travel in a plan.
    pub fn by_name(&self) -> Vec<(String, u64)> {
        self.0.iter().map(|(n, v)| ((*n).to_owned(), *v)).collect()
    }

    /// The maxima a plan carries; names this module does not know are left out.
    pub fn from_names(names: &[(String, u64)]) -> UserLimits {
        UserLimits(
            names
                .iter()
                .filter_map(|(n, v)| COUNTS.iter().find(|(c, _)| c == n).map(|(c, _)| (*c, *v)))
                .collect(),
        )
    }
}

/// The child's maximum for a host maximum: `host / share` (at least 1), or 0.
fn child_max(host: u64, share: Option<u64>) -> u64 {
    share.map_or(0, |s| (host / s).max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_child_gets_a_share_of_the_host() {
        assert_eq!(child_max(128, Some(4)), 32);
        assert_eq!(child_max(2, Some(4)), 1);
        assert_eq!(child_max(96365, None), 0);
        let limits = UserLimits::of_host();
        if std::path::Path::new(DIR)
            .join("max_inotify_instances")
            .exists()
        {
            let (_, v) = limits
                .0
                .iter()
                .find(|(n, _)| *n == "max_inotify_instances")
                .unwrap();
            assert!(*v >= 1);
        }
    }
}
