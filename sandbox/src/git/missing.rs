//! A workspace with no `.git` (namespace backends). The protected `.git/hooks` and
//! `.git/config` cannot be bound read-only where nothing exists, and placeholders created for
//! them would stay behind as an empty, broken repository. Instead `.git` itself is a guarded
//! placeholder (see `helper::mounts::guard_denied`): created as an empty directory with our
//! marker, held under a shared lock for the run, and removed after the run by whichever run
//! holds it last. The child sees its own private stage bound there instead
//! ([`crate::git::stage`]): it can create neither a `.git` file nor anything the host's git
//! would read before validation. A `.git` that holds nothing but our marker is a
//! placeholder of another run (or of one that was killed) and is treated as missing.

use std::path::{Path, PathBuf};

use crate::backend::Backend;
use crate::plan::{DotGit, MountOp, Placeholder, Plan};
use crate::profile::Profile;

/// The workspace's `.git` when it must be guarded as a placeholder for this run: the
/// workspace is a writable root, its `.git/hooks` or `.git/config` is protected, and `.git`
/// does not exist or is a placeholder (`dot_git`, as read with the plan's facts).
pub fn guarded_git_dir(profile: &Profile, dot_git: &DotGit) -> Option<PathBuf> {
    let git = profile.workspace.join(".git");
    let protected = profile.protected.iter().any(|p| p.starts_with(&git));
    let missing = matches!(dot_git, DotGit::Absent | DotGit::Placeholder);
    (missing && protected && profile.writable_roots().any(|r| r == &profile.workspace))
        .then_some(git)
}

/// Whether the directory `git` is a placeholder: empty but for our marker and stages of runs
/// (see [`crate::git::stage`]), or empty — one a run is removing (its marker goes first), or
/// an empty `.git`, which git takes for no repository either — or gone since it was seen (the
/// run removing it got there first). A repository has our marker or its `HEAD`: one more
/// `lstat` or two, no listing.
pub fn is_placeholder(git: &Path) -> bool {
    let exists = |name: &str| git.join(name).symlink_metadata().is_ok();
    if !exists(crate::wire::PLACEHOLDER_MARKER) && exists("HEAD") {
        return false;
    }
    let entries = match std::fs::read_dir(git) {
        Ok(entries) => entries,
        // Taken for a repository, it would be staged as one, in a directory that is gone.
        Err(e) => return e.kind() == std::io::ErrorKind::NotFound,
    };
    entries.flatten().all(|e| {
        let name = e.file_name();
        name == crate::wire::PLACEHOLDER_MARKER
            || name
                .to_string_lossy()
                .starts_with(crate::git::stage::name::PREFIX)
    })
}

/// The planner's hook: [`guard`] a namespaced plan when the workspace's `.git` is
/// [`guarded_git_dir`].
pub fn guard_if_missing(plan: &mut Plan, profile: &Profile, dot_git: &DotGit) {
    let namespaced = matches!(plan.backend, Backend::Namespaces | Backend::Bubblewrap);
    let Some(git) = guarded_git_dir(profile, dot_git).filter(|_| namespaced) else {
        return;
    };
    if plan.layer().is_some() && *dot_git == DotGit::Absent {
        // The transactional workspace: a repository the call makes goes to its layer and is
        // validated as it lands, so the child sees the host's workspace as it is (`git clone
        // URL .` needs it empty) and nothing is created or bound below `.git`. (A placeholder
        // a killed run left is guarded once more, so that this call's end removes it.)
        plan.placeholders.retain(|p| !p.path.starts_with(&git));
        plan.mounts.retain(|op| !op.path().starts_with(&git));
    } else {
        guard(plan, &git);
    }
}

/// Rewrites a namespaced plan for a workspace whose `.git` is [`guarded_git_dir`]: nothing is
/// created or bound below `.git`; `.git` is a guarded placeholder with a stage bound on it.
pub fn guard(plan: &mut Plan, git: &Path) {
    plan.placeholders.retain(|p| !p.path.starts_with(git));
    plan.mounts.retain(|op| !op.path().starts_with(git));
    plan.placeholders.push(Placeholder {
        path: git.to_path_buf(),
        dir: true,
        denied: true,
    });
    plan.mounts.push(MountOp::Stage {
        src: crate::git::stage::name::new_stage(git),
        path: git.to_path_buf(),
    });
    // Parents first, as the plan builds them (a stable sort keeps the order of equals).
    plan.mounts
        .sort_by_cached_key(|op| op.path().components().count());
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the plan's facts say is at `p`'s `.git`.
    fn dot(p: &Profile) -> DotGit {
        crate::git::read::read(&p.workspace, None).workspace
    }

    fn ws() -> (tempfile::TempDir, Profile) {
        let dir = tempfile::Builder::new()
            .prefix("zc-git-missing-")
            .tempdir_in("/var/tmp")
            .unwrap();
        let p = Profile::for_workspace(dir.path());
        (dir, p)
    }

    #[test]
    fn a_read_only_workspace_guards_nothing_and_is_bound_read_only() {
        let (_d, p) = ws();
        let p = p.read_only_workspace();
        assert_eq!(guarded_git_dir(&p, &dot(&p)), None);
        let mut plan =
            crate::plan::build_on_host(Backend::Namespaces, &p, vec!["true".into()], None);
        guard_if_missing(&mut plan, &p, &dot(&p));
        let git = p.workspace.join(".git");
        assert!(
            !plan
                .placeholders
                .iter()
                .any(|ph| ph.path.starts_with(&p.workspace)),
            "{:?}",
            plan.placeholders
        );
        assert!(!plan.mounts.iter().any(|op| op.path().starts_with(&git)));
        let binds: Vec<&MountOp> = plan
            .mounts
            .iter()
            .filter(|op| op.path() == p.workspace)
            .collect();
        assert!(
            matches!(binds[..], [MountOp::Bind { rw: false, .. }]),
            "{binds:?}"
        );
    }

    #[test]
    fn a_missing_git_is_one_masked_guarded_placeholder() {
        let (_d, p) = ws();
        let git = p.workspace.join(".git");
        assert_eq!(guarded_git_dir(&p, &dot(&p)), Some(git.clone()));
        let mut plan =
            crate::plan::build_on_host(Backend::Namespaces, &p, vec!["true".into()], None);
        guard_if_missing(&mut plan, &p, &dot(&p));
        let below: Vec<&Placeholder> = plan
            .placeholders
            .iter()
            .filter(|ph| ph.path.starts_with(&git))
            .collect();
        assert_eq!(
            below,
            [&Placeholder {
                path: git.clone(),
                dir: true,
                denied: true
            }]
        );
        let ops: Vec<&MountOp> = plan
            .mounts
            .iter()
            .filter(|op| op.path().starts_with(&git))
            .collect();
        assert!(
            matches!(ops[..], [MountOp::Stage { src, path }] if path == &git && src.parent() == Some(&git)),
            "{ops:?}"
        );
    }

    #[test]
    fn an_existing_git_or_a_git_file_is_not_guarded() {
        let (_d, p) = ws();
        std::fs::create_dir(p.workspace.join(".git")).unwrap();
        std::fs::write(p.workspace.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        assert_eq!(guarded_git_dir(&p, &dot(&p)), None);
        let (_d, p) = ws();
        std::fs::write(p.workspace.join(".git"), "gitdir: elsewhere\n").unwrap();
        assert_eq!(guarded_git_dir(&p, &dot(&p)), None);
    }

    #[test]
    fn a_placeholder_of_another_run_counts_as_missing() {
        let (_d, p) = ws();
        let git = p.workspace.join(".git");
        std::fs::create_dir(&git).unwrap();
        std::fs::write(git.join(crate::wire::PLACEHOLDER_MARKER), "").unwrap();
        assert_eq!(guarded_git_dir(&p, &dot(&p)), Some(git));
    }

    /// The next run plans while the last one removes its placeholder: a `.git` seen as a
    /// directory and gone by the listing is no repository (staged as one, its stage could
    /// not be made: "mkdir(.git/.zeroclaw-stage-…): No such file or directory").
    #[test]
    fn a_git_gone_since_it_was_seen_is_no_repository() {
        let (_d, p) = ws();
        let git = p.workspace.join(".git");
        assert!(is_placeholder(&git));
        std::fs::create_dir(&git).unwrap();
        std::fs::write(git.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        assert!(!is_placeholder(&git));
    }

    #[test]
    fn nothing_is_guarded_when_git_is_not_protected() {
        let (_d, mut p) = ws();
        p.protected.clear();
        assert_eq!(guarded_git_dir(&p, &dot(&p)), None);
    }
}
