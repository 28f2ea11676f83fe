//! Policy to sandbox profile: the session cwd is the writable workspace, allowed roots are
//! added (in `full`, a file tool's target directory, and for `shell` the whole host but the
//! denied paths: read-only, or read-write under `full_host_writes`), forbidden paths are denied
//! at the OS level, the never-writable paths under a writable root are kept read-only, network
//! per policy, limits from `[sandbox.limits]`; the environment stays the sandbox crate's
//! allowlist (API keys and tokens never reach a child).

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
            .egress_ports(self.egress.as_ref().map(|e| e.ports()).unwrap_or_default())
            .limits(limits(&self.limits))
            .umask(self.umask)
            .parent_worktree(self.parent_worktree);
        for (root, write) in &self.allowed_roots {
            profile = grant(profile, root, *write);
        }
        if self.level == AutonomyLevel::Full {
            for (root, write) in extra {
                // Outside the writable roots, a `full` file tool only reads (the policy has
                // refused such a write already), unless the operator named host writes. A
                // root inside a writable one is left to it: a read-only bind of it would win.
                let write = *write && self.full_host_writes;
                if write || !profile.writable_roots().any(|w| root.starts_with(w)) {
                    profile = grant(profile, root, write);
                }
            }
        }
        if let Some(layers) = self.layers_for(cwd) {
            profile = profile.land_through(layers);
        }
        let profile = self.deny_forbidden(profile);
        self.keep_never_writable(profile, cwd)
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
    /// whole host readable but the denied, excluded and sandbox-owned paths
    /// ([`super::reach`]), and writable where [`Policy::full_write_roots`] says.
    pub fn shell_profile(&self, cwd: &Path) -> Profile {
        let mut profile = self.profile(cwd, &[]);
        if self.level == AutonomyLevel::Full {
            let write = self.full_write_roots(&profile, cwd);
            // A read-only root at or below a writable one would cover it (the later bind
            // wins on some backends): those stay writable only. One the profile already has
            // (a home toolchain) is not bound twice.
            let read: Vec<_> = super::reach::host_read_roots(&profile)
                .into_iter()
                .filter(|r| {
                    !profile
                        .writable_roots()
                        .chain(&write)
                        .any(|w| r.starts_with(w))
                })
                .filter(|r| !profile.read_only.contains(r))
                .collect();
            for root in read {
                profile = profile.allow_read(root);
            }
            for root in write {
                profile = profile.allow_write(root);
            }
        }
        profile
    }

    /// The writable roots a `full` shell gets besides the workspace and the read-write allowed
    /// roots (already in `profile`): none by default; under `full_host_writes`, the host's roots
    /// carved around every never-writable path. The place for more writable roots of a `full`
    /// session.
    pub fn full_write_roots(&self, profile: &Profile, cwd: &Path) -> Vec<std::path::PathBuf> {
        if !self.full_host_writes {
            return Vec::new();
        }
        let never: Vec<_> = self
            .never_writable_for(cwd)
            .into_iter()
            .map(|e| e.path)
            .collect();
        super::reach::host_roots(profile, &never)
    }

    /// Each never-writable path under one of `profile`'s writable roots (and not already
    /// denied) stays read-only: protected when it exists (a read-only bind on the namespace
    /// backends), denied for the run when it does not (nothing can be created there; the
    /// sandbox removes its placeholder afterwards).
    fn keep_never_writable(&self, mut profile: Profile, cwd: &Path) -> Profile {
        for entry in self.never_writable_for(cwd) {
            let path = &entry.path;
            let under_writable = profile.writable_roots().any(|r| path.starts_with(r));
            let denied = profile.denied.iter().any(|d| path.starts_with(d));
            if !under_writable || denied {
                continue;
            }
            profile = if path.symlink_metadata().is_ok() {
                profile.protect(path)
            } else {
                profile.deny(path)
            };
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
        written_bytes: config.written_mb << 20,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::policy::never_writable;

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
            let config_dir = super::super::resolve::normalize(dir.path());
            assert!(profile.denied.contains(&config_dir), "{:?}", profile.denied);
        }
        assert_eq!(Policy::default().profile(ws.path(), &[]).umask, 0o022);
    }

    #[test]
    fn a_never_writable_path_in_a_writable_root_stays_read_only_or_is_denied_when_missing() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().canonicalize().unwrap();
        std::fs::write(home.join(".bashrc"), "").unwrap();
        std::fs::create_dir(home.join("project")).unwrap();
        let policy = Policy {
            never_writable: never_writable::Lazy::of(Some(&home), None, &home.join("state")),
            ..Policy::default()
        };
        let at_home = policy.profile(&home, &[]);
        assert!(at_home.protected.contains(&home.join(".bashrc")));
        assert!(at_home.denied.contains(&home.join(".bash_profile")));
        let in_project = policy.profile(&home.join("project"), &[]);
        assert!(!in_project.protected.contains(&home.join(".bashrc")));
        assert!(!in_project.denied.contains(&home.join(".bash_profile")));
    }

    #[test]
    fn a_full_shell_writes_the_host_only_under_full_host_writes() {
        let dir = tempfile::Builder::new().tempdir_in("/var/tmp").unwrap();
        let ws = dir.path().canonicalize().unwrap();
        let mut policy = Policy {
            level: AutonomyLevel::Full,
            ..Policy::default()
        };
        let profile = policy.shell_profile(&ws);
        assert_eq!(profile.writable_roots().collect::<Vec<_>>(), [&ws]);
        assert!(
            profile
                .read_only
                .iter()
                .any(|r| Path::new("/usr/bin").starts_with(r) || r.starts_with("/usr"))
        );
        policy.full_host_writes = true;
        let bin = policy
            .never_writable
            .entries()
            .iter()
            .find(|e| e.why == never_writable::Why::OnPath);
        let profile = policy.shell_profile(&ws);
        assert!(profile.read_write.len() > 1, "{:?}", profile.read_write);
        if let Some(bin) = bin {
            let covered = profile.read_write.iter().any(|r| bin.path.starts_with(r));
            assert!(!covered, "{} is writable", bin.path.display());
        }
    }
}
