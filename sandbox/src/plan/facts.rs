//! The host facts a plan is built from: every read [`super::build`] depends on (what is at a
//! path, where a symlink points, a path's real path, a directory's entries, the caller's
//! `LANG`/`TERM`/`PATH` and passed variables, who we run as, the root-only files of `/etc`,
//! `/proc` and the toolchains, the git facts, the user's global git config). Plain
//! data with lookups; gathered from the host by [`HostFacts::gather`] (`gather.rs`, the plan's
//! only module that reads the host), fabricated in tests.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::git_facts::GitFacts;
use super::types::Plan;
use crate::profile::Profile;

/// What the plan reads of git and the git section it adds, handed to [`HostFacts::gather`]
/// and the planner by the daemon side (`crate::git::READER`).
#[derive(Debug, Clone, Copy)]
pub struct GitReader {
    /// Reads the [`GitFacts`] of a workspace and of the worktree root of the parent
    /// repository the plan shows (`crate::git::read`).
    pub read: fn(&Path, Option<&Path>) -> GitFacts,
    /// The validated copy of the user's global git config, from the HOME and
    /// `$XDG_CONFIG_HOME` (`crate::git::global::validated`).
    pub global: fn(&Path, Option<&Path>) -> String,
    /// The worktree root of the larger repository a workspace without `.git` lies in
    /// (`crate::git::read::enclosing`).
    pub parent: fn(&Path) -> Option<PathBuf>,
    /// Adds the plan's git section once it is built, from the facts alone: a missing `.git`
    /// guarded, an existing repository's private stage, the parent repository's
    /// (`crate::git::add_to_plan`).
    pub stage: fn(&mut Plan, &Profile, &HostFacts),
}

/// A reader that finds nothing (tests of the plan alone).
#[cfg(test)]
pub const NO_GIT: GitReader = GitReader {
    read: |_, _| GitFacts::default(),
    global: |_, _| String::new(),
    parent: |_| None,
    stage: |_, _, _| {},
};

/// What `lstat` found at a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A directory.
    Dir,
    /// A symbolic link.
    Symlink,
    /// Anything else (a file, a device, a socket).
    File,
}

/// What is known about one path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PathFact {
    /// The type `lstat` reports; `None` when nothing is there.
    pub kind: Option<Kind>,
    /// Where a symlink points (`readlink`).
    pub target: Option<PathBuf>,
    /// A directory once symlinks are followed (`stat`).
    pub dir: bool,
    /// The real path (`realpath`), when it was asked for and could be resolved.
    pub canonical: Option<PathBuf>,
}

/// Everything a plan reads from the host. A path it was not told about counts as missing.
#[derive(Debug, Clone, Default)]
pub struct HostFacts {
    /// The effective uid is 0.
    pub root: bool,
    /// The caller's `$HOME` ([`crate::profile::home_dir`]).
    pub home: Option<PathBuf>,
    /// This process's pid (the launcher's).
    pub launcher_pid: u32,
    /// The caller's environment variables the plan may copy (`LANG`, `TERM`, `PATH`, passed
    /// names).
    pub vars: HashMap<OsString, OsString>,
    /// Facts by path.
    pub paths: HashMap<PathBuf, PathFact>,
    /// The entries of a directory that are not symlinks, by normalized directory path (see
    /// [`super::subtract_with`]).
    pub entries: HashMap<PathBuf, Vec<PathBuf>>,
    /// Root-only files of `/etc` (see [`crate::host::scan::etc_private`]).
    pub etc_private: Vec<PathBuf>,
    /// Root-only files outside each toolchain root's bulk (see
    /// [`crate::host::scan::toolchain_private`]).
    pub toolchain_private: HashMap<PathBuf, Vec<PathBuf>>,
    /// Root-only files of `/proc` a uid-0 child would read (see
    /// [`crate::host::scan::proc_private`]); empty when they need not be hidden.
    pub proc_private: Vec<PathBuf>,
    /// The host's per-user count maxima (namespace backends).
    pub user_limits: Vec<(String, u64)>,
    /// The kernel's Landlock ABI (0: none), read for the Landlock-only backend, whose proxy
    /// calls need its TCP rules.
    pub landlock_abi: u32,
    /// What the plan knows of git (read by the [`GitReader`]).
    pub git: GitFacts,
    /// The validated copy of the user's global git config (read by the [`GitReader`]) for
    /// the backends with a private HOME.
    pub git_global: String,
    /// The worktree root of the larger repository the workspace lies in, which the plan shows
    /// read-only ([`crate::profile::ParentWorktree::ReadOnly`]; read by the [`GitReader`]):
    /// never `/`, the HOME or one of its ancestors (a home directory kept in git would expose
    /// every file of it).
    pub parent_repository: Option<PathBuf>,
}

impl HostFacts {
    /// `profile` as these facts extend it (the one place they do): the paths the git configs
    /// point at protected, the larger repository the workspace lies in one more read-only root.
    pub fn extend<'p>(&self, profile: &'p Profile) -> std::borrow::Cow<'p, Profile> {
        if self.git.targets.is_empty() && self.parent_repository.is_none() {
            return std::borrow::Cow::Borrowed(profile);
        }
        let mut extended = profile.clone();
        extended
            .protected
            .extend(self.git.targets.iter().map(|t| t.path.clone()));
        extended.read_only.extend(self.parent_repository.clone());
        std::borrow::Cow::Owned(extended)
    }

    /// What `lstat` found at `path`.
    pub fn kind(&self, path: &Path) -> Option<Kind> {
        self.paths.get(path).and_then(|f| f.kind)
    }

    /// Something is at `path` (a dangling symlink counts).
    pub fn exists(&self, path: &Path) -> bool {
        self.kind(path).is_some()
    }

    /// Where the symlink at `path` points; `None` when it is not a symlink.
    pub fn link(&self, path: &Path) -> Option<&Path> {
        self.paths.get(path).and_then(|f| f.target.as_deref())
    }

    /// `path` is a directory once symlinks are followed.
    pub fn is_dir(&self, path: &Path) -> bool {
        self.paths.get(path).is_some_and(|f| f.dir)
    }

    /// The real path of `path`, or `path` as given when it could not be resolved.
    pub fn canonical(&self, path: &Path) -> PathBuf {
        self.paths
            .get(path)
            .and_then(|f| f.canonical.clone())
            .unwrap_or_else(|| path.to_path_buf())
    }

    /// The caller's value of `name`, when it is set.
    pub fn var(&self, name: &str) -> Option<&OsString> {
        self.vars.get(std::ffi::OsStr::new(name))
    }

    /// The root-only files of the toolchain root `root`.
    pub fn toolchain_private(&self, root: &Path) -> &[PathBuf] {
        self.toolchain_private
            .get(root)
            .map(Vec::as_slice)
            .unwrap_or_default()
    }
}

/// Builders for fabricated facts (tests).
#[cfg(test)]
impl HostFacts {
    /// A directory at `path` (and at each of its ancestors), its real path itself.
    pub(crate) fn with_dir(mut self, path: impl Into<PathBuf>) -> Self {
        let path = path.into();
        for a in path.ancestors() {
            self.paths.entry(a.to_path_buf()).or_insert(PathFact {
                kind: Some(Kind::Dir),
                target: None,
                dir: true,
                canonical: Some(a.to_path_buf()),
            });
        }
        self
    }

    /// A file at `path`, in directories.
    pub(crate) fn with_file(self, path: impl Into<PathBuf>) -> Self {
        let path = path.into();
        let mut facts = match path.parent() {
            Some(parent) => self.with_dir(parent),
            None => self,
        };
        facts.paths.insert(
            path.clone(),
            PathFact {
                kind: Some(Kind::File),
                target: None,
                dir: false,
                canonical: Some(path),
            },
        );
        facts
    }

    /// A symlink at `path` to the directory `target` (absolute), in directories.
    pub(crate) fn with_dir_link(
        self,
        path: impl Into<PathBuf>,
        target: impl Into<PathBuf>,
    ) -> Self {
        let (path, target) = (path.into(), target.into());
        let mut facts = match path.parent() {
            Some(parent) => self.with_dir(parent),
            None => self,
        };
        facts = facts.with_dir(&target);
        facts.paths.insert(
            path,
            PathFact {
                kind: Some(Kind::Symlink),
                target: Some(target.clone()),
                dir: true,
                canonical: Some(target),
            },
        );
        facts
    }

    /// `dir`'s entries (not symlinks).
    pub(crate) fn with_entries(mut self, dir: impl Into<PathBuf>, names: &[&str]) -> Self {
        let dir = dir.into();
        let list = names.iter().map(|n| dir.join(n)).collect();
        self.entries.insert(dir, list);
        self
    }
}
