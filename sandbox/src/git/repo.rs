//! An existing repository's private stage, planned (namespace backends, daemon side).
//!
//! git rewrites `.git/config` by writing `config.lock` and renaming it over `config`, which a
//! read-only bind refuses (EBUSY): `git config`, `git remote add`, `git sparse-checkout` and
//! `git submodule add` would fail. Instead the child sees a stage directory inside the real
//! `.git` (`.git/.zeroclaw-stage-…`, the same file system, so copying back is a `rename`)
//! bound at `.git`. Its shape, per git directory (the repository's, each submodule's under
//! `modules/`, each linked worktree's under `worktrees/`):
//!
//! - every regular file (`config`, `HEAD`, `index`, `packed-refs`, `config.worktree`, …),
//!   `hooks/` and `info/`: private copies ([`super::copy`]), validated and applied to the real
//!   `.git` once the run's tree is gone ([`super::land`]);
//! - `modules/` and `worktrees/`: private directories holding their git directories, staged
//!   the same way (a new one the run creates is validated and moved into place);
//! - every other directory (`objects/`, `refs/`, `logs/`, `lfs/`, …): the real one, bound
//!   read-write on a mount point in the stage (listed here, at planning time).
//!
//! Operator paths protected below `.git` (other than the default `.git/config` and
//! `.git/hooks`, which the stage replaces) stay bound read-only on top.

use std::path::{Path, PathBuf};

use crate::backend::Backend;
use crate::plan::{MountOp, Plan};
use crate::profile::{Profile, WORKSPACE_PROTECTED};

/// What a directory inside a git directory is to the stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// `hooks/` and `info/`: a private copy.
    Private,
    /// `modules/` (`worktrees/` at the top): private, holding git directories.
    Container,
    /// Anything else: the real directory, bound read-write.
    Bound,
}

/// `name`'s part in a git directory (`top`: the repository's own).
pub fn part(name: &str, top: bool) -> Part {
    match name {
        "hooks" | "info" => Part::Private,
        "modules" => Part::Container,
        "worktrees" if top => Part::Container,
        _ => Part::Bound,
    }
}

/// Whether `dir` is a git directory (has a `HEAD`, not followed through a symlink).
pub fn is_git_dir(dir: &Path) -> bool {
    dir.join("HEAD").symlink_metadata().is_ok()
}

/// The planner's hook: a namespaced plan of a command (not a file operation) for a workspace
/// whose `.git` is an existing repository (a real directory, not a placeholder, its `hooks`
/// and `config` no symlinks) whose control files are protected gets the stage instead of the read-only binds of `.git/config`, `.git/hooks` and
/// `crate::git::existing`'s targets.
pub fn stage_if_existing(plan: &mut Plan, profile: &Profile) {
    let namespaced = matches!(plan.backend, Backend::Namespaces | Backend::Bubblewrap);
    let git = profile.workspace.join(".git");
    let protected = profile.protected.iter().any(|p| p.starts_with(&git));
    let writable = profile.writable_roots().any(|r| r == &profile.workspace);
    // A `.git/hooks` or `.git/config` that is a symlink (hooks tracked in the workspace)
    // keeps the read-only binds, which refuse it: the stage would leave its target writable.
    let plain = |name: &str| {
        git.join(name)
            .symlink_metadata()
            .map_or(true, |m| !m.file_type().is_symlink())
    };
    let repository = super::validate::real_dir(&git)
        && git
            .join(crate::wire::PLACEHOLDER_MARKER)
            .symlink_metadata()
            .is_err()
        && !super::missing::is_placeholder(&git)
        && plain("hooks")
        && plain("config");
    // An in-process file operation (the file tools) keeps the read-only binds: its write to a
    // control file fails at once, rather than succeeding and being dropped afterwards.
    let eligible = namespaced && protected && writable && plan.op.is_none();
    if eligible && repository {
        stage(plan, profile, &git, &profile.workspace);
    } else if eligible && let Some(common) = linked_common(&git) {
        linked(plan, profile, &git, &common);
    }
}

/// A workspace that is a linked worktree (`.git` a file `gitdir: <common>/worktrees/<name>`):
/// the main repository's git directory `<common>`, when that file and its `commondir` agree.
pub fn linked_common(git: &Path) -> Option<PathBuf> {
    if !git.symlink_metadata().ok()?.is_file() {
        return None;
    }
    let text = std::fs::read_to_string(git).ok()?;
    let dir = text.lines().next()?.strip_prefix("gitdir:")?.trim();
    let own = super::targets::normalize(&git.parent()?.join(dir));
    let commondir = std::fs::read_to_string(own.join("commondir")).ok()?;
    let common = super::targets::normalize(&own.join(commondir.trim_end()));
    let placed = own.parent() == Some(common.join("worktrees").as_path());
    (placed
        && super::validate::real_dir(&own)
        && super::validate::real_dir(&common)
        && is_git_dir(&common))
    .then_some(common)
}

/// A linked worktree's plan: its `.git` file bound read-only (a rewritten `gitdir:` would point
/// the host's git anywhere), and the main repository's git directory staged as a repository's
/// is, at its real path (its `worktrees/<name>` is this worktree's own git directory).
fn linked(plan: &mut Plan, profile: &Profile, git: &Path, common: &Path) {
    plan.placeholders.retain(|p| !p.path.starts_with(git));
    plan.mounts.retain(|op| !op.path().starts_with(git));
    plan.mounts.push(MountOp::Bind {
        path: git.to_path_buf(),
        rw: false,
        optional: false,
    });
    stage(plan, profile, common, &profile.workspace);
    if !plan.landlock.write.iter().any(|w| common.starts_with(w)) {
        plan.landlock.write.push(common.to_path_buf());
    }
}

/// The worktree root of the repository `workspace` lies in when it has no `.git` of its own:
/// the nearest ancestor holding a `.git`, on the workspace's file system (git's discovery stops
/// at a boundary too), when that `.git` is a git directory. Anything else there ends the search
/// with nothing, where git would follow a linked worktree's file and go on past a directory
/// that is no git directory: what is shown is never more than git would find.
pub fn enclosing(workspace: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    if workspace.join(".git").symlink_metadata().is_ok() {
        return None;
    }
    let device = std::fs::metadata(workspace).ok()?.dev();
    for dir in workspace.ancestors().skip(1) {
        if std::fs::metadata(dir).ok()?.dev() != device {
            return None;
        }
        let git = dir.join(".git");
        if git.symlink_metadata().is_err() {
            continue;
        }
        return (super::validate::real_dir(&git) && is_git_dir(&git)).then(|| dir.to_path_buf());
    }
    None
}

/// The planner's hook for a workspace inside a larger repository whose worktree the plan shows
/// read-only (`HostFacts::parent_repository`): on a namespaced plan of a command with a
/// writable workspace, that repository's git directory is staged as the workspace's own
/// repository's is, at its real path (so `git add` and `git commit` work and its control files
/// land only validated), with the paths its configs point at below it kept read-only.
/// Otherwise it stays part of the read-only worktree.
pub fn stage_parent(plan: &mut Plan, profile: &Profile, worktree: &Path) {
    let namespaced = matches!(plan.backend, Backend::Namespaces | Backend::Bubblewrap);
    let writable = profile.writable_roots().any(|r| r == &profile.workspace);
    let git = worktree.join(".git");
    if namespaced && writable && plan.op.is_none() && super::validate::real_dir(&git) {
        stage(plan, profile, &git, worktree);
        if !plan.landlock.write.iter().any(|w| git.starts_with(w)) {
            plan.landlock.write.push(git);
        }
    }
}

/// Rewrites `plan` for the stage of the repository at `git` (see the module's doc); `worktree`
/// is the worktree whose configs' targets below `git` stay read-only.
pub fn stage(plan: &mut Plan, profile: &Profile, git: &Path, worktree: &Path) {
    let defaults: Vec<PathBuf> = WORKSPACE_PROTECTED
        .iter()
        .map(|p| profile.workspace.join(p))
        .collect();
    let mut keep: Vec<PathBuf> = profile
        .protected
        .iter()
        .cloned()
        .chain(
            super::targets::targets(worktree)
                .into_iter()
                .map(|t| t.path),
        )
        .filter(|p| p.starts_with(git) && p != git && !defaults.contains(p))
        .collect();
    keep.sort();
    keep.dedup();
    plan.placeholders
        .retain(|p| !p.path.starts_with(git) || keep.contains(&p.path));
    plan.mounts.retain(|op| !op.path().starts_with(git));
    plan.scrub.retain(|p| !p.starts_with(git));
    plan.mounts.push(MountOp::Stage {
        src: super::stage::name::new_stage(git),
        path: git.to_path_buf(),
    });
    let mut bound = Vec::new();
    walk(git, Path::new(""), true, 0, &mut bound);
    plan.mounts
        .extend(bound.into_iter().map(|rel| MountOp::Bind {
            path: git.join(rel),
            rw: true,
            optional: true,
        }));
    plan.mounts
        .extend(keep.into_iter().map(|path| MountOp::Bind {
            path,
            rw: false,
            optional: false,
        }));
    // Parents first, as the plan builds them (a stable sort keeps the order of equals).
    plan.mounts.sort_by_key(|op| op.path().components().count());
}

/// The bound directories of the git directory `git/rel`, relative to `git`.
fn walk(git: &Path, rel: &Path, top: bool, depth: usize, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(git.join(rel))
        .into_iter()
        .flatten()
        .flatten()
    {
        if !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        if top && name.starts_with(super::stage::name::PREFIX) {
            continue;
        }
        let here = rel.join(&name);
        match part(&name, top) {
            Part::Private => {}
            Part::Container => container(git, &here, depth + 1, out),
            Part::Bound => out.push(here),
        }
    }
}

/// The git directories below the container `git/rel` (a module's name may hold slashes).
fn container(git: &Path, rel: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    if depth > 16 {
        return;
    }
    for entry in std::fs::read_dir(git.join(rel))
        .into_iter()
        .flatten()
        .flatten()
    {
        if !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let here = rel.join(entry.file_name());
        if is_git_dir(&git.join(&here)) {
            walk(git, &here, false, depth + 1, out);
        } else {
            container(git, &here, depth + 1, out);
        }
    }
}

/// The directories `plan` binds into the stage of `git` (relative to `git`).
pub fn bound(plan: &Plan, git: &Path) -> Vec<PathBuf> {
    plan.mounts
        .iter()
        .filter_map(|op| match op {
            MountOp::Bind { path, rw: true, .. } => {
                path.strip_prefix(git).ok().map(Path::to_path_buf)
            }
            _ => None,
        })
        .filter(|rel| !rel.as_os_str().is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_enclosing_repository_is_the_nearest_ancestors_and_never_past_a_git_file() {
        let d = tempfile::Builder::new()
            .prefix("zc-git-enclosing-")
            .tempdir_in("/var/tmp")
            .unwrap();
        let top = d.path().canonicalize().unwrap();
        let ws = top.join("a/b/ws");
        std::fs::create_dir_all(&ws).unwrap();
        assert_eq!(enclosing(&ws), None, "no repository yet");
        std::fs::create_dir_all(top.join(".git/objects")).unwrap();
        std::fs::write(top.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        assert_eq!(enclosing(&ws), Some(top.clone()));
        // A nearer ancestor's `.git` file (a linked worktree) ends the search.
        std::fs::write(top.join("a/.git"), "gitdir: /elsewhere\n").unwrap();
        assert_eq!(enclosing(&ws), None);
        // A `.git` directory that is no git directory ends it too.
        std::fs::remove_file(top.join("a/.git")).unwrap();
        std::fs::create_dir(top.join("a/b/.git")).unwrap();
        assert_eq!(enclosing(&ws), None);
        std::fs::remove_dir(top.join("a/b/.git")).unwrap();
        // A workspace with a `.git` of its own has no enclosing repository.
        std::fs::create_dir(ws.join(".git")).unwrap();
        assert_eq!(enclosing(&ws), None);
    }

    #[test]
    fn an_existing_repository_is_staged_with_its_data_directories_bound() {
        let d = tempfile::Builder::new()
            .prefix("zc-git-repo-")
            .tempdir_in("/var/tmp")
            .unwrap();
        let p = Profile::for_workspace(d.path());
        let git = d.path().join(".git");
        for dir in [
            "objects",
            "refs/heads",
            "hooks",
            "info",
            "modules/a/b/objects",
        ] {
            std::fs::create_dir_all(git.join(dir)).unwrap();
        }
        std::fs::create_dir_all(git.join("modules/a/b/hooks")).unwrap();
        std::fs::write(git.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(git.join("config"), "").unwrap();
        std::fs::write(git.join("modules/a/b/HEAD"), "").unwrap();
        let mut plan =
            crate::plan::build_on_host(Backend::Namespaces, &p, vec!["true".into()], None);
        stage_if_existing(&mut plan, &p);
        let below: Vec<&MountOp> = plan
            .mounts
            .iter()
            .filter(|op| op.path().starts_with(&git))
            .collect();
        assert!(
            matches!(below[0], MountOp::Stage { src, path } if path == &git && src.parent() == Some(&git)),
            "{below:?}"
        );
        let mut rels = bound(&plan, &git);
        rels.sort();
        assert_eq!(
            rels,
            [
                PathBuf::from("modules/a/b/objects"),
                PathBuf::from("objects"),
                PathBuf::from("refs")
            ]
        );
        assert_eq!(below.len(), 4, "{below:?}");
        assert!(!plan.placeholders.iter().any(|ph| ph.path.starts_with(&git)));
    }
}
