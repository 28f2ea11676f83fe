//! The plan: a [`Profile`] resolved for one backend into exact instructions for the helper
//! (mount operations, Landlock paths, seccomp switches, environment). Pure; sent as JSON.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::backend::Backend;
use crate::profile::{Network, Profile, home_dir};

mod env;
mod landlock;
mod mounts;
mod scan;
#[cfg(test)]
mod tests;
mod types;

pub use env::environment;
use landlock::landlock;
pub use landlock::subtract;
#[cfg(test)]
use mounts::depth;
pub use mounts::{guarded_denied, mounts, placeholders, scrub_list};
use mounts::{mounts_with, placeholders_with};
use scan::unowned_roots;
pub use scan::{
    etc_private, private_files, proc_private, toolchain_private, toolchain_roots, unowned_fallback,
};
pub use types::{LandlockPlan, MountOp, Placeholder, Plan, SeccompPlan};

/// Where the private HOME lives inside the sandbox on the namespace backends.
fn sandbox_home() -> PathBuf {
    home_dir().unwrap_or_else(|| PathBuf::from("/home/sandbox"))
}

/// Resolves `profile` for `backend`. `scratch` is the Landlock-only backend's private dir.
pub fn build(
    backend: Backend,
    profile: &Profile,
    argv: Vec<OsString>,
    scratch: Option<PathBuf>,
) -> Plan {
    let git_targets = crate::gitconfig::targets(&profile.workspace);
    let mut extended;
    let profile = if git_targets.is_empty() {
        profile
    } else {
        extended = profile.clone();
        extended
            .protected
            .extend(git_targets.iter().map(|t| t.path.clone()));
        &extended
    };
    let namespaced = matches!(backend, Backend::Namespaces | Backend::Bubblewrap);
    let unowned = if backend == Backend::Namespaces {
        unowned_roots(profile)
    } else {
        Vec::new()
    };
    let root_only_proc = if nix::unistd::geteuid().is_root() && backend != Backend::None {
        // A new network namespace has its own `/proc/sys/net`, not the host's.
        proc_private(profile.network != Network::Deny)
    } else {
        Vec::new()
    };
    let (home, tmp) = match (&scratch, namespaced) {
        (Some(s), false) => (s.join("home"), s.join("tmp")),
        _ => (sandbox_home(), PathBuf::from("/tmp")),
    };
    Plan {
        backend,
        env: environment(profile, &home, &tmp),
        argv,
        op: None,
        cwd: profile.cwd.clone(),
        mounts: if namespaced {
            mounts_with(profile, &home, &unowned)
        } else {
            Vec::new()
        },
        unowned,
        proc_masks: if namespaced {
            root_only_proc.clone()
        } else {
            Vec::new()
        },
        placeholders: if namespaced {
            placeholders_with(profile, &git_targets)
        } else {
            Vec::new()
        },
        protected: profile.protected.clone(),
        denied: profile.denied.clone(),
        scrub: scrub_list(profile),
        landlock: if backend == Backend::None {
            LandlockPlan::default() // unconfined: no ruleset, no /etc scan
        } else {
            LandlockPlan {
                proc_hidden: if namespaced {
                    Vec::new()
                } else {
                    root_only_proc
                },
                ..landlock(profile, namespaced, &home, &tmp)
            }
        },
        seccomp: SeccompPlan {
            deny_inet: profile.network == Network::Deny,
            deny_attr_changes: !namespaced,
        },
        limits: profile.limits.clone(),
        allow_partial: false,
        unshare_net: profile.network == Network::Deny,
        scratch,
        bwrap: None,
        seal_in_bwrap: backend == Backend::Bubblewrap && nix::unistd::geteuid().is_root(),
        launcher_pid: std::process::id(),
        warm: false,
        user_limits: if namespaced {
            crate::host::user_counts::host_limits()
        } else {
            Vec::new()
        },
    }
}
