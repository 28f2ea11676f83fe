//! The Landlock ruleset's paths, and the carving of denied paths out of a root.

use std::path::{Path, PathBuf};

use super::mounts::existing;
use super::scan::{etc_private, toolchain_private, toolchain_roots};
use super::types::LandlockPlan;
use crate::profile::{Network, Profile};

pub(super) fn landlock(
    profile: &Profile,
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
        let read = existing(&profile.read_only)
            .into_iter()
            .filter(|p| std::fs::read_link(p).is_err())
            .collect();
        let read = canonical(read);
        write = canonical(write);
        // Without a new root nothing masks the denied paths: Landlock must leave them out of
        // every rule. Root owns /etc's root-only files (TLS keys, database auth): those too.
        let mut hidden = profile.denied.clone();
        hidden.extend(canonical(profile.denied.clone()));
        if nix::unistd::geteuid().is_root() {
            hidden.extend(etc_private().iter().cloned());
            for toolchain in toolchain_roots(profile) {
                let private = toolchain_private(&toolchain);
                hidden.extend(canonical(private.clone()));
                hidden.extend(private);
            }
        }
        let mut read = subtract(read, &hidden);
        // A writable root holding a denied path (a workspace with `.ssh` in it) is carved the
        // same way: its entries get the rights, the denied path gets none. Trade-off, fail
        // closed: a Landlock right on a directory covers everything beneath it, so the root
        // itself keeps no rights of its own — nothing can be listed, created, removed or
        // renamed directly in it (its existing entries stay fully usable); the same holds
        // for every directory between the root and the denied path.
        write = subtract(write, &hidden);
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
        no_symlinks: !namespaced,
        proc_hidden: Vec::new(),
    }
}

/// Each path by its real path (symlinks resolved), or as given when it cannot be resolved.
fn canonical(paths: Vec<PathBuf>) -> Vec<PathBuf> {
    paths
        .into_iter()
        .map(|p| std::fs::canonicalize(&p).unwrap_or(p))
        .collect()
}

/// Replaces every root that contains a denied path by its children, recursively, leaving the
/// denied paths out (Landlock is an allow-list by hierarchy). Children that are symlinks are
/// left out too: a rule is opened through the link and would land on its target (a link
/// planted in a workspace could point at the denied path itself); a path through a link to an
/// allowed place still resolves to that place's own rule.
pub fn subtract(roots: Vec<PathBuf>, denied: &[PathBuf]) -> Vec<PathBuf> {
    // Paths are compared as bytes, normalized (`.` and repeated or trailing `/` gone): then a
    // byte prefix that ends at a `/` is what `Path::starts_with` tests component by component,
    // at a fraction of the cost for the hundreds of `/etc` entries against every hidden path.
    let normalized = |p: &Path| p.components().collect::<PathBuf>();
    let denied: Vec<PathBuf> = denied.iter().map(|d| normalized(d)).collect();
    let mut out = Vec::new();
    for root in roots {
        subtract_normalized(normalized(&root), &denied, &mut out);
    }
    out
}

/// [`subtract`] of one normalized root (a directory entry joined to one is normalized too).
fn subtract_normalized(root: PathBuf, denied: &[PathBuf], out: &mut Vec<PathBuf>) {
    use std::os::unix::ffi::OsStrExt;
    let key = root.as_os_str().as_bytes();
    let under = |path: &Path| {
        let path = path.as_os_str().as_bytes();
        path.starts_with(key)
            && (path.len() == key.len() || key.ends_with(b"/") || path[key.len()] == b'/')
    };
    if denied.iter().any(|d| d.as_os_str().as_bytes() == key) {
        return;
    }
    if !denied.iter().any(|d| under(d)) {
        out.push(root);
        return;
    }
    let Ok(entries) = std::fs::read_dir(&root) else {
        return;
    };
    for e in entries.flatten() {
        if e.file_type().is_ok_and(|t| !t.is_symlink()) {
            subtract_normalized(e.path(), denied, out);
        }
    }
}
