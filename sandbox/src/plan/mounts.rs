//! The new root of the namespace backends: mount operations, placeholders created before
//! mounting, and paths scrubbed after the run.

use std::path::{Path, PathBuf};

use super::carve::{at_or_below, normalized};
use super::facts::{HostFacts, Kind};
use super::roots::toolchain_roots;
use super::types::{MountOp, Placeholder};
use crate::profile::Profile;

/// The new root: read-only roots, private HOME and /tmp, writable roots, the persistent
/// directories in the HOME (`home_binds.rs`), pinned parents of
/// protected and guarded denied paths, protected paths read-only, denied paths masked (also,
/// inside a writable root, when they do not exist yet: see [`guarded_denied`]). Parents
/// before children. A root the host removes before it is mounted is skipped (`optional`):
/// every read-only root, and a writable one that holds nothing else of the root and no
/// protected or denied path (another program's directory carved out of `/var/tmp` for a
/// `full` shell). The workspace, a writable root holding a guarded path, a pin and a
/// protected path must be there: the call fails, naming it.
pub fn mounts(profile: &Profile, facts: &HostFacts, home: &Path) -> Vec<MountOp> {
    mounts_with(profile, facts, home, &[])
}

/// Like [`mounts`]; root-only files under `unowned` roots are left to the helper.
pub(super) fn mounts_with(
    profile: &Profile,
    facts: &HostFacts,
    home: &Path,
    unowned: &[PathBuf],
) -> Vec<MountOp> {
    let mut ops = Vec::new();
    for root in existing(facts, &profile.read_only) {
        ops.push(bind_or_link(facts, &root));
    }
    let home_allowed = profile
        .read_only
        .iter()
        .chain(profile.writable_roots())
        .any(|r| home.starts_with(r));
    if !home_allowed {
        ops.push(MountOp::Tmpfs {
            path: home.to_path_buf(),
            mode: 0o700,
        });
    }
    ops.push(MountOp::Tmpfs {
        path: PathBuf::from("/tmp"),
        mode: 0o1777,
    });
    for root in existing(facts, profile.writable_roots()) {
        ops.push(MountOp::Bind {
            path: root,
            rw: true,
            optional: false,
        });
    }
    super::home_binds::mounts(profile, facts, home, !home_allowed, &mut ops);
    ops.extend(protected_mounts(profile, facts));
    for op in denied_mounts(profile, facts) {
        if !ops.contains(&op) {
            ops.push(op);
        }
    }
    ops.extend(masks(profile, facts, &ops, unowned));
    let held = |root: &Path| {
        ops.iter()
            .any(|op| op.path() != root && op.path().starts_with(root))
            || profile
                .protected
                .iter()
                .chain(&profile.denied)
                .any(|g| g.starts_with(root))
    };
    let vanishable: Vec<bool> = ops
        .iter()
        .map(|op| match op {
            MountOp::Bind { path, rw: true, .. } => *path != profile.workspace && !held(path),
            _ => false,
        })
        .collect();
    for (op, may_vanish) in ops.iter_mut().zip(vanishable) {
        if let MountOp::Bind { optional, .. } = op
            && may_vanish
        {
            *optional = true;
        }
    }
    ops.sort_by_cached_key(|op| depth(op.path()));
    ops
}

pub(super) fn existing<'a>(
    facts: &HostFacts,
    paths: impl IntoIterator<Item = &'a PathBuf>,
) -> Vec<PathBuf> {
    paths
        .into_iter()
        .filter(|p| facts.exists(p))
        .cloned()
        .collect()
}

/// A read-only root: the same symlink when it is one, else an optional read-only bind.
fn bind_or_link(facts: &HostFacts, root: &Path) -> MountOp {
    match facts.link(root) {
        Some(target) => MountOp::Symlink {
            path: root.to_path_buf(),
            target: target.to_path_buf(),
        },
        None => MountOp::Bind {
            path: root.to_path_buf(),
            rw: false,
            optional: true,
        },
    }
}

/// Binds each ancestor of `path` strictly below `root` onto itself (once), so none can be
/// renamed or replaced during the run.
fn pin_ancestors(path: &Path, root: &Path, ops: &mut Vec<MountOp>) {
    for ancestor in path.ancestors().skip(1) {
        if ancestor == root || !is_under(ancestor, root) {
            break;
        }
        let pin = MountOp::Bind {
            path: ancestor.to_path_buf(),
            rw: true,
            optional: false,
        };
        if !ops.contains(&pin) {
            ops.push(pin);
        }
    }
}

/// The writable root a protected path lies in, when it is there (a root gone from the host is
/// not mounted: no placeholder is made in it, nothing is bound).
fn protecting_root<'p>(
    profile: &'p Profile,
    facts: &HostFacts,
    path: &Path,
) -> Option<&'p PathBuf> {
    profile
        .writable_roots()
        .find(|r| is_under(path, r))
        .filter(|r| facts.exists(r))
}

/// Every ancestor of a protected path below its writable root is pinned (bound onto itself, so
/// it cannot be renamed or replaced), and the protected path itself is bound read-only. A
/// protected path whose writable root is not there is left out: nothing of it is mounted.
fn protected_mounts(profile: &Profile, facts: &HostFacts) -> Vec<MountOp> {
    let mut ops = Vec::new();
    for path in &profile.protected {
        let Some(root) = protecting_root(profile, facts, path) else {
            continue;
        };
        pin_ancestors(path, root, &mut ops);
        ops.push(MountOp::Bind {
            path: path.clone(),
            rw: false,
            optional: false,
        });
    }
    ops
}

/// Denied paths a child could otherwise create or swap inside a writable root (the namespace
/// backends), with that root: every denied path below the innermost existing writable root
/// holding it, unless a deeper read-only root or protected path covers it (nothing can be
/// created there), another denied path above it hides it, or it exists as something other
/// than a directory (a file is masked as before). An existing denied directory is guarded too:
/// it may be another run's placeholder, which must not be removed while this run masks it. A
/// chain through a symlink is guarded only when the denied path is missing (the helper then
/// refuses the symlink); an existing one is masked as before.
pub fn guarded_denied<'a>(profile: &'a Profile, facts: &HostFacts) -> Vec<(&'a Path, &'a Path)> {
    let mut out = Vec::new();
    for denied in &profile.denied {
        let Some(root) = profile
            .writable_roots()
            .filter(|r| is_under(denied, r) && *r != denied && facts.is_dir(r))
            .max_by_key(|r| depth(r))
        else {
            continue;
        };
        let covered = profile
            .read_only
            .iter()
            .filter(|r| facts.exists(r))
            .chain(&profile.protected)
            .any(|r| is_under(denied, r) && depth(r) > depth(root));
        let hidden = profile
            .denied
            .iter()
            .any(|d| d != denied && is_under(denied, d));
        if covered || hidden {
            continue;
        }
        let chain: Vec<&Path> = denied
            .ancestors()
            .take_while(|a| *a != root.as_path())
            .collect();
        let kinds: Vec<Option<Kind>> = chain.iter().map(|p| facts.kind(p)).collect();
        let leaf_missing = kinds[0].is_none();
        let through_link = kinds.iter().flatten().any(|k| *k == Kind::Symlink);
        let non_dir = kinds[1..].iter().flatten().any(|k| *k == Kind::File)
            || kinds[0].is_some_and(|k| k != Kind::Dir);
        if non_dir || (through_link && !leaf_missing) {
            continue;
        }
        out.push((root.as_path(), denied.as_path()));
    }
    out
}

/// For each guarded denied path: its ancestors below the writable root pinned (bound onto
/// themselves, so no parent can be renamed away and recreated without the mask), and the path
/// itself masked with an empty read-only tmpfs when it does not exist yet (the helper creates
/// it as a directory first). An existing one is masked by [`masks`].
fn denied_mounts(profile: &Profile, facts: &HostFacts) -> Vec<MountOp> {
    let mut ops = Vec::new();
    for (root, denied) in guarded_denied(profile, facts) {
        pin_ancestors(denied, root, &mut ops);
        if !facts.exists(denied) {
            ops.push(MountOp::MaskDir {
                path: denied.to_path_buf(),
            });
        }
    }
    ops
}

fn masks(
    profile: &Profile,
    facts: &HostFacts,
    ops: &[MountOp],
    unowned: &[PathBuf],
) -> Vec<MountOp> {
    // Normalized once and compared as bytes (`carve::at_or_below`, what `Path::starts_with`
    // says): hundreds of binds for each of dozens of denied and private paths.
    let binds: Vec<PathBuf> = ops
        .iter()
        .filter_map(|op| match op {
            MountOp::Bind { path, .. } => Some(normalized(path)),
            _ => None,
        })
        .collect();
    let visible = |p: &Path| {
        let p = normalized(p);
        binds.iter().any(|b| at_or_below(&p, b))
    };
    let etc_unowned = unowned.iter().any(|u| u == Path::new("/etc"));
    let private: &[PathBuf] = if etc_unowned { &[] } else { &facts.etc_private };
    let toolchains: Vec<PathBuf> = if facts.root {
        toolchain_roots(profile, facts)
            .iter()
            .filter(|t| !unowned.contains(t))
            .flat_map(|t| facts.toolchain_private(t).iter().cloned())
            .collect()
    } else {
        Vec::new()
    };
    let mut seen = std::collections::HashSet::new();
    let all: Vec<MountOp> = profile
        .denied
        .iter()
        .chain(private.iter())
        .chain(toolchains.iter())
        .filter(|p| seen.insert(*p))
        .filter(|p| visible(p))
        .filter_map(|p| match facts.kind(p) {
            Some(Kind::Dir) => Some(MountOp::MaskDir { path: p.clone() }),
            Some(_) => Some(MountOp::MaskFile { path: p.clone() }),
            None => None,
        })
        .collect();
    // A path below a masked directory is already hidden (the mask is an empty tmpfs), and a
    // mount on it would need a mount point created inside that read-only tmpfs (bwrap fails
    // with "Can't mkdir ...: Read-only file system").
    let hidden_dirs: Vec<PathBuf> = all
        .iter()
        .filter_map(|op| match op {
            MountOp::MaskDir { path } => Some(normalized(path)),
            _ => None,
        })
        .collect();
    all.into_iter()
        .filter(|op| {
            let path = normalized(op.path());
            !hidden_dirs
                .iter()
                .any(|d| path != *d && at_or_below(&path, d))
        })
        .collect()
}

/// Paths that must not appear during a run (they would redirect git's hooks and config to
/// files the child controls); the helper removes them once the tree is gone.
pub fn scrub_list(profile: &Profile, facts: &HostFacts) -> Vec<PathBuf> {
    let commondir = profile.workspace.join(".git/commondir");
    if facts.exists(&commondir) {
        Vec::new()
    } else {
        vec![commondir]
    }
}

/// Protected paths that do not exist yet (parents are created as directories too), then each
/// guarded denied path with the directories above it (see [`guarded_denied`]).
pub fn placeholders(profile: &Profile, facts: &HostFacts) -> Vec<Placeholder> {
    placeholders_with(profile, facts, &[])
}

/// Like [`placeholders`], with the kinds known from the git config.
pub(super) fn placeholders_with(
    profile: &Profile,
    facts: &HostFacts,
    known: &[super::git_facts::GitTarget],
) -> Vec<Placeholder> {
    let mut out: Vec<Placeholder> = Vec::new();
    for path in &profile.protected {
        let Some(root) = protecting_root(profile, facts, path) else {
            continue;
        };
        let mut chain: Vec<&Path> = path
            .ancestors()
            .take_while(|a| *a != root.as_path())
            .collect();
        chain.reverse();
        for p in chain {
            if !facts.exists(p) {
                let known_dir = known.iter().find(|t| t.path == p).map(|t| t.dir);
                let dir = p != path.as_path() || known_dir.unwrap_or_else(|| guess_dir(p));
                let ph = Placeholder {
                    path: p.to_path_buf(),
                    dir,
                    denied: false,
                };
                if !out.contains(&ph) {
                    out.push(ph);
                }
            }
        }
    }
    // A missing denied path is always a directory: nothing can be created at its name or in
    // it (the mask is an empty read-only tmpfs), whatever the name (`.ssh` or `.netrc`).
    for (root, denied) in guarded_denied(profile, facts) {
        let mut chain: Vec<&Path> = denied.ancestors().take_while(|a| *a != root).collect();
        chain.reverse();
        for p in chain {
            if !out.iter().any(|ph| ph.path == p) {
                out.push(Placeholder {
                    path: p.to_path_buf(),
                    dir: true,
                    denied: true,
                });
            }
        }
    }
    out
}

/// A missing protected leaf is a file when its name looks like one (`config`, `*.toml`), else
/// a directory (`hooks`).
fn guess_dir(p: &Path) -> bool {
    let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
    !(name == "config" || name.contains('.'))
}

pub(super) fn depth(p: &Path) -> usize {
    p.components().count()
}

pub(super) fn is_under(path: &Path, root: &Path) -> bool {
    path.starts_with(root)
}
