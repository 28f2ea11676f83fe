//! An existing repository's stage, applied (helper side, once the run's tree is gone): what
//! the run changed, created or removed among the staged files reaches the real `.git`, one
//! `rename` per file, validated first — so the host's git never sees an unvalidated control
//! file — and the stage is removed (and the stages of runs that are gone with it,
//! [`super::stage::lock`]).
//!
//! - `config`, `config.worktree`: the run's version, with every key that is neither on the
//!   allowlist ([`super::validate::ALLOWED`]) nor already in the host's file refused, written
//!   anew (canonical form) to a new file in the real directory and renamed into place.
//! - `info/attributes`: lines naming a driver refused, written anew likewise.
//! - `commondir`, `gitdir`: must not change; a new one in an existing git directory is refused.
//!   Neither they nor `HEAD` and `config` are removed when the run removed them.
//! - `hooks/`: never copied back; each new or changed hook (but a sample) is refused.
//! - other files (`HEAD`, `index`, `packed-refs`, `info/sparse-checkout`, …): renamed into
//!   place (copied when the run gave the file more links; the index and `packed-refs`, staged
//!   as links, need nothing while they are still the host's file).
//! - a new git directory below `modules/` or `worktrees/`, or a new directory (`logs/`):
//!   validated ([`super::validate::sanitize_git_dir`]) and moved into place; an entry named
//!   `.zeroclaw-*` (the sandbox's own names: a stage, a temporary file) is refused.
//!
//! A host file that changed during the run (its identity differs from when it was staged) is
//! kept, and the line says the run's change was dropped. A symlink or other non-file where a
//! staged file was is refused. Each refusal is one line for the tool result and the log.

use std::path::{Path, PathBuf};

use super::copy::{Meta, Staged};
use super::repo::is_git_dir;

/// Applies `s` to the real `.git` and removes its stage; returns the refusals.
pub fn finish(s: &Staged) -> Vec<String> {
    let mut out = Vec::new();
    let workspace = s.git.parent().unwrap_or(&s.git).to_path_buf();
    for rel in &s.git_dirs {
        git_dir(s, rel, &workspace, &mut out);
    }
    remove_stage(s);
    super::stage::lock::release(&s.stage);
    super::stage::lock::sweep(&s.git, &s.stale);
    out
}

/// How the report names `rel`: below `.git` for the workspace's repository, by its full path
/// for a linked worktree's main repository.
fn shown(s: &Staged, rel: &Path) -> String {
    if rel.as_os_str().is_empty() {
        s.label.clone()
    } else {
        format!("{}/{}", s.label, rel.display())
    }
}

/// One staged git directory's files, hooks, `info/`, and what the run created in it.
fn git_dir(s: &Staged, rel: &Path, ws: &Path, out: &mut Vec<String>) {
    let top = rel.as_os_str().is_empty();
    let known_dir = |p: &Path| s.git_dirs.iter().any(|d| d == p);
    // Files the run removed.
    for (f, rec) in &s.files {
        let parent = f.parent().unwrap_or(Path::new(""));
        let ours = parent == rel || parent == rel.join("info");
        if ours && s.stage.join(f).symlink_metadata().is_err() {
            let name = f.file_name().unwrap_or_default();
            if ["HEAD", "config", "commondir", "gitdir"]
                .map(std::ffi::OsStr::new)
                .contains(&name)
            {
                out.push(format!(
                    "git: kept {} (the run removed it; the repository needs it)",
                    shown(s, f)
                ));
            } else if Meta::of(&s.git.join(f)) == Some(rec.host) {
                let _ = std::fs::remove_file(s.git.join(f));
            } else {
                out.push(kept(s, f));
            }
        }
    }
    let Ok(list) = std::fs::read_dir(s.stage.join(rel)) else {
        return;
    };
    for entry in list.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let here = rel.join(&name);
        if s.bound.contains(&here) || known_dir(&here) {
            continue;
        }
        // Names the sandbox keeps for itself, made by the run (a fake stage): not moved.
        if super::stage::name::is_ours(&name) && !s.files.contains_key(&here) {
            out.push(format!(
                "git: refused {} (a name the sandbox keeps for itself)",
                shown(s, &here)
            ));
            continue;
        }
        let Ok(t) = entry.file_type() else { continue };
        match name.as_str() {
            "hooks" => hooks(s, &here, out),
            "info" if t.is_dir() => {
                for inner in std::fs::read_dir(entry.path())
                    .into_iter()
                    .flatten()
                    .flatten()
                {
                    file(s, &here.join(inner.file_name()), out);
                }
            }
            "modules" | "worktrees" if t.is_dir() && (name == "modules" || top) => {
                container(s, &here, name == "worktrees", ws, 0, out);
            }
            _ if t.is_file() => file(s, &here, out),
            _ if t.is_dir() => new_dir(s, &here, out),
            _ => out.push(format!(
                "git: refused {} (not a regular file)",
                shown(s, &here)
            )),
        }
    }
}

/// A staged (or new) file: applied when the run changed it and the host did not.
fn file(s: &Staged, rel: &Path, out: &mut Vec<String>) {
    let name = rel.file_name().unwrap_or_default().to_string_lossy();
    if name.ends_with(".lock") || super::stage::name::is_ours(&name) {
        return;
    }
    let (staged, real) = (s.stage.join(rel), s.git.join(rel));
    let rec = s.files.get(rel);
    let Ok(m) = staged.symlink_metadata() else {
        return;
    };
    if !m.is_file() {
        out.push(format!(
            "git: refused {} (not a regular file)",
            shown(s, rel)
        ));
        return;
    }
    if rec.is_some_and(|r| Meta::of(&staged) == Some(r.copy)) {
        return; // unchanged
    }
    // Still the host's own file (a link, written in place): nothing to apply.
    let (now, here) = (Meta::of(&staged), Meta::of(&real));
    if rec.is_some_and(|r| r.linked) && now.zip(here).is_some_and(|(a, b)| a.same_file(&b)) {
        return;
    }
    if Meta::of(&real) != rec.map(|r| r.host) {
        out.push(kept(s, rel));
        return;
    }
    let Ok(bytes) = std::fs::read(&staged) else {
        out.push(format!("git: refused {} (unreadable)", shown(s, rel)));
        return;
    };
    let text = || String::from_utf8_lossy(&bytes).into_owned();
    let perms = rec.map_or(0o644, |r| r.host.perms());
    let written = match &*name {
        "config" | "config.worktree" => {
            let before = rec.and_then(|r| r.entries.clone()).unwrap_or_default();
            let (clean, refused) =
                super::validate::filter_config_with(&text(), &shown(s, rel), |e| {
                    before.contains(e)
                });
            out.extend(refused);
            write_new(&real, clean.as_bytes(), perms)
        }
        "attributes" if rel.parent().is_some_and(|p| p.ends_with("info")) => {
            let (clean, refused) = super::validate::filter_attributes(&text(), &shown(s, rel));
            out.extend(refused);
            write_new(&real, clean.as_bytes(), perms)
        }
        "commondir" | "gitdir" => {
            out.push(format!(
                "git: refused {} (points git at another repository)",
                shown(s, rel)
            ));
            return;
        }
        _ if std::os::unix::fs::MetadataExt::nlink(&m) > 1 => write_new(&real, &bytes, perms),
        _ => std::fs::rename(&staged, &real),
    };
    if let Err(e) = written {
        out.push(format!(
            "git: the run's {} was not kept ({e})",
            shown(s, rel)
        ));
    }
}

fn kept(s: &Staged, rel: &Path) -> String {
    format!(
        "git: kept the host's {} (it changed outside the sandbox during the run; the run's \
         change was dropped)",
        shown(s, rel)
    )
}

/// `bytes` in a new file beside `real` (never through a symlink), renamed over it.
fn write_new(real: &Path, bytes: &[u8], perms: u32) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = real.file_name().unwrap_or_default().to_string_lossy();
    let tmp = real.with_file_name(format!(".zeroclaw-tmp-{name}-{}-{n}", std::process::id()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(perms)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&tmp)
        .and_then(|mut f| f.write_all(bytes))
        .and_then(|()| std::fs::rename(&tmp, real));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// New or changed hooks are refused (none is copied back).
fn hooks(s: &Staged, rel: &Path, out: &mut Vec<String>) {
    let dir = s.stage.join(rel);
    if !super::validate::real_dir(&dir) {
        out.push(format!(
            "git: refused {} (not a directory: runs a program outside the sandbox)",
            shown(s, rel)
        ));
        return;
    }
    for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
        let here = rel.join(entry.file_name());
        let name = entry.file_name().to_string_lossy().into_owned();
        let plain = entry.file_type().is_ok_and(|t| t.is_file());
        let same = s
            .hooks
            .get(&here)
            .is_some_and(|m| Meta::of(&entry.path()) == Some(*m));
        if !(same || plain && name.ends_with(".sample")) {
            out.push(format!(
                "git: refused hook {name} in {} (runs a program outside the sandbox)",
                shown(s, rel)
            ));
        }
    }
}

/// A container's git directories the run created (known ones are staged on their own).
fn container(
    s: &Staged,
    rel: &Path,
    worktrees: bool,
    ws: &Path,
    depth: usize,
    out: &mut Vec<String>,
) {
    let Ok(list) = std::fs::read_dir(s.stage.join(rel)) else {
        return;
    };
    for entry in list.flatten() {
        let here = rel.join(entry.file_name());
        if s.git_dirs.contains(&here) {
            continue;
        }
        if !entry.file_type().is_ok_and(|t| t.is_dir()) {
            out.push(format!(
                "git: refused {} (not a directory)",
                shown(s, &here)
            ));
            continue;
        }
        let staged_below = s.git_dirs.iter().any(|d| d.starts_with(&here));
        if staged_below && depth < 16 {
            container(s, &here, worktrees, ws, depth + 1, out);
            continue;
        }
        let path = entry.path();
        let landing = s.git.join(&here);
        if is_git_dir(&path) {
            out.extend(super::validate::sanitize_git_dir(
                &path,
                &shown(s, &here),
                worktrees,
                (!worktrees).then_some((landing.as_path(), ws)),
            ));
            if !worktrees {
                super::validate::sanitize_modules(
                    &path.join("modules"),
                    &shown(s, &here.join("modules")),
                    ws,
                    out,
                );
            }
        } else if !worktrees {
            super::validate::sanitize_modules(&path, &shown(s, &here), ws, out);
        }
        move_in(s, &path, &landing, &here, out);
    }
}

/// A directory the run created in a git directory (`logs/` of a first commit, …).
fn new_dir(s: &Staged, rel: &Path, out: &mut Vec<String>) {
    move_in(s, &s.stage.join(rel), &s.git.join(rel), rel, out);
}

/// Renames the staged `from` to `to`, unless something is there on the host by now.
fn move_in(s: &Staged, from: &Path, to: &Path, rel: &Path, out: &mut Vec<String>) {
    if to.symlink_metadata().is_ok() {
        out.push(format!(
            "git: kept the host's {} (created outside the sandbox during the run; the run's \
             was dropped)",
            shown(s, rel)
        ));
        return;
    }
    // A new container (`modules/` of a first submodule) is made here, never through a link.
    let parent = to.parent().unwrap_or(to);
    let made = parent.symlink_metadata().is_ok() || std::fs::create_dir_all(parent).is_ok();
    if !made || !super::validate::real_dir(parent) {
        out.push(format!(
            "git: the run's {} was not kept ({} is not a directory)",
            shown(s, rel),
            parent.display()
        ));
        return;
    }
    if let Err(e) = std::fs::rename(from, to) {
        out.push(format!(
            "git: the run's {} was not kept ({e})",
            shown(s, rel)
        ));
    }
}

/// Removes the stage, never through a mount point that might still hold a bound directory:
/// each is `rmdir`ed first, and nothing is removed recursively unless all were.
fn remove_stage(s: &Staged) {
    let mut points: Vec<PathBuf> = s.bound.iter().map(|b| s.stage.join(b)).collect();
    points.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
    let mut clear = true;
    for p in &points {
        match std::fs::remove_dir(p) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                tracing::warn!("git stage: left {} in place ({e})", s.stage.display());
                clear = false;
            }
        }
    }
    if clear {
        let _ = std::fs::remove_dir_all(&s.stage);
    }
}

#[cfg(test)]
mod tests {
    use super::super::copy;
    use std::path::Path;

    fn repo() -> (tempfile::TempDir, std::path::PathBuf) {
        let d = tempfile::Builder::new()
            .prefix("zc-git-land-")
            .tempdir_in("/var/tmp")
            .unwrap();
        let git = d.path().join(".git");
        std::fs::create_dir_all(git.join("hooks")).unwrap();
        std::fs::create_dir_all(git.join("objects")).unwrap();
        std::fs::write(git.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(git.join("hooks/pre-commit"), "#!/bin/sh\n").unwrap();
        std::fs::write(
            git.join("config"),
            "[core]\n\tbare = false\n\tpager = less\n[filter \"lfs\"]\n\tclean = git-lfs clean\n",
        )
        .unwrap();
        (d, git)
    }

    fn staged(git: &Path) -> copy::Staged {
        let stage = super::super::stage::name::new_stage(git);
        copy::prepare(&stage, git, ".git".into(), &["objects".into()]).unwrap();
        copy::take(&stage).unwrap()
    }

    /// The host's own keys and hooks stay, the run's new unsafe ones do not, and what the run
    /// changed reaches the host; the stage is gone (the bound directory untouched).
    #[test]
    fn changes_land_validated_and_the_hosts_own_keys_stay() {
        let (_d, git) = repo();
        std::fs::write(git.join("objects/keep"), "data").unwrap();
        let s = staged(&git);
        assert!(s.stage.join("objects").is_dir() && !s.stage.join("objects/keep").exists());
        let config = std::fs::read_to_string(s.stage.join("config")).unwrap();
        std::fs::write(
            s.stage.join("config"),
            format!("{config}[user]\n\tname = A\n[core]\n\tfsmonitor = x\n"),
        )
        .unwrap();
        std::fs::write(s.stage.join("hooks/post-checkout"), "#!/bin/sh\n").unwrap();
        std::fs::write(s.stage.join("ORIG_HEAD"), "abc\n").unwrap();
        let refused = super::finish(&s);
        assert_eq!(
            refused,
            [
                "git: refused core.fsmonitor in .git/config (runs a program outside the sandbox)",
                "git: refused hook post-checkout in .git/hooks (runs a program outside the sandbox)",
            ]
        );
        let config = std::fs::read_to_string(git.join("config")).unwrap();
        for kept in ["pager", "git-lfs clean", "name = \"A\""] {
            assert!(config.contains(kept), "{kept}: {config}");
        }
        assert!(!config.contains("fsmonitor"), "{config}");
        assert!(git.join("hooks/pre-commit").exists() && !git.join("hooks/post-checkout").exists());
        assert_eq!(
            std::fs::read_to_string(git.join("ORIG_HEAD")).unwrap(),
            "abc\n"
        );
        assert_eq!(
            std::fs::read_to_string(git.join("objects/keep")).unwrap(),
            "data"
        );
        assert!(!s.stage.exists());
    }

    /// A host update during the run wins (nothing lost), and says so; a symlink is refused.
    #[test]
    fn a_host_update_during_the_run_is_kept() {
        let (_d, git) = repo();
        let s = staged(&git);
        std::fs::write(s.stage.join("HEAD"), "ref: refs/heads/run\n").unwrap();
        std::fs::write(git.join("HEAD"), "ref: refs/heads/host-now\n").unwrap();
        std::fs::remove_file(s.stage.join("config")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", s.stage.join("config")).unwrap();
        let refused = super::finish(&s);
        assert_eq!(refused.len(), 2, "{refused:?}");
        assert!(
            refused[0].contains("kept the host's .git/HEAD")
                || refused[1].contains("kept the host's .git/HEAD"),
            "{refused:?}"
        );
        assert_eq!(
            std::fs::read_to_string(git.join("HEAD")).unwrap(),
            "ref: refs/heads/host-now\n"
        );
        assert!(git.join("config").symlink_metadata().unwrap().is_file());
        assert!(
            std::fs::read_to_string(git.join("config"))
                .unwrap()
                .contains("pager")
        );
    }

    /// The index is staged as a link: untouched or written in place it needs nothing, and one
    /// the run renamed over it lands; a host file's links never reach a copied control file.
    #[test]
    fn the_linked_index_lands_only_when_replaced() {
        let (_d, git) = repo();
        std::fs::write(git.join("index"), "old").unwrap();
        let s = staged(&git);
        assert!(s.files[Path::new("index")].linked && !s.files[Path::new("config")].linked);
        assert!(super::finish(&s).is_empty());
        assert_eq!(std::fs::read_to_string(git.join("index")).unwrap(), "old");
        let s = staged(&git);
        std::fs::write(s.stage.join("index.new"), "new").unwrap();
        std::fs::rename(s.stage.join("index.new"), s.stage.join("index")).unwrap();
        assert!(super::finish(&s).is_empty());
        assert_eq!(std::fs::read_to_string(git.join("index")).unwrap(), "new");
    }
}
