//! An existing repository's stage, filled (helper side): private copies of its control
//! files (see [`super::repo`] for the shape) and the record of what was copied — each host
//! file's identity then (`dev`/`ino`/size/mtime, to tell a host update during the run) and
//! its copy's (to tell what the run changed) — kept in this process for [`super::land`].
//!
//! Copies go through `std::fs::copy` (`copy_file_range`: a reflink where the file system
//! has them, an in-kernel copy otherwise); the index and `packed-refs`, data git only
//! replaces by `rename`, are hard links instead ([`LINKED`]). Stale lock files are not copied.
//! The same listing of the real `.git` notes the stages of runs that are gone
//! ([`Staged::stale`]).

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::config::Entry;
use super::repo::{Part, is_git_dir, part};

/// A file's identity, as `lstat` gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meta {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: i64,
    mtime_nsec: i64,
    mode: u32,
}

impl Meta {
    /// Whether both are the same inode.
    pub fn same_file(&self, other: &Meta) -> bool {
        (self.dev, self.ino) == (other.dev, other.ino)
    }

    /// `path`'s, not following a symlink.
    pub fn of(path: &Path) -> Option<Meta> {
        path.symlink_metadata().ok().map(|m| Meta {
            dev: m.dev(),
            ino: m.ino(),
            size: m.size(),
            mtime: m.mtime(),
            mtime_nsec: m.mtime_nsec(),
            mode: m.mode(),
        })
    }

    /// The permission bits.
    pub fn perms(&self) -> u32 {
        self.mode & 0o7777
    }
}

/// One staged file.
#[derive(Debug, Clone)]
pub struct File {
    /// The host file when it was copied.
    pub host: Meta,
    /// The copy, as made.
    pub copy: Meta,
    /// A hard link to the host file rather than a copy ([`LINKED`]).
    pub linked: bool,
    /// A config file's entries (what the host already had is kept as it is).
    pub entries: Option<Vec<Entry>>,
    /// A `commondir`/`gitdir` file's text (it must not change).
    pub text: Option<String>,
}

/// Files staged as hard links: data that git replaces by renaming a new file over it and never
/// runs or reads as configuration (a write in place is like one to the bound `objects/`).
pub const LINKED: &[&str] = &["index", "packed-refs"];

/// What was staged for one repository.
#[derive(Debug, Clone, Default)]
pub struct Staged {
    /// The stage directory.
    pub stage: PathBuf,
    /// The real `.git` (a linked worktree's main repository's git directory).
    pub git: PathBuf,
    /// How refusals name `git`: `.git`, or the full path of a linked worktree's main one.
    pub label: String,
    /// Staged files, relative to the stage (and to `.git`).
    pub files: BTreeMap<PathBuf, File>,
    /// Staged hooks (relative), as copied.
    pub hooks: BTreeMap<PathBuf, Meta>,
    /// Staged git directories (relative; `""` is the repository's own).
    pub git_dirs: Vec<PathBuf>,
    /// Mount points of bound directories (relative).
    pub bound: Vec<PathBuf>,
    /// Other entries of the real `.git` named like a stage (a killed run's, for
    /// [`super::stage::lock::sweep`] once this run is over).
    pub stale: Vec<std::ffi::OsString>,
}

/// The stages this helper made, until [`take`]n.
static STAGED: Mutex<Vec<Staged>> = Mutex::new(Vec::new());

/// The record of `stage`, once.
pub fn take(stage: &Path) -> Option<Staged> {
    let mut all = STAGED.lock().unwrap_or_else(|e| e.into_inner());
    let at = all.iter().position(|s| s.stage == stage)?;
    Some(all.remove(at))
}

/// Makes and fills `stage` for the repository `git` (named `label` in refusals), with mount
/// points for `bound` (relative to `git`), and records it.
pub fn prepare(stage: &Path, git: &Path, label: String, bound: &[PathBuf]) -> std::io::Result<()> {
    let mut s = Staged {
        stage: stage.to_path_buf(),
        git: git.to_path_buf(),
        label,
        bound: bound.to_vec(),
        ..Staged::default()
    };
    super::stage::lock::make(stage)?;
    let filled = git_dir(&mut s, Path::new(""), 0);
    // Recorded even when filling failed: the caller's finish removes the stage.
    STAGED.lock().unwrap_or_else(|e| e.into_inner()).push(s);
    filled
}

/// Stages the git directory `rel`.
fn git_dir(s: &mut Staged, rel: &Path, depth: usize) -> std::io::Result<()> {
    let top = rel.as_os_str().is_empty();
    s.git_dirs.push(rel.to_path_buf());
    let (real, staged) = (s.git.join(rel), s.stage.join(rel));
    for entry in std::fs::read_dir(&real)?.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let here = rel.join(&name);
        let t = entry.file_type()?;
        if top && name.starts_with(super::stage::name::PREFIX) {
            if Some(entry.file_name().as_os_str()) != s.stage.file_name() {
                s.stale.push(entry.file_name());
            }
            continue;
        }
        if t.is_file() {
            file(s, &here)?;
        } else if t.is_dir() {
            match part(&name, top) {
                Part::Private if name == "hooks" => hooks(s, &here, 0)?,
                Part::Private => {
                    std::fs::create_dir(staged.join(&name))?;
                    for inner in std::fs::read_dir(real.join(&name))?.flatten() {
                        if inner.file_type()?.is_file() {
                            file(s, &here.join(inner.file_name()))?;
                        }
                    }
                }
                Part::Container => container(s, &here, top && name == "worktrees", depth + 1)?,
                Part::Bound if s.bound.contains(&here) => {
                    std::fs::create_dir(staged.join(&name))?;
                }
                // Appeared since the plan was made: not visible to the run.
                Part::Bound => {}
            }
        }
    }
    Ok(())
}

/// Stages the container `rel` (`modules/`, `worktrees/`) and the git directories below it.
fn container(s: &mut Staged, rel: &Path, worktrees: bool, depth: usize) -> std::io::Result<()> {
    std::fs::create_dir(s.stage.join(rel))?;
    if depth > 16 {
        return Ok(());
    }
    for entry in std::fs::read_dir(s.git.join(rel))?.flatten() {
        if !entry.file_type()?.is_dir() {
            continue;
        }
        let here = rel.join(entry.file_name());
        if is_git_dir(&s.git.join(&here)) {
            std::fs::create_dir(s.stage.join(&here))?;
            git_dir(s, &here, depth + 1)?;
        } else if !worktrees {
            container(s, &here, false, depth + 1)?;
        }
    }
    Ok(())
}

/// Copies the hooks directory `rel` (never copied back; recorded to tell a new hook). The
/// `*.sample` files `git init` leaves are not: git never runs them, the landing ignores
/// them, and each copy is an inode made and removed per call (a dozen in a fresh repository,
/// the stage's largest part).
fn hooks(s: &mut Staged, rel: &Path, depth: usize) -> std::io::Result<()> {
    std::fs::create_dir(s.stage.join(rel))?;
    for entry in std::fs::read_dir(s.git.join(rel))?.flatten() {
        let here = rel.join(entry.file_name());
        let t = entry.file_type()?;
        if t.is_file() && entry.file_name().as_encoded_bytes().ends_with(b".sample") {
            continue;
        }
        if t.is_file() {
            std::fs::copy(s.git.join(&here), s.stage.join(&here))?;
            if let Some(m) = Meta::of(&s.stage.join(&here)) {
                s.hooks.insert(here, m);
            }
        } else if t.is_dir() && depth < 4 {
            hooks(s, &here, depth + 1)?;
        }
    }
    Ok(())
}

/// Copies the regular file `rel` and records it (a lock file is left out).
fn file(s: &mut Staged, rel: &Path) -> std::io::Result<()> {
    let name = rel.file_name().unwrap_or_default().to_string_lossy();
    if name.ends_with(".lock") {
        return Ok(());
    }
    let (real, staged) = (s.git.join(rel), s.stage.join(rel));
    let Some(host) = Meta::of(&real) else {
        return Ok(()); // gone meanwhile
    };
    // Data git only ever replaces (lock file, then rename) and never runs: linked, not copied
    // (the index is MBs in a large repository). The control files are always copies.
    let linked = LINKED.contains(&&*name) && std::fs::hard_link(&real, &staged).is_ok();
    if !linked {
        std::fs::copy(&real, &staged)?;
    }
    let copy = Meta::of(&staged).ok_or_else(|| std::io::Error::other("copy vanished"))?;
    let text = || std::fs::read(&staged).map(|b| String::from_utf8_lossy(&b).into_owned());
    let (entries, text) = match &*name {
        "config" | "config.worktree" => (Some(super::config::parse(&text()?)), None),
        "commondir" | "gitdir" => (None, Some(text()?)),
        _ => (None, None),
    };
    s.files.insert(
        rel.to_path_buf(),
        File {
            host,
            copy,
            linked,
            entries,
            text,
        },
    );
    Ok(())
}
