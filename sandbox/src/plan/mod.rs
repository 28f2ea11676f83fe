//! The plan: a [`Profile`] resolved for one backend into exact instructions for the helper
//! (mount operations, Landlock paths, seccomp switches, environment), sent as JSON. Built
//! purely ([`build`]) from the [`HostFacts`] gathered beforehand ([`HostFacts::gather`], in
//! `gather.rs`, the one module here that reads the host). A call's plan is made by the
//! daemon side's [`planner`] (the checks every backend makes, `build`, the [`bubblewrap`]
//! section, the git section the daemon hands in, and [`egress`], the plan's part of
//! `network = proxy`). Its concerns are typed sections (`sections.rs`): the network and
//! egress, the process's limits, bubblewrap, the private HOME.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::backend::Backend;
use crate::profile::{Network, Profile};

mod carve;
pub mod egress;
mod env;
mod facts;
mod gather;
mod git_facts;
mod home_binds;
mod landlock;
pub mod layer;
mod mounts;
pub(crate) mod planner;
mod roots;
mod sections;
pub mod shape;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_facts;
mod types;

pub use carve::subtract_with;
pub use env::environment;
#[cfg(test)]
pub use facts::NO_GIT;
pub use facts::{GitReader, HostFacts, Kind, PathFact};
pub use gather::subtract_on_host;
pub use git_facts::{DotGit, GitDir, GitFacts, GitTarget};
use landlock::landlock;
#[cfg(test)]
use mounts::depth;
pub use mounts::{guarded_denied, mounts, placeholders, scrub_list};
use mounts::{mounts_with, placeholders_with};
use roots::unowned_roots;
pub use sections::{
    BwrapPlan, EgressPlan, GIT_GLOBAL_NAME, GitGlobal, HomePlan, ProcessPlan, ProxyPorts,
};
pub use types::{
    DeferredRoot, LANDLOCK_NET_ABI, LandlockPlan, MountOp, Placeholder, Plan, SeccompPlan, WarmPlan,
};

/// Gathers the host's facts for `backend` and `profile` (no git config targets: the plan
/// cannot read them itself), then builds (tests of the callers); a bubblewrap plan gets the
/// section the planner adds ([`bubblewrap`]), with a stand-in executable.
#[cfg(test)]
pub(crate) fn build_on_host(
    backend: Backend,
    profile: &Profile,
    argv: Vec<OsString>,
    scratch: Option<PathBuf>,
) -> Plan {
    let facts = HostFacts::gather(backend, profile, NO_GIT);
    let mut plan = build(backend, profile, &facts, argv, scratch);
    plan.bwrap = stand_in_bubblewrap(backend, &facts);
    plan
}

/// The bubblewrap section the planner would add on `backend`, with a stand-in executable
/// (tests that build plans without a planner).
#[cfg(test)]
pub(crate) fn stand_in_bubblewrap(backend: Backend, facts: &HostFacts) -> Option<BwrapPlan> {
    let path = (backend == Backend::Bubblewrap).then(|| PathBuf::from("/usr/bin/bwrap"));
    bubblewrap(backend, facts, path, false)
}

/// The bubblewrap section of a plan for `backend` on a host described by `facts`, with the
/// bwrap executable `path` (none without one) and whether it refuses `--cap-add`: started by
/// root, bwrap keeps the inner stage what sealing the read-only roots takes. Added by the
/// planner, which knows the executable.
pub fn bubblewrap(
    backend: Backend,
    facts: &HostFacts,
    path: Option<PathBuf>,
    refuses_cap_add: bool,
) -> Option<BwrapPlan> {
    path.map(|path| BwrapPlan {
        path,
        refuses_cap_add,
        seal: backend == Backend::Bubblewrap && facts.root,
    })
}

/// Resolves `profile` for `backend` on a host described by `facts` (gathered for the same
/// backend and profile); no I/O. `scratch` is the Landlock-only backend's private dir.
pub fn build(
    backend: Backend,
    profile: &Profile,
    facts: &HostFacts,
    argv: Vec<OsString>,
    scratch: Option<PathBuf>,
) -> Plan {
    let extended = facts.extend(profile);
    let profile = extended.as_ref();
    let namespaced = matches!(backend, Backend::Namespaces | Backend::Bubblewrap);
    let unowned = if backend == Backend::Namespaces {
        unowned_roots(profile, facts)
    } else {
        Vec::new()
    };
    let root_only_proc = if facts.root && backend != Backend::None {
        facts.proc_private.clone()
    } else {
        Vec::new()
    };
    let (home, tmp) = match (&scratch, namespaced) {
        (Some(s), false) => (s.join("home"), s.join("tmp")),
        _ => (
            facts
                .home
                .clone()
                .unwrap_or_else(|| PathBuf::from("/home/sandbox")),
            PathBuf::from("/tmp"),
        ),
    };
    let mounts = if namespaced {
        mounts_with(profile, facts, &home, &unowned)
    } else {
        Vec::new()
    };
    // The user's git identity and safe settings, in the private HOME (as [`GIT_GLOBAL_NAME`]):
    // never where HOME is a host directory (a root holding it: no tmpfs of the call's there).
    let private_home = match namespaced {
        true => mounts
            .iter()
            .any(|op| matches!(op, MountOp::Tmpfs { path, .. } if *path == home)),
        false => backend == Backend::Landlock && scratch.is_some(),
    };
    let git_global = private_home.then(|| GitGlobal {
        path: home.join(GIT_GLOBAL_NAME),
        text: facts.git_global.clone(),
    });
    let mut env = environment(profile, facts, &home, &tmp);
    if let Some(git) = &git_global {
        env::git_config_global(&mut env, &git.path);
    }
    Plan {
        backend,
        env,
        argv,
        op: None,
        cwd: profile.cwd.clone(),
        mounts,
        unowned,
        proc_masks: if namespaced {
            root_only_proc.clone()
        } else {
            Vec::new()
        },
        placeholders: if namespaced {
            placeholders_with(profile, facts, &facts.git.targets)
        } else {
            Vec::new()
        },
        protected: profile.protected.clone(),
        denied: profile.denied.clone(),
        scrub: scrub_list(profile, facts),
        landlock: if backend == Backend::None {
            LandlockPlan::default() // unconfined: no ruleset, no /etc scan
        } else {
            let mut rules = landlock(profile, facts, namespaced, &home, &tmp);
            if backend == Backend::Landlock {
                rules.write.extend(home_binds::write_rules(profile));
            }
            LandlockPlan {
                proc_hidden: if namespaced {
                    Vec::new()
                } else {
                    root_only_proc
                },
                ..rules
            }
        },
        seccomp: SeccompPlan {
            deny_inet: profile.network == Network::Deny,
            deny_attr_changes: !namespaced,
            proxy_only: None,
        },
        allow_partial: false,
        egress: EgressPlan {
            own_namespace: profile.network != Network::Allow,
            ports: None,
            on_host: false,
            transparent: None,
            inner_namespaces: false,
        },
        process: ProcessPlan {
            limits: profile.limits.clone(),
            umask: profile.umask,
            user_limits: if namespaced {
                facts.user_limits.clone()
            } else {
                Vec::new()
            },
        },
        home: HomePlan {
            scratch,
            links: if backend == Backend::Landlock {
                home_binds::links(profile)
            } else {
                Vec::new()
            },
            git_global,
        },
        bwrap: None,
        shape: None,
        launcher_pid: facts.launcher_pid,
        warm: None,
    }
}
