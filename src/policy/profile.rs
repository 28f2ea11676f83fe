//! Policy to sandbox profile: the session cwd is the writable workspace, allowed roots are
//! added (in `full`, a file tool's target directory, and for `shell` the whole host but the
//! denied paths), forbidden paths are denied at the OS level, network per policy, limits from
//! `[sandbox.limits]`; the environment stays the sandbox crate's allowlist (API keys and
//! tokens never reach a child).

use std::path::Path;
use std::time::Duration;

use zeroclaw_sandbox::{Limits, Network, Profile};

use super::Policy;
use crate::config::{AutonomyLevel, LimitsConfig};

impl Policy {
    /// The profile of one execution in `cwd`; `extra` are (path, writable) roots a `full`
    /// session's file tool reaches outside the cwd.
    pub fn profile(&self, cwd: &Path, extra: &[(&Path, bool)]) -> Profile {
        let network = if self.egress.is_some() {
            Network::Proxy
        } else if self.network {
            Network::Allow
        } else {
            Network::Deny
        };
        let mut profile = Profile::for_workspace(cwd)
            .network(network)
            .limits(limits(&self.limits))
            .umask(self.umask);
        for (root, write) in &self.allowed_roots {
            profile = grant(profile, root, *write);
        }
        if self.level == AutonomyLevel::Full {
            for (root, write) in extra {
                profile = grant(profile, root, *write);
            }
        }
        self.deny_forbidden(profile)
    }

    /// `profile` with every forbidden path denied: the one way a session's profile and
    /// `zeroclaw sandbox run`'s get them. A forbidden dir holding the workspace is denied
    /// too: the sandbox then refuses the profile (the callers refuse such a workspace first:
    /// see [`super::cwd`]).
    pub fn deny_forbidden(&self, mut profile: Profile) -> Profile {
        for path in &self.forbidden {
            profile = profile.deny(path);
        }
        profile
    }

    /// The profile of one `shell` command in `cwd`: [`Policy::profile`], and in `full` the
    /// whole host read-write but the denied, excluded and sandbox-owned paths
    /// ([`super::reach`]).
    pub fn shell_profile(&self, cwd: &Path) -> Profile {
        let mut profile = self.profile(cwd, &[]);
        if self.level == AutonomyLevel::Full {
            for root in super::reach::host_roots(&profile) {
                profile = profile.allow_write(root);
            }
        }
        profile
    }
}

fn grant(profile: Profile, root: &Path, write: bool) -> Profile {
    if write {
        profile.allow_write(root)
    } else {
        profile.allow_read(root)
    }
}

/// `[sandbox.limits]` as the sandbox crate's limits.
pub fn limits(config: &LimitsConfig) -> Limits {
    Limits {
        wall_time: Duration::from_secs(config.wall_time_secs.max(1)),
        cpu_secs: config.cpu_secs,
        memory_bytes: config.memory_mb << 20,
        processes: config.processes,
        file_size_bytes: config.file_size_mb << 20,
        open_files: config.open_files,
        output_bytes: config.output_bytes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    #[test]
    fn the_profile_carries_the_configured_umask_and_the_config_dirs_denied() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("config.toml"),
            "[sandbox]\numask = \"027\"\n",
        )
        .unwrap();
        let config = Config::load_with_env(dir.path(), Vec::new()).unwrap();
        let ws = tempfile::tempdir().unwrap();
        for policy in [
            Policy::for_agent(&config, "default"),
            Policy::for_config(&config),
        ] {
            let profile = policy.shell_profile(ws.path());
            assert_eq!(profile.umask, 0o027);
            let config_dir = super::super::paths::normalize(dir.path());
            assert!(profile.denied.contains(&config_dir), "{:?}", profile.denied);
        }
        assert_eq!(Policy::default().profile(ws.path(), &[]).umask, 0o022);
    }
}
