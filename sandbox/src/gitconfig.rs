//! Reads the workspace's `.git/config` for paths that are as powerful as the config itself —
//! `core.hooksPath` (hooks run by the host's next `git commit`), `include.path` and
//! `includeIf.*.path` (more config) — so those inside the workspace get protected too.

use std::path::{Path, PathBuf};

/// A path the config points at, and whether it is a directory (hooks) or a file (include).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Absolute, lexically normalized path.
    pub path: PathBuf,
    /// A directory (`core.hooksPath`) rather than a file.
    pub dir: bool,
}

/// The targets inside `workspace` of its `.git/config` and of the system and global configs
/// (`/etc/gitconfig`, `~/.gitconfig`, `$XDG_CONFIG_HOME/git/config`), where a relative
/// `core.hooksPath` also means "per repository".
pub fn targets(workspace: &Path) -> Vec<Target> {
    let git = workspace.join(".git");
    let mut files = vec![PathBuf::from("/etc/gitconfig")];
    if let Some(home) = crate::profile::home_dir() {
        files.push(home.join(".gitconfig"));
        let xdg = std::env::var_os("XDG_CONFIG_HOME").map(PathBuf::from);
        files.push(
            xdg.unwrap_or_else(|| home.join(".config"))
                .join("git/config"),
        );
    }
    files.push(git.join("config"));
    let mut out: Vec<Target> = Vec::new();
    for file in files {
        for t in targets_of(&file, workspace) {
            if !out.contains(&t) {
                out.push(t);
            }
        }
    }
    out
}

fn targets_of(config: &Path, workspace: &Path) -> Vec<Target> {
    let Ok(text) = std::fs::read_to_string(config) else {
        return Vec::new();
    };
    let config_dir = config.parent().unwrap_or(Path::new("/"));
    config_paths(&text)
        .into_iter()
        .filter_map(|(key, value)| {
            let dir = key == "core.hookspath";
            let base = if dir { workspace } else { config_dir };
            let path = normalize(&resolve(base, &value));
            (path.starts_with(workspace) && path != workspace).then_some(Target { path, dir })
        })
        .collect()
}

fn resolve(base: &Path, value: &str) -> PathBuf {
    let home = crate::profile::home_dir().unwrap_or_default();
    match value.strip_prefix("~/") {
        Some(rest) => home.join(rest),
        None => base.join(value),
    }
}

/// `p` with `.` and `..` resolved lexically (the one copy: the git stage uses it too).
pub(crate) fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// `(section.key, value)` for `core.hooksPath`, `include.path`, `includeIf "...".path`, read by
/// the one git config parser ([`crate::git::config::parse`]: quoting, escapes, comments,
/// continuations and a key on its section's line, as git reads them). Public for the fuzz
/// target only.
#[doc(hidden)]
pub fn config_paths(text: &str) -> Vec<(String, String)> {
    crate::git::config::parse(text)
        .into_iter()
        .filter_map(|e| {
            let key = match (e.section.as_str(), e.sub.is_some(), e.key.as_str()) {
                ("core", false, "hookspath") => "core.hookspath",
                ("include", false, "path") => "include.path",
                ("includeif", true, "path") => "includeif.path",
                _ => return None,
            };
            Some((key.to_owned(), e.value?))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_hooks_path_and_includes_inside_the_workspace() {
        let ws = tempfile::tempdir().unwrap();
        std::fs::create_dir(ws.path().join(".git")).unwrap();
        let config = "[core]\n\thooksPath = .husky\n[include]\n\tpath = ../.gitconfig-local\n\
                      [includeIf \"gitdir:~/x/\"]\n\tpath = \"/etc/outside\"\n[user]\n\tname = x\n";
        std::fs::write(ws.path().join(".git/config"), config).unwrap();
        let t = targets(ws.path());
        assert_eq!(
            t,
            vec![
                Target {
                    path: ws.path().join(".husky"),
                    dir: true
                },
                Target {
                    path: ws.path().join(".gitconfig-local"),
                    dir: false
                },
            ]
        );
    }

    /// Read as git reads them (found by the `git_paths` fuzz target, which compares with
    /// git): a trailing comment after a quoted value, a key on its section's line, a
    /// continued value, escapes.
    #[test]
    fn paths_are_read_as_git_reads_them() {
        let text = "[Core]\n\tHooksPath = \"a b\" # c\n[include] path = in\\\ncl\n\
                    [includeIf \"onbranch:x\"]\n\tpath = q\\\"t ; c\n[core \"x\"]\n\thookspath = no\n";
        assert_eq!(
            config_paths(text),
            [
                ("core.hookspath".to_owned(), "a b".to_owned()),
                ("include.path".to_owned(), "incl".to_owned()),
                ("includeif.path".to_owned(), "q\"t".to_owned()),
            ]
        );
    }

    #[test]
    fn no_config_no_targets() {
        let ws = tempfile::tempdir().unwrap();
        assert!(targets(ws.path()).is_empty());
    }
}
