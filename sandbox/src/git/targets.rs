//! The paths a git config points at that are as powerful as the config itself —
//! `core.hooksPath` (hooks run by the host's next `git commit`), `include.path` and
//! `includeIf.*.path` (more config) — read with the one config parser ([`super::config`]) from
//! the workspace's `.git/config` and the system and global configs, so those inside the
//! workspace get protected too. Also the lexical path normalization the git modules share.

use std::path::{Path, PathBuf};

use super::config::Entry;
pub use crate::plan::GitTarget as Target;

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
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        for t in targets_in(&text, &file, workspace) {
            if !out.contains(&t) {
                out.push(t);
            }
        }
    }
    out
}

/// The targets inside `workspace` named by the config text `text` read from `config`.
pub fn targets_in(text: &str, config: &Path, workspace: &Path) -> Vec<Target> {
    let config_dir = config.parent().unwrap_or(Path::new("/"));
    super::config::parse(text)
        .iter()
        .filter_map(|e| {
            let dir = is_hooks_path(e);
            if !dir && !is_include(e) {
                return None;
            }
            let value = e.value.as_deref().filter(|v| !v.is_empty())?;
            let base = if dir { workspace } else { config_dir };
            let path = normalize(&resolve(base, value));
            (path.starts_with(workspace) && path != workspace).then_some(Target { path, dir })
        })
        .collect()
}

/// `(section.key, value)` for every `core.hooksPath`, `include.path` and `includeIf "…".path`
/// the one parser reads in `text`, the value as git reads it (empty ones too). Public for
/// the fuzz target that compares it with git itself.
#[doc(hidden)]
pub fn config_paths(text: &str) -> Vec<(String, String)> {
    super::config::parse(text)
        .into_iter()
        .filter_map(|e| {
            let key = if is_hooks_path(&e) {
                "core.hookspath"
            } else if is_include(&e) {
                if e.section == "include" {
                    "include.path"
                } else {
                    "includeif.path"
                }
            } else {
                return None;
            };
            Some((key.to_owned(), e.value?))
        })
        .collect()
}

fn is_hooks_path(e: &Entry) -> bool {
    e.section == "core" && e.sub.is_none() && e.key == "hookspath"
}

fn is_include(e: &Entry) -> bool {
    e.key == "path"
        && ((e.section == "include" && e.sub.is_none())
            || (e.section == "includeif" && e.sub.is_some()))
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

#[cfg(test)]
mod tests {
    use super::*;

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

    fn hooks(path: PathBuf) -> Target {
        Target { path, dir: true }
    }

    /// The targets of `.git/config` holding `config` in a fresh workspace.
    fn of(config: &str) -> (tempfile::TempDir, Vec<Target>) {
        let ws = tempfile::tempdir().unwrap();
        let file = ws.path().join(".git/config");
        let t = targets_in(config, &file, ws.path());
        (ws, t)
    }

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
                hooks(ws.path().join(".husky")),
                Target {
                    path: ws.path().join(".gitconfig-local"),
                    dir: false
                },
            ]
        );
    }

    #[test]
    fn an_inline_comment_is_not_part_of_the_path() {
        for config in [
            "[core]\n\thooksPath = .husky # lint\n",
            "[core]\n\thooksPath = .husky ; lint\n",
            "[core]\n\thooksPath = .husky\t#lint\n",
        ] {
            let (ws, t) = of(config);
            assert_eq!(t, vec![hooks(ws.path().join(".husky"))], "{config:?}");
        }
    }

    #[test]
    fn a_commented_out_line_names_nothing() {
        let (_ws, t) = of("[core]\n; hooksPath = .husky\n# hooksPath = .githooks\n");
        assert_eq!(t, vec![]);
    }

    #[test]
    fn a_hash_inside_quotes_is_part_of_the_path() {
        let (ws, t) = of("[core]\n\thooksPath = \".husky # lint\" # a comment\n");
        assert_eq!(t, vec![hooks(ws.path().join(".husky # lint"))]);
        let (ws, t) = of("[core]\n\thooksPath = \"hooks;v2\"\n");
        assert_eq!(t, vec![hooks(ws.path().join("hooks;v2"))]);
    }

    #[test]
    fn a_key_on_the_section_header_line_counts() {
        let (ws, t) = of("[core] hooksPath = .husky\n");
        assert_eq!(t, vec![hooks(ws.path().join(".husky"))]);
        let (ws, t) = of("[include] path = ../local.cfg\n");
        assert_eq!(
            t,
            vec![Target {
                path: ws.path().join("local.cfg"),
                dir: false
            }]
        );
    }

    #[test]
    fn a_continued_value_is_joined() {
        let (ws, t) = of("[core]\n\thooksPath = .hu\\\nsky\n");
        assert_eq!(t, vec![hooks(ws.path().join(".husky"))]);
    }

    #[test]
    fn section_and_key_names_are_case_insensitive_and_other_sections_ignored() {
        let (ws, t) = of("[CORE]\n\tHOOKSPATH = .husky\n[other]\n\thooksPath = x\n");
        assert_eq!(t, vec![hooks(ws.path().join(".husky"))]);
    }

    #[test]
    fn a_path_outside_the_workspace_or_the_workspace_itself_is_not_a_target() {
        let (_ws, t) = of("[core]\n\thooksPath = ../../elsewhere\n\thooksPath = .\n");
        assert_eq!(t, vec![]);
    }

    #[test]
    fn no_config_no_targets() {
        let ws = tempfile::tempdir().unwrap();
        assert!(targets(ws.path()).is_empty());
    }
}
