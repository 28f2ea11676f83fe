//! The per-entry rules of a landing's validation ([`super::control`]): what an entry below a
//! control directory may be, what a `.git` file may point at, the `exec` lines of a rebase's
//! todo list, the overlay features a landing does not handle, and the removal of a refused
//! entry from the upper layer.

use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::tree::{remove, shown};

/// The overlay attribute marking an opaque directory, as root and under `userxattr`.
const OPAQUE: [&str; 2] = ["trusted.overlay.opaque", "user.overlay.opaque"];

/// Attributes of overlay features the landing does not handle (a directory renamed inside
/// the layer, a file whose data stayed below): mounted without them, a layer never has them.
const UNHANDLED: [&str; 4] = [
    "trusted.overlay.redirect",
    "user.overlay.redirect",
    "trusted.overlay.metacopy",
    "user.overlay.metacopy",
];

/// Whether the upper directory `path` is opaque (hides the workspace's directory below it).
pub(super) fn opaque(path: &Path) -> bool {
    OPAQUE.iter().any(|name| {
        crate::sys::lgetxattr(path, name).is_ok_and(|v| v.as_deref() == Some(b"y".as_slice()))
    })
}

/// Makes the upper directory `path` no longer opaque: the workspace's directory below it
/// shows through again, and what the upper holds lands over it.
pub(super) fn unopaque(path: &Path) -> io::Result<()> {
    // Only the attribute that is there: removing a `trusted.*` one needs CAP_SYS_ADMIN on the
    // host, which a lander in a user namespace lacks, and reading it shows none there.
    OPAQUE
        .iter()
        .try_for_each(|name| match crate::sys::lgetxattr(path, name) {
            Ok(Some(_)) => crate::sys::lremovexattr(path, name),
            _ => Ok(()),
        })
}

/// Fails if `path` carries an overlay feature the landing would land wrong.
pub(super) fn overlay_features(path: &Path) -> io::Result<()> {
    for name in UNHANDLED {
        if let Ok(Some(_)) = crate::sys::lgetxattr(path, name) {
            return Err(io::Error::other(format!(
                "{} carries {name}, which the landing does not handle",
                path.display()
            )));
        }
    }
    Ok(())
}

/// The rule for an entry of the upper below a control directory (not a directory, not a
/// whiteout): only regular files stay; no alternates; a todo list loses its `exec` lines.
pub(super) fn control_entry(
    upper: &Path,
    rel: &Path,
    meta: &std::fs::Metadata,
    refused: &mut Vec<String>,
) -> io::Result<()> {
    let path = upper.join(rel);
    let why = if meta.file_type().is_symlink() {
        Some("a symbolic link among a repository's control files")
    } else if !meta.is_file() {
        Some("not a regular file")
    } else {
        None
    };
    if let Some(why) = why {
        refused.push(format!("git: refused {} ({why})", shown(rel)));
        return remove(&path);
    }
    let names: Vec<&OsStr> = rel.iter().collect();
    let tail = |n: usize| names.len().checked_sub(n).map(|i| &names[i..]);
    let name = names.last().copied().unwrap_or_default();
    if tail(3).is_some_and(|t| t[0] == "objects" && t[1] == "info")
        && (name == "alternates" || name == "http-alternates")
    {
        refused.push(format!(
            "git: refused {} (git would read objects outside the repository)",
            shown(rel)
        ));
        return remove(&path);
    }
    let parent = tail(2).map(|t| t[0]).unwrap_or_default();
    let rebase = parent == "rebase-merge" || parent == "rebase-apply";
    if rebase && (name == "strategy" || name == "strategy_opts") {
        refused.push(format!(
            "git: refused {} (names a merge strategy, a program git runs)",
            shown(rel)
        ));
        return remove(&path);
    }
    if parent == "sequencer" && name == "opts" {
        return sequencer_opts(&path, &shown(rel), refused);
    }
    let todo = (rebase
        && (name == "git-rebase-todo" || name == "git-rebase-todo.backup" || name == "done"))
        || (parent == "sequencer" && (name == "todo" || name == "done"));
    if todo {
        return filter_todo(&path, &shown(rel), refused);
    }
    Ok(())
}

/// Removes the `exec` (`x`) lines of a rebase or sequencer todo list, each refused; keeps the
/// file's other bytes.
fn filter_todo(path: &Path, shown: &str, refused: &mut Vec<String>) -> io::Result<()> {
    let Ok(bytes) = std::fs::read(path) else {
        refused.push(format!("git: refused {shown} (unreadable)"));
        return remove(path);
    };
    let mut kept = Vec::with_capacity(bytes.len());
    let mut cut = false;
    for line in bytes.split_inclusive(|b| *b == b'\n') {
        let start = line.iter().position(|b| !b" \t".contains(b));
        let word = start.map_or(&[][..], |s| {
            let rest = &line[s..];
            let end = rest
                .iter()
                .position(|b| b.is_ascii_whitespace())
                .unwrap_or(rest.len());
            &rest[..end]
        });
        if word.eq_ignore_ascii_case(b"exec") || word.eq_ignore_ascii_case(b"x") {
            cut = true;
            refused.push(format!(
                "git: refused {:?} in {shown} (runs a program outside the sandbox)",
                String::from_utf8_lossy(line).trim()
            ));
        } else {
            kept.extend_from_slice(line);
        }
    }
    if cut && rewrite(path, &kept).is_err() {
        return remove(path);
    }
    Ok(())
}

/// Filters a cherry-pick's or revert's options (git's config format): the `options` keys
/// stay but `strategy` and `strategy-option` (a merge strategy is a program git runs).
fn sequencer_opts(path: &Path, shown: &str, refused: &mut Vec<String>) -> io::Result<()> {
    let Ok(bytes) = std::fs::read(path) else {
        refused.push(format!("git: refused {shown} (unreadable)"));
        return remove(path);
    };
    let text = String::from_utf8_lossy(&bytes);
    let (clean, r) = crate::git::validate::filter_config_lines(&text, shown, |e| {
        e.section == "options" && e.sub.is_none() && !e.key.starts_with("strategy")
    });
    if !r.is_empty() {
        refused.extend(r);
        if rewrite(path, clean.as_bytes()).is_err() {
            return remove(path);
        }
    }
    Ok(())
}

/// Writes `bytes` to a new file beside `path` (its mode kept) and renames it over `path`.
pub(super) fn rewrite(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::MetadataExt;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let old = path.symlink_metadata()?;
    let mode = old.permissions().mode() & 0o777;
    let mut tmp_name = std::ffi::OsString::from(".zc-rewrite-");
    tmp_name.push(path.file_name().unwrap_or_default());
    let tmp = path.with_file_name(tmp_name);
    remove(&tmp)?;
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&tmp)
        .and_then(|mut f| {
            // Landing as root, the file stays the call's (not root's).
            let _ = std::os::unix::fs::fchown(&f, Some(old.uid()), Some(old.gid()));
            f.set_permissions(std::fs::Permissions::from_mode(mode))?;
            f.write_all(bytes)
        })
        .and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = remove(&tmp);
    }
    written
}

/// The rule for a `.git` entry that is not a directory: a regular file whose `gitdir:` names
/// a directory inside the workspace's `.git/modules/` or `.git/worktrees/` stays (how git
/// writes submodules and linked worktrees); anything else is removed and refused.
pub(super) fn git_file(
    upper: &Path,
    ws: &Path,
    rel: &Path,
    meta: &std::fs::Metadata,
    refused: &mut Vec<String>,
) -> io::Result<()> {
    let path = upper.join(rel);
    let inside = meta.is_file() && std::fs::read(&path).is_ok_and(|b| points_inside(&b, ws, rel));
    if !inside {
        refused.push(format!(
            "git: refused {} (points git at a directory outside the repositories' own)",
            shown(rel)
        ));
        return remove(&path);
    }
    Ok(())
}

/// Whether the `.git` file `rel` holding `bytes` names a directory below the workspace's
/// `.git/modules/` or `.git/worktrees/`, read as git reads it (`gitdir: ` then the path, up to
/// a NUL, trailing newlines and CRs dropped; relative to the file's directory), normalized
/// lexically.
fn points_inside(bytes: &[u8], ws: &Path, rel: &Path) -> bool {
    let Some(value) = bytes.strip_prefix(b"gitdir: ") else {
        return false;
    };
    let value = value.split(|b| *b == 0).next().unwrap_or_default();
    let end = value
        .iter()
        .rposition(|b| *b != b'\n' && *b != b'\r')
        .map_or(0, |i| i + 1);
    if end == 0 {
        return false;
    }
    let base = ws.join(rel.parent().unwrap_or(Path::new("")));
    let target = crate::git::targets::normalize(&base.join(OsStr::from_bytes(&value[..end])));
    ["modules", "worktrees"].iter().any(|d| {
        let root = ws.join(".git").join(d);
        target.starts_with(&root) && target != root
    })
}

/// Before a directory made a bare repository by this call is validated: copies the
/// workspace's config files there into the upper (they were never validated as control
/// files). False if the workspace's side holds what a copy cannot make safe (a hook, a
/// `commondir` or `gitdir`, a control file that is not a regular file).
pub(super) fn copy_up_control(
    upper: &Path,
    ws: &Path,
    rel: &Path,
    merged: &dyn Fn(&Path) -> Option<bool>,
) -> bool {
    let lower_only = |name: &str| {
        upper.join(rel).join(name).symlink_metadata().is_err() && merged(&rel.join(name)).is_some()
    };
    if ["commondir", "gitdir"].iter().any(|n| lower_only(n)) {
        return false;
    }
    for dir in ["hooks", "info"] {
        if lower_only(dir) && !crate::git::validate::real_dir(&ws.join(rel).join(dir)) {
            return false;
        }
    }
    if merged(&rel.join("hooks")) == Some(true) {
        let lower = ws.join(rel).join("hooks");
        for entry in std::fs::read_dir(&lower).into_iter().flatten().flatten() {
            let name = entry.file_name();
            let hook = rel.join("hooks").join(&name);
            let sample = entry.file_type().is_ok_and(|t| t.is_file())
                && name.to_string_lossy().ends_with(".sample");
            if upper.join(&hook).symlink_metadata().is_err() && merged(&hook).is_some() && !sample {
                return false;
            }
        }
    }
    for name in ["config", "config.worktree", "info/attributes"] {
        if !lower_only(name) {
            continue;
        }
        let (from, to) = (ws.join(rel).join(name), upper.join(rel).join(name));
        if !from.symlink_metadata().is_ok_and(|m| m.is_file()) {
            return false;
        }
        let copied = to
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| super::moves::copy_entry(&from, &to));
        if copied.is_err() {
            return false;
        }
    }
    true
}
