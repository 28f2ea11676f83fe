//! An existing repository's control files beyond `.git/hooks` and `.git/config` that the
//! host's git reads (namespace backends): they are protected (bound read-only) like those two.
//!
//! - `.git/config.worktree`, when `extensions.worktreeConfig` is set in `.git/config` (as
//!   `git sparse-checkout` leaves it): git reads it as configuration from then on. Created as
//!   an empty placeholder when missing (git treats a missing and an empty one alike), since
//!   the child could otherwise create it.
//! - each existing submodule's git directory (`.git/modules/**`, one with a `HEAD`): its
//!   `config`, `config.worktree` and `hooks`, which git uses inside the submodule's checkout;
//! - each linked worktree's own directory (`.git/worktrees/*`): its `config.worktree`,
//!   `commondir` and `gitdir`.
//!
//! A few `lstat`/`read_dir` calls on a repository; none without `.git`.

use std::path::Path;

use crate::plan::GitTarget as Target;

/// Adds [`targets`] not yet in `out` (the plan's hook).
pub fn add_targets(workspace: &Path, out: &mut Vec<Target>) {
    for t in targets(workspace) {
        if !out.contains(&t) {
            out.push(t);
        }
    }
}

/// Targets to protect in `workspace`'s repository (empty when `.git` is not a directory).
pub fn targets(workspace: &Path) -> Vec<Target> {
    let git = workspace.join(".git");
    if !git.symlink_metadata().is_ok_and(|m| m.is_dir()) {
        return Vec::new();
    }
    let mut out = Vec::new();
    let worktree_config = std::fs::read_to_string(git.join("config")).is_ok_and(|text| {
        super::config::parse(&text).iter().any(|e| {
            e.section == "extensions"
                && e.sub.is_none()
                && e.key == "worktreeconfig"
                && e.value.as_deref().is_none_or(|v| {
                    matches!(v.to_ascii_lowercase().as_str(), "true" | "yes" | "on" | "1")
                })
        })
    });
    let config_worktree = git.join("config.worktree");
    if worktree_config || config_worktree.symlink_metadata().is_ok() {
        out.push(file(&config_worktree));
    }
    modules(&git.join("modules"), 0, &mut out);
    let worktrees = git.join("worktrees");
    let listed = super::validate::real_dir(&worktrees).then(|| std::fs::read_dir(&worktrees));
    for entry in listed.into_iter().flatten().flatten().flatten() {
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            existing(
                &entry.path(),
                &["config.worktree", "commondir", "gitdir"],
                &mut out,
            );
        }
    }
    out
}

fn file(path: &Path) -> Target {
    Target {
        path: path.to_path_buf(),
        dir: false,
    }
}

/// Those of `names` in `dir` that exist (symlinks are left to the helper, which refuses them).
fn existing(dir: &Path, names: &[&str], out: &mut Vec<Target>) {
    for name in names {
        let path = dir.join(name);
        if let Ok(m) = path.symlink_metadata() {
            out.push(Target {
                dir: m.is_dir(),
                path,
            });
        }
    }
}

/// Every submodule git directory below `dir` (a module's name may hold slashes).
fn modules(dir: &Path, depth: usize, out: &mut Vec<Target>) {
    if depth > 16 || !super::validate::real_dir(dir) {
        return;
    }
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let path = entry.path();
        if path.join("HEAD").symlink_metadata().is_ok() {
            existing(&path, &["config", "config.worktree", "hooks"], out);
            modules(&path.join("modules"), depth + 1, out);
        } else {
            modules(&path, depth + 1, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worktree_config_submodules_and_worktrees_are_found() {
        let d = tempfile::Builder::new()
            .prefix("zc-git-existing-")
            .tempdir_in("/var/tmp")
            .unwrap();
        let git = d.path().join(".git");
        std::fs::create_dir_all(git.join("modules/a/b/hooks")).unwrap();
        std::fs::write(git.join("modules/a/b/HEAD"), "").unwrap();
        std::fs::write(git.join("modules/a/b/config"), "").unwrap();
        std::fs::create_dir_all(git.join("worktrees/w")).unwrap();
        std::fs::write(git.join("worktrees/w/commondir"), "../..\n").unwrap();
        std::fs::write(
            git.join("config"),
            "[extensions]\n\tworktreeConfig = true\n",
        )
        .unwrap();
        let mut found: Vec<_> = targets(d.path())
            .into_iter()
            .map(|t| (t.path, t.dir))
            .collect();
        found.sort();
        assert_eq!(
            found,
            [
                (git.join("config.worktree"), false),
                (git.join("modules/a/b/config"), false),
                (git.join("modules/a/b/hooks"), true),
                (git.join("worktrees/w/commondir"), false),
            ]
        );
        std::fs::write(git.join("config"), "[core]\n\tbare = false\n").unwrap();
        assert!(
            !targets(d.path())
                .iter()
                .any(|t| t.path.ends_with("config.worktree"))
        );
    }
}
