//! Which read-only roots need care when root launches: the toolchain directories under
//! `$HOME` and the roots attached unowned (idmapped).

use std::path::PathBuf;

use super::facts::{HostFacts, Kind};
use crate::profile::Profile;

/// `/etc` and the exposed toolchain directories under `$HOME` when root launches: root inside
/// would own their root-only files (keys, registry tokens such as a node prefix's
/// `etc/npmrc`). Only roots that are plain read-only directories with no other root below
/// them (those would be bound unmapped).
pub(super) fn unowned_roots(profile: &Profile, facts: &HostFacts) -> Vec<PathBuf> {
    if !facts.root {
        return Vec::new();
    }
    let etc = PathBuf::from("/etc");
    let candidates = std::iter::once(etc).chain(toolchain_roots(profile, facts));
    candidates
        .filter(|root| {
            let below = profile
                .read_only
                .iter()
                .chain(profile.writable_roots())
                .any(|r| r.starts_with(root) && r != root);
            let plain_dir = facts.kind(root) == Some(Kind::Dir);
            plain_dir && !below && profile.read_only.contains(root)
        })
        .collect()
}

/// The read-only roots that are toolchain directories under `$HOME` ([`crate::profile::HOME_TOOLCHAINS`]).
pub(super) fn toolchain_roots(profile: &Profile, facts: &HostFacts) -> Vec<PathBuf> {
    let Some(home) = &facts.home else {
        return Vec::new();
    };
    crate::profile::HOME_TOOLCHAINS
        .iter()
        .map(|t| home.join(t))
        .filter(|t| profile.read_only.contains(t) && facts.exists(t))
        .collect()
}
