//! What a repository's control state in an upper layer may hold: [`validate`] finds every
//! control directory the layer touches (a `.git` directory, a bare repository in the merged
//! view, the git directories of submodules and linked worktrees below them) and every `.git`
//! file, and makes them safe in place, through [`crate::git::validate`] and the per-entry
//! rules of [`super::rules`]. The rule is the class: nothing in a repository's control state
//! the call wrote may make the host's git run a program, read or write outside the
//! repository, or follow a symlink out.

use std::io;
use std::path::{Path, PathBuf};

use crate::git::validate::{is_whiteout, sanitize_git_dir_over};

use super::rules;
use super::tree::{entries, shown};

/// Deeper than this, the walk fails (the landing then lands nothing): it recurses, and a path
/// this deep is past `PATH_MAX` anyway.
const MAX_DEPTH: usize = 1024;

/// Validates the upper layer `upper` over `workspace` in place (refused entries removed,
/// control files filtered) and returns one refusal line per refusal. If the layer cannot be
/// walked whole, everything in it is refused (removed) with one line saying why.
pub fn validate(upper: &Path, workspace: &Path) -> Vec<String> {
    match check(upper, workspace) {
        Ok(refused) => refused,
        Err(e) => {
            let _ = std::fs::remove_dir_all(upper).and_then(|()| std::fs::create_dir(upper));
            vec![format!(
                "layer: refused every change (the layer could not be validated: {e})"
            )]
        }
    }
}

/// [`validate`], failing (with the layer half validated: land nothing of it) where the walk
/// cannot read an entry.
pub(super) fn check(upper: &Path, workspace: &Path) -> io::Result<Vec<String>> {
    let mut v = Validator {
        upper,
        ws: workspace,
        refused: Vec::new(),
        modes: Vec::new(),
    };
    let walked = v
        .open_up(upper, 0)
        .and_then(|()| v.walk(Path::new(""), false, 0));
    // The modes the call gave its directories land: restored, deepest first.
    for (dir, mode) in v.modes.iter().rev() {
        match set_mode(dir, *mode) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    walked.map(|()| v.refused)
}

fn set_mode(path: &Path, mode: u32) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

struct Validator<'a> {
    upper: &'a Path,
    ws: &'a Path,
    refused: Vec<String>,
    /// Directories the walk gave their owner every permission (so that a refused entry
    /// can be removed from them, landing as an unprivileged user), with their modes.
    modes: Vec<(PathBuf, u32)>,
}

impl Validator<'_> {
    fn walk(&mut self, rel: &Path, control: bool, depth: usize) -> io::Result<()> {
        if depth > MAX_DEPTH {
            return Err(io::Error::other(format!("{} is too deep", shown(rel))));
        }
        let dir = self.upper.join(rel);
        rules::overlay_features(&dir)?;
        let control = control || self.control_dir(rel)?;
        for (name, meta) in entries(&dir)? {
            let rel = rel.join(&name);
            if name.as_os_str() == ".git" && self.host_repository(&rel) {
                self.keep_host_repository(&rel, &meta)?;
            }
            if is_whiteout(&meta) {
                continue;
            }
            if name.as_os_str() == ".git" && !meta.is_dir() {
                rules::git_file(self.upper, self.ws, &rel, &meta, &mut self.refused)?;
            } else if meta.is_dir() {
                self.walk(&rel, control, depth + 1)?;
            } else {
                rules::overlay_features(&self.upper.join(&rel))?;
                if control {
                    rules::control_entry(self.upper, &rel, &meta, &mut self.refused)?;
                }
            }
        }
        Ok(())
    }

    /// Gives the owner every permission on every directory of the tree `dir` (recording
    /// the modes), before anything is sanitized in it.
    fn open_up(&mut self, dir: &Path, depth: usize) -> io::Result<()> {
        use std::os::unix::fs::PermissionsExt;
        if depth > MAX_DEPTH {
            return Err(io::Error::other(format!("{} is too deep", dir.display())));
        }
        let mode = dir.symlink_metadata()?.permissions().mode() & 0o7777;
        if mode & 0o700 != 0o700 {
            set_mode(dir, mode | 0o700)?;
            self.modes.push((dir.to_path_buf(), mode));
        }
        for (name, meta) in entries(dir)? {
            if meta.is_dir() {
                self.open_up(&dir.join(name), depth + 1)?;
            }
        }
        Ok(())
    }

    /// Whether the workspace has a repository's git directory at `rel` (a `.git`) that shows
    /// through the upper's parent directories.
    fn host_repository(&self, rel: &Path) -> bool {
        let parent = rel.parent().unwrap_or(Path::new(""));
        let git = self.ws.join(rel);
        self.lower_visible(parent)
            && crate::git::validate::real_dir(&git)
            && git.join("HEAD").symlink_metadata().is_ok()
    }

    /// A call changes what is in a repository the host has through validation, but never
    /// removes or replaces its git directory (the user's history and settings): a removal,
    /// or a file put in its place, is refused, and a `.git` made anew over it (opaque) lands
    /// over the host's.
    fn keep_host_repository(&mut self, rel: &Path, meta: &std::fs::Metadata) -> io::Result<()> {
        let path = self.upper.join(rel);
        if is_whiteout(meta) {
            super::tree::remove(&path)?;
            self.refused.push(format!(
                "git: refused the removal of {} (a repository the host has)",
                shown(rel)
            ));
        } else if !meta.is_dir() {
            super::tree::remove(&path)?;
            self.refused.push(format!(
                "git: refused the replacement of {} by a file (a repository the host has)",
                shown(rel)
            ));
        } else if rules::opaque(&path) {
            rules::unopaque(&path)?;
            self.refused.push(format!(
                "git: refused the replacement of {} (a repository the host has): what the \
                 call wrote in it lands over the host's, validated",
                shown(rel)
            ));
        }
        Ok(())
    }

    /// Whether the upper directory `rel` is a control directory, which it then sanitizes.
    fn control_dir(&mut self, rel: &Path) -> io::Result<bool> {
        if rel.file_name().is_some_and(|n| n == ".git") {
            let lower = self.lower_visible(rel).then(|| self.ws.join(rel));
            self.git_dir(rel, lower.as_deref());
            return Ok(true);
        }
        let present = |v: &Self, name: &str| v.merged(&rel.join(name)).is_some();
        let bare = present(self, "HEAD") && present(self, "objects") && present(self, "refs");
        if !bare || std::fs::read_dir(self.upper.join(rel))?.next().is_none() {
            return Ok(false);
        }
        let lower_bare = self.lower_visible(rel)
            && ["HEAD", "objects", "refs"]
                .iter()
                .all(|n| self.ws.join(rel).join(n).symlink_metadata().is_ok());
        if lower_bare {
            self.git_dir(rel, Some(&self.ws.join(rel)));
        } else {
            // Made a repository by this call: the workspace's files there were never
            // validated as control files. Copied up, they are validated like the call's own;
            // what cannot be made safe that way (a hook, a link file) stops the repository.
            if !rules::copy_up_control(self.upper, self.ws, rel, &|p| self.merged(p)) {
                self.unmake_repository(rel)?;
                return Ok(false);
            }
            self.git_dir(rel, None);
        }
        Ok(true)
    }

    /// Removes the upper's `HEAD`, `objects` and `refs` of `rel` (the workspace's lack one,
    /// so `rel` is no repository after the landing).
    fn unmake_repository(&mut self, rel: &Path) -> io::Result<()> {
        for name in ["HEAD", "objects", "refs"] {
            super::tree::remove(&self.upper.join(rel).join(name))?;
        }
        self.refused.push(format!(
            "git: refused {}/HEAD, objects and refs (would make a repository of a directory \
             holding control files the call did not write)",
            shown(rel)
        ));
        Ok(())
    }

    /// Sanitizes the git directory `rel` and the git directories of its linked worktrees
    /// and submodules.
    fn git_dir(&mut self, rel: &Path, lower: Option<&Path>) {
        let refused = sanitize_git_dir_over(&self.upper.join(rel), &shown(rel), false, None, lower);
        self.refused.extend(refused);
        self.linked(rel);
        self.modules(&rel.join("modules"), 0);
    }

    /// The linked worktrees' git directories `rel/worktrees/<name>`.
    fn linked(&mut self, rel: &Path) {
        let worktrees = rel.join("worktrees");
        for (name, meta) in entries(&self.upper.join(&worktrees)).unwrap_or_default() {
            if meta.is_dir() {
                let w = worktrees.join(name);
                let lower = self.lower_visible(&w).then(|| self.ws.join(&w));
                let r = sanitize_git_dir_over(
                    &self.upper.join(&w),
                    &shown(&w),
                    true,
                    None,
                    lower.as_deref(),
                );
                self.refused.extend(r);
            }
        }
    }

    /// Every directory below `rel` (a `modules` directory) that is, or may become, a
    /// submodule's git directory: one with a `HEAD` in the merged view, and, as a module's
    /// name may hold slashes, every directory on the way to one.
    fn modules(&mut self, rel: &Path, depth: usize) {
        if depth > 64 {
            return;
        }
        for (name, meta) in entries(&self.upper.join(rel)).unwrap_or_default() {
            if !meta.is_dir() {
                continue;
            }
            let m = rel.join(name);
            let lower = self.lower_visible(&m).then(|| self.ws.join(&m));
            let landing = self.ws.join(&m);
            let r = sanitize_git_dir_over(
                &self.upper.join(&m),
                &shown(&m),
                false,
                Some((&landing, self.ws)),
                lower.as_deref(),
            );
            self.refused.extend(r);
            if self.merged(&m.join("HEAD")).is_some() {
                self.linked(&m);
                self.modules(&m.join("modules"), depth + 1);
            } else {
                self.modules(&m, depth + 1);
            }
        }
    }

    /// The kind of `rel` in the merged view (`Some(true)`: a directory), `None` if absent.
    fn merged(&self, rel: &Path) -> Option<bool> {
        match self.upper.join(rel).symlink_metadata() {
            Ok(m) if is_whiteout(&m) => return None,
            Ok(m) => return Some(m.is_dir()),
            Err(_) => {}
        }
        if !self.lower_visible(rel) {
            return None;
        }
        self.ws
            .join(rel)
            .symlink_metadata()
            .ok()
            .map(|m| m.is_dir())
    }

    /// Whether the workspace's `rel` shows through the upper: no directory above it (nor
    /// `rel` itself, if a directory) in the upper is opaque, and none is a file or whiteout.
    fn lower_visible(&self, rel: &Path) -> bool {
        let mut here = PathBuf::new();
        for (i, c) in rel.components().enumerate() {
            here.push(c);
            let last = i + 1 == rel.components().count();
            match self.upper.join(&here).symlink_metadata() {
                Ok(m) if m.is_dir() && rules::opaque(&self.upper.join(&here)) => return false,
                Ok(m) if !m.is_dir() && !last => return false,
                _ => {}
            }
        }
        true
    }
}
