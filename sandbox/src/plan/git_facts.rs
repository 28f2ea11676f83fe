//! What the plan knows of git ([`GitFacts`]: the paths the configs point at, the workspace's
//! `.git`, the git directories a stage replaces), read once with the rest of the host by the
//! reader the daemon side hands in (`super::GitReader`, `crate::git::READER`), so that the
//! plan imports nothing of `git/` and the git section reads nothing itself.

use std::path::PathBuf;

/// A path a git config points at inside the workspace, and whether it is a directory (hooks)
/// or a file (include).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitTarget {
    /// Absolute, lexically normalized path.
    pub path: PathBuf,
    /// A directory (`core.hooksPath`) rather than a file.
    pub dir: bool,
}

/// Everything git the plan depends on, read in one pass (`super::GitReader::read`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GitFacts {
    /// What the workspace's git configs (and the parent repository's) point at inside the
    /// workspace, and the repository's other control files: protected.
    pub targets: Vec<GitTarget>,
    /// What is at the workspace's `.git`.
    pub workspace: DotGit,
    /// The git directory of the parent repository the plan shows read-only, when it is a
    /// real directory (what its stage needs).
    pub parent: Option<GitDir>,
}

/// What is at the workspace's `.git` (`lstat`, not followed).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum DotGit {
    /// Nothing.
    #[default]
    Absent,
    /// A placeholder of another run's, or of one that was killed: an empty directory but for
    /// our marker and stages. Taken for missing, but it is there.
    Placeholder,
    /// A repository a stage can replace: a real directory without our marker, its `hooks`
    /// and `config` no symlinks.
    Repository(GitDir),
    /// A linked worktree's `.git` file whose `gitdir:` and `commondir` agree: the main
    /// repository's git directory.
    Linked(GitDir),
    /// Anything else (a symlink, a repository with symlinked hooks or config, a `.git` file
    /// that names no linked worktree): kept behind the read-only binds.
    Other,
}

impl DotGit {
    /// Whether anything is at `.git`.
    pub fn exists(&self) -> bool {
        *self != DotGit::Absent
    }
}

/// A git directory a stage replaces, as read when the call was planned.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GitDir {
    /// Where it is.
    pub path: PathBuf,
    /// Its directories bound read-write into the stage (`objects/`, `refs/`, …; those of
    /// the git directories under `modules/` and `worktrees/` too), relative to it.
    pub bound: Vec<PathBuf>,
    /// What its worktree's git configs point at below it: kept read-only in the stage.
    pub kept: Vec<PathBuf>,
}
