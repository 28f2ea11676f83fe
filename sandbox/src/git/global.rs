//! The user's global git configuration as a confined command sees it: a validated copy of
//! `$XDG_CONFIG_HOME/git/config` (else `~/.config/git/config`) and `~/.gitconfig`, in git's
//! order (the later wins), holding only keys that neither run a program nor name a file
//! outside: the identity, the branch and merge habits, colours, and aliases that expand to
//! git subcommands. The helper writes it into the call's private HOME ([`crate::plan::GIT_GLOBAL_NAME`]) and the
//! child's `GIT_CONFIG_GLOBAL` names it, so the user's real files are never read by the
//! child's git, and `git config --global` inside changes the copy, for that call only.
//!
//! The allowlist is [`super::validate::ALLOWED`] (what a repository the run created may keep)
//! and [`GLOBAL_ALLOWED`]; every other key (hooks, fsmonitor, pagers, editors, ssh commands,
//! credential helpers, filters and diff drivers, includes, URL rewrites, `!` aliases) is left
//! out, with the same one-line reasons as a repository's refusals.

use std::path::{Path, PathBuf};

use super::config::Entry;
use super::validate::filter_config_with;

/// Keys a user's global config may pass on beyond [`super::validate::ALLOWED`] (lowercase
/// `section.key`; `section.*` for every key of the section). None runs a program or names a
/// file; `alias.*` is kept only for aliases that name a git subcommand first (not `!`, a shell
/// command, nor `-`, git's own options such as `-c core.fsmonitor=...`).
pub const GLOBAL_ALLOWED: &[&str] = &[
    "color.*",
    "advice.*",
    "alias.*",
    "core.whitespace",
    "diff.algorithm",
    "diff.renames",
    "diff.colormoved",
    "diff.mnemonicprefix",
    "diff.context",
    "merge.conflictstyle",
    "merge.ff",
    "rebase.autosquash",
    "rebase.autostash",
    "rebase.updaterefs",
    "push.autosetupremote",
    "push.followtags",
    "fetch.prunetags",
    "commit.verbose",
    "commit.cleanup",
    "status.short",
    "status.branch",
    "status.showuntrackedfiles",
    "log.date",
    "log.decorate",
    "tag.sort",
    "branch.sort",
    "column.ui",
    "rerere.enabled",
];

/// Whether a global config may pass `e` on (besides [`super::validate::ALLOWED`]).
fn global_allowed(e: &Entry) -> bool {
    let whole = format!("{}.*", e.section);
    let named = format!("{}.{}", e.section, e.key);
    match e.section.as_str() {
        // `[alias] x = !cmd` runs a shell command, `x = -c key=value cmd` sets any key;
        // `[alias "x"]` is no alias git reads.
        "alias" => {
            e.sub.is_none()
                && e.value
                    .as_deref()
                    .is_some_and(|v| !v.trim_start().starts_with(['!', '-']))
        }
        "color" | "advice" => GLOBAL_ALLOWED.contains(&whole.as_str()),
        _ => e.sub.is_none() && GLOBAL_ALLOWED.contains(&named.as_str()),
    }
}

/// The user's global config files in the order git reads them: the XDG one, then
/// `~/.gitconfig` (`xdg`: `$XDG_CONFIG_HOME` when set and absolute).
pub fn sources(home: &Path, xdg: Option<&Path>) -> Vec<PathBuf> {
    let xdg = xdg
        .filter(|x| x.is_absolute())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| home.join(".config"));
    vec![xdg.join("git/config"), home.join(".gitconfig")]
}

/// The text of each of `files` that is there, readable and not too large, with its name.
pub fn read(files: &[PathBuf]) -> Vec<(String, String)> {
    super::global_cache::read_stamped(files).0
}

/// The validated copy of the user's global config under `home` (`xdg`: `$XDG_CONFIG_HOME`):
/// the plan's [`crate::plan::GitReader::global`]. Read and validated again only when one of
/// its files changed ([`super::global_cache`]): every call plans it, twice with a warm helper.
pub fn validated(home: &Path, xdg: Option<&Path>) -> String {
    let files = sources(home, xdg);
    super::global_cache::validated(&files, |configs| copy(configs).0)
}

/// The validated copy of `configs` (`(name, text)`, in git's reading order): the kept entries
/// rendered canonically, and one refusal line per key left out.
pub fn copy(configs: &[(String, String)]) -> (String, Vec<String>) {
    let (mut text, mut refused) = (String::new(), Vec::new());
    for (shown, config) in configs {
        let (kept, r) = filter_config_with(config, shown, global_allowed);
        text.push_str(&kept);
        refused.extend(r);
    }
    (text, refused)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_and_habits_pass_programs_and_pointers_do_not() {
        let user = "[user]\n\tname = Ada Lovelace\n\temail = ada@example.org\n\
                    [init]\n\tdefaultBranch = main\n[color]\n\tui = auto\n\
                    [color \"diff\"]\n\tmeta = yellow\n[alias]\n\tst = status -sb\n\
                    \tboom = !sh -c 'touch /x'\n\tsneak = -c core.fsmonitor=/f status\n[pull]\n\trebase = true\n\
                    [core]\n\tautocrlf = input\n\thooksPath = /h\n\tfsmonitor = /f\n\
                    \tsshCommand = ssh -i k\n\tpager = less\n\teditor = vim\n\
                    \texcludesFile = ~/.gitignore\n[filter \"lfs\"]\n\tclean = git-lfs clean\n\
                    [diff]\n\texternal = difft\n\talgorithm = histogram\n\
                    [credential]\n\thelper = store\n[include]\n\tpath = ~/.more\n\
                    [includeIf \"gitdir:~/w/\"]\n\tpath = ~/.w\n\
                    [url \"git@host:\"]\n\tinsteadOf = https://host/\n\
                    [commit]\n\tgpgSign = true\n[gpg]\n\tprogram = gpg2\n";
        let (text, refused) = copy(&[("~/.gitconfig".into(), user.into())]);
        let kept: Vec<String> = super::super::config::parse(&text)
            .iter()
            .map(|e| match &e.sub {
                Some(s) => format!("{}.{s}.{}", e.section, e.key),
                None => format!("{}.{}", e.section, e.key),
            })
            .collect();
        assert_eq!(
            kept,
            [
                "user.name",
                "user.email",
                "init.defaultbranch",
                "color.ui",
                "color.diff.meta",
                "alias.st",
                "pull.rebase",
                "core.autocrlf",
                "diff.algorithm",
            ]
        );
        for key in [
            "alias.boom",
            "alias.sneak",
            "core.hookspath",
            "core.fsmonitor",
            "core.sshcommand",
            "core.pager",
            "core.editor",
            "core.excludesfile",
            "filter.lfs.clean",
            "diff.external",
            "credential.helper",
            "include.path",
            "url.git@host:.insteadof",
            "commit.gpgsign",
            "gpg.program",
        ] {
            assert!(
                refused
                    .iter()
                    .any(|r| r.contains(&format!("refused {key} "))),
                "{key}: {refused:?}"
            );
        }
        assert!(
            refused
                .iter()
                .any(|r| r.contains("includeif.gitdir:~/w/.path"))
        );
    }

    #[test]
    fn the_xdg_file_comes_first_so_the_home_file_wins() {
        let d = tempfile::tempdir().unwrap();
        let files = sources(d.path(), None);
        assert_eq!(files[1], d.path().join(".gitconfig"));
        std::fs::create_dir_all(d.path().join(".config/git")).unwrap();
        std::fs::write(&files[0], "[user]\n\tname = xdg\n").unwrap();
        std::fs::write(&files[1], "[user]\n\tname = home\n").unwrap();
        let (text, _) = copy(&read(&files));
        let names: Vec<_> = super::super::config::parse(&text)
            .into_iter()
            .filter_map(|e| e.value)
            .collect();
        assert_eq!(names, ["xdg", "home"]);
        let elsewhere = sources(d.path(), Some(Path::new("/nonexistent-xdg")));
        assert_eq!(elsewhere[0], Path::new("/nonexistent-xdg/git/config"));
    }
}
