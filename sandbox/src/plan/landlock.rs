//! The Landlock ruleset's paths: one rule on the new root for the namespace backends, each
//! root by its real path with the denied paths carved out for the Landlock-only one.

use std::path::{Path, PathBuf};

use super::carve::subtract_with;
use super::facts::HostFacts;
use super::mounts::existing;
use super::roots::toolchain_roots;
use super::types::LandlockPlan;
use crate::profile::{Network, Profile};

pub(super) fn landlock(
    profile: &Profile,
    facts: &HostFacts,
    namespaced: bool,
    home: &Path,
    tmp: &Path,
) -> LandlockPlan {
    let mut write: Vec<PathBuf> = profile.writable_roots().cloned().collect();
    let read = if namespaced {
        // The new root holds only what may be seen (the read-only roots, the private HOME and
        // /tmp, the writable roots, /dev, /proc; denied paths masked by mounts), so listing
        // and reading it is harmless. Landlock grants a right held on any directory above a
        // file, across mount points, so this one rule covers every root mounted beneath it:
        // a rule per root would repeat it (each costs an open, two fstat and an add_rule).
        write.push(home.to_path_buf());
        write.push(tmp.to_path_buf());
        vec![PathBuf::from("/")]
    } else {
        // The helper opens rule paths refusing every symlink on the way, so name each root by
        // its real path (a home under a symlinked /home keeps its rules).
        let read = existing(facts, &profile.read_only)
            .into_iter()
            .filter(|p| facts.link(p).is_none())
            .collect();
        let read = canonical(facts, read);
        write = canonical(facts, write);
        let hidden = hidden(profile, facts);
        let entries = |dir: &Path| facts.entries.get(dir).cloned();
        let mut read = subtract_with(read, &hidden, &entries);
        // A writable root holding a denied path (a workspace with `.ssh` in it) is carved the
        // same way: its entries get the rights, the denied path gets none. Trade-off, fail
        // closed: a Landlock right on a directory covers everything beneath it, so the root
        // itself keeps no rights of its own — nothing can be listed, created, removed or
        // renamed directly in it (its existing entries stay fully usable); the same holds
        // for every directory between the root and the denied path.
        write = subtract_with(write, &hidden, &entries);
        read.push(PathBuf::from("/proc"));
        if let Some(scratch) = home.parent() {
            write.push(scratch.to_path_buf());
        }
        read
    };
    let devices = if namespaced {
        vec![PathBuf::from("/dev")]
    } else {
        [
            "/dev/null",
            "/dev/zero",
            "/dev/full",
            "/dev/random",
            "/dev/urandom",
            "/dev/ptmx", // new ptys; their slaves come from the supervisor (notify/pty.rs)
        ]
        .iter()
        .map(PathBuf::from)
        .collect()
    };
    LandlockPlan {
        read,
        write,
        devices,
        deny_network: profile.network == Network::Deny,
        connect_tcp: Vec::new(),
        no_symlinks: !namespaced,
        proc_hidden: Vec::new(),
    }
}

/// What the Landlock-only rung leaves out of every rule: without a new root nothing masks the
/// denied paths, so Landlock must. Root owns /etc's root-only files (TLS keys, database
/// auth) and the toolchains' (registry tokens): those too. Each denied path and toolchain
/// file also by its real path; the gather lists the directories above them all
/// (`HostFacts::gather_carving`).
pub(super) fn hidden(profile: &Profile, facts: &HostFacts) -> Vec<PathBuf> {
    let mut hidden = profile.denied.clone();
    hidden.extend(canonical(facts, profile.denied.clone()));
    if facts.root {
        hidden.extend(facts.etc_private.iter().cloned());
        for toolchain in toolchain_roots(profile, facts) {
            let private = facts.toolchain_private(&toolchain).to_vec();
            hidden.extend(canonical(facts, private.clone()));
            hidden.extend(private);
        }
    }
    hidden
}

/// Each path by its real path (symlinks resolved), or as given when it cannot be resolved.
fn canonical(facts: &HostFacts, paths: Vec<PathBuf>) -> Vec<PathBuf> {
    paths.into_iter().map(|p| facts.canonical(&p)).collect()
}
