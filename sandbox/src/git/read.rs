//! What the plan's git section needs of the host, read in one pass with the plan's other
//! facts (the plan's `GitReader::read`, `crate::plan::GitFacts`): the paths the workspace's
//! configs and the parent repository's point at, the repository's other control files, what
//! is at `.git`, and the shape of each git directory a stage would replace. The section itself
//! ([`super::add_to_plan`]) then reads nothing; and [`enclosing`], the parent repository.

use std::path::{Path, PathBuf};

use super::repo::{Part, is_git_dir, part};
use crate::plan::{DotGit, GitDir, GitFacts, GitTarget};

/// The git facts of `workspace`, and of `parent`, the worktree root of the larger repository
/// the plan shows read-only: each worktree's configs read once.
pub fn read(workspace: &Path, parent: Option<&Path>) -> GitFacts {
    let configs = super::targets::targets(workspace);
    let mut targets = configs.clone();
    super::existing::add_targets(workspace, &mut targets);
    let parent = parent.and_then(|worktree| {
        let configs = super::targets::targets(worktree);
        targets.extend(
            configs
                .iter()
                .filter(|t| t.path.starts_with(workspace))
                .cloned(),
        );
        let git = worktree.join(".git");
        super::validate::real_dir(&git).then(|| git_dir(git, &configs))
    });
    GitFacts {
        targets,
        workspace: dot_git(workspace, &configs),
        parent,
    }
}

/// What is at `workspace/.git`; `configs`, what the workspace's configs point at.
fn dot_git(workspace: &Path, configs: &[GitTarget]) -> DotGit {
    let git = workspace.join(".git");
    let meta = match git.symlink_metadata() {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return DotGit::Absent,
        Err(_) => return DotGit::Other,
    };
    if meta.is_dir() {
        // A `.git/hooks` or `.git/config` that is a symlink (hooks tracked in the workspace)
        // keeps the read-only binds, which refuse it: a stage would leave its target writable.
        let plain = |name: &str| {
            git.join(name)
                .symlink_metadata()
                .map_or(true, |m| !m.file_type().is_symlink())
        };
        if super::missing::is_placeholder(&git) {
            // Gone since it was seen (the run removing it got there first): nothing is there,
            // and a layered call must not guard one again.
            match git.symlink_metadata() {
                Ok(_) => DotGit::Placeholder,
                Err(_) => DotGit::Absent,
            }
        } else if git
            .join(crate::wire::PLACEHOLDER_MARKER)
            .symlink_metadata()
            .is_err()
            && plain("hooks")
            && plain("config")
        {
            DotGit::Repository(git_dir(git, configs))
        } else {
            DotGit::Other
        }
    } else if meta.is_file() {
        linked_common(&git).map_or(DotGit::Other, |common| {
            DotGit::Linked(git_dir(common, configs))
        })
    } else {
        DotGit::Other
    }
}

/// The git directory `git` as its stage sees it: its bound directories, and what its
/// worktree's configs (`configs`) point at below it.
fn git_dir(git: PathBuf, configs: &[GitTarget]) -> GitDir {
    let mut bound = Vec::new();
    walk(&git, Path::new(""), true, 0, &mut bound);
    let kept = configs
        .iter()
        .map(|t| t.path.clone())
        .filter(|p| p.starts_with(&git) && *p != git)
        .collect();
    GitDir {
        path: git,
        bound,
        kept,
    }
}

/// A linked worktree's `.git` file `git` (`gitdir: <common>/worktrees/<name>`): the main
/// repository's git directory `<common>`, when that file and its `commondir` agree.
fn linked_common(git: &Path) -> Option<PathBuf> {
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

/// The bound directories of the git directory `git/rel`, relative to `git`.
fn walk(git: &Path, rel: &Path, top: bool, depth: usize, out: &mut Vec<PathBuf>) {
    for entry in subdirs(&git.join(rel)) {
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
    for entry in subdirs(&git.join(rel)) {
        let here = rel.join(entry.file_name());
        if is_git_dir(&git.join(&here)) {
            walk(git, &here, false, depth + 1, out);
        } else {
            container(git, &here, depth + 1, out);
        }
    }
}

/// The directories in `dir` (not followed through symlinks; none when it cannot be read).
fn subdirs(dir: &Path) -> impl Iterator<Item = std::fs::DirEntry> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(prefix: &str) -> (tempfile::TempDir, PathBuf) {
        let d = tempfile::Builder::new()
            .prefix(prefix)
            .tempdir_in("/var/tmp")
            .unwrap();
        let path = d.path().canonicalize().unwrap();
        (d, path)
    }

    #[test]
    fn the_enclosing_repository_is_the_nearest_ancestors_and_never_past_a_git_file() {
        let (_d, top) = temp("zc-git-enclosing-");
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
    fn what_is_at_dot_git_is_read_once_into_the_facts() {
        let (_d, ws) = temp("zc-git-read-");
        let git = ws.join(".git");
        assert_eq!(read(&ws, None).workspace, DotGit::Absent);
        std::fs::create_dir(&git).unwrap();
        std::fs::write(git.join(crate::wire::PLACEHOLDER_MARKER), "").unwrap();
        assert_eq!(read(&ws, None).workspace, DotGit::Placeholder);
        std::fs::write(git.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        assert_eq!(
            read(&ws, None).workspace,
            DotGit::Other,
            "our marker in a repository"
        );
        std::fs::remove_file(git.join(crate::wire::PLACEHOLDER_MARKER)).unwrap();
        std::fs::create_dir_all(git.join("objects")).unwrap();
        std::fs::create_dir_all(git.join("hooks")).unwrap();
        std::fs::write(
            git.join("config"),
            "[core]\n\thooksPath = .git/own-hooks # lint\n",
        )
        .unwrap();
        match read(&ws, None).workspace {
            DotGit::Repository(dir) => {
                assert_eq!(dir.path, git);
                assert_eq!(dir.bound, [PathBuf::from("objects")]);
                assert_eq!(
                    dir.kept,
                    [git.join("own-hooks")],
                    "the config's target below .git"
                );
            }
            other => panic!("{other:?}"),
        }
        std::fs::remove_dir(git.join("hooks")).unwrap();
        std::os::unix::fs::symlink("../hooks", git.join("hooks")).unwrap();
        assert_eq!(read(&ws, None).workspace, DotGit::Other, "symlinked hooks");
        std::fs::remove_dir_all(&git).unwrap();
        std::fs::write(&git, "gitdir: /nowhere\n").unwrap();
        assert_eq!(
            read(&ws, None).workspace,
            DotGit::Other,
            "a .git file naming nothing"
        );
    }

    #[test]
    fn the_parent_repository_is_read_with_its_targets_in_the_workspace() {
        let (_d, top) = temp("zc-git-read-parent-");
        let ws = top.join("ws");
        std::fs::create_dir_all(top.join(".git/refs")).unwrap();
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::write(top.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(
            top.join(".git/config"),
            "[core]\n\thooksPath = ws/hooks\n[include]\n\tpath = extra\n",
        )
        .unwrap();
        let facts = read(&ws, Some(&top));
        assert!(
            facts
                .targets
                .iter()
                .any(|t| t.path == ws.join("hooks") && t.dir),
            "{:?}",
            facts.targets
        );
        let parent = facts.parent.expect("the parent's git directory");
        assert_eq!(parent.path, top.join(".git"));
        assert_eq!(parent.bound, [PathBuf::from("refs")]);
        assert_eq!(parent.kept, [top.join(".git/extra")]);
    }
}
