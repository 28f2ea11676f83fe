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
use crate::plan::{DotGit, GitDir, MountOp, Plan};
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
/// whose `.git` is a repository a stage can replace ([`DotGit::Repository`], as read with the
/// plan's facts) whose control files are protected gets the stage instead of the read-only
/// binds of `.git/config`, `.git/hooks` and `crate::git::existing`'s targets; a linked
/// worktree's main repository the same way ([`DotGit::Linked`]).
pub fn stage_if_existing(plan: &mut Plan, profile: &Profile, dot_git: &DotGit) {
    let namespaced = matches!(plan.backend, Backend::Namespaces | Backend::Bubblewrap);
    let git = profile.workspace.join(".git");
    let protected = profile.protected.iter().any(|p| p.starts_with(&git));
    let writable = profile.writable_roots().any(|r| r == &profile.workspace);
    // An in-process file operation (the file tools) keeps the read-only binds: its write to a
    // control file fails at once, rather than succeeding and being dropped afterwards.
    if !(namespaced && protected && writable && plan.op.is_none()) {
        return;
    }
    match dot_git {
        DotGit::Repository(dir) => stage(plan, profile, dir),
        DotGit::Linked(common) => linked(plan, profile, &git, common),
        _ => {}
    }
}

/// A linked worktree's plan: its `.git` file bound read-only (a rewritten `gitdir:` would point
/// the host's git anywhere), and the main repository's git directory staged as a repository's
/// is, at its real path (its `worktrees/<name>` is this worktree's own git directory).
fn linked(plan: &mut Plan, profile: &Profile, git: &Path, common: &GitDir) {
    plan.placeholders.retain(|p| !p.path.starts_with(git));
    plan.mounts.retain(|op| !op.path().starts_with(git));
    plan.mounts.push(MountOp::Bind {
        path: git.to_path_buf(),
        rw: false,
        optional: false,
    });
    stage_elsewhere(plan, profile, common);
}

/// The planner's hook for a workspace inside a larger repository whose worktree the plan shows
/// read-only (`HostFacts::parent_repository`): on a namespaced plan of a command with a
/// writable workspace, that repository's git directory is staged as the workspace's own
/// repository's is, at its real path (so `git add` and `git commit` work and its control files
/// land only validated), with the paths its configs point at below it kept read-only.
/// Otherwise it stays part of the read-only worktree.
pub fn stage_parent(plan: &mut Plan, profile: &Profile, parent: &GitDir) {
    let namespaced = matches!(plan.backend, Backend::Namespaces | Backend::Bubblewrap);
    let writable = profile.writable_roots().any(|r| r == &profile.workspace);
    if namespaced && writable && plan.op.is_none() {
        stage_elsewhere(plan, profile, parent);
    }
}

/// [`stage`] for a git directory outside the workspace (a linked worktree's main repository,
/// the parent repository's), which the Landlock stage must then let the stage's binds write.
fn stage_elsewhere(plan: &mut Plan, profile: &Profile, dir: &GitDir) {
    stage(plan, profile, dir);
    if !plan.landlock.write.iter().any(|w| dir.path.starts_with(w)) {
        plan.landlock.write.push(dir.path.clone());
    }
}

/// Rewrites `plan` for the stage of the git directory `dir` (see the module's doc), as read
/// with the plan's facts: its bound directories, and what its worktree's configs point at
/// below it, which stays read-only.
pub fn stage(plan: &mut Plan, profile: &Profile, dir: &GitDir) {
    let git = &dir.path;
    let defaults: Vec<PathBuf> = WORKSPACE_PROTECTED
        .iter()
        .map(|p| profile.workspace.join(p))
        .collect();
    let mut keep: Vec<PathBuf> = profile
        .protected
        .iter()
        .chain(&dir.kept)
        .filter(|p| p.starts_with(git) && *p != git && !defaults.contains(p))
        .cloned()
        .collect();
    keep.sort();
    keep.dedup();
    plan.placeholders
        .retain(|p| !p.path.starts_with(git) || keep.contains(&p.path));
    plan.mounts.retain(|op| !op.path().starts_with(git));
    plan.scrub.retain(|p| !p.starts_with(git));
    plan.mounts.push(MountOp::Stage {
        src: super::stage::name::new_stage(git),
        path: git.clone(),
    });
    plan.mounts
        .extend(dir.bound.iter().map(|rel| MountOp::Bind {
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
        stage_if_existing(
            &mut plan,
            &p,
            &crate::git::read::read(&p.workspace, None).workspace,
        );
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
