//! The paths no tool child may write, at every level and under `[autonomy] full_host_writes`
//! too: what the user's next shell, login, editor, agent or tool runs or trusts (shell start-up
//! files, the directories on the daemon's `PATH`, autostart and cron entries, git and tool
//! configuration that names programs, editor and agent configuration, `~/.ssh`), the daemon's
//! `workspace_dir`, and the other live sessions' workspaces. One list, as data: each entry
//! carries the reason it is there ([`Why`]; `docs/policy.md` gives the same reasons).
//!
//! The policy refuses a file tool's write to an entry; the profile keeps every entry that lies
//! under a writable root read-only (or, when it does not exist yet, denied for the run: see
//! [`crate::policy::profile`]), and the host roots of `full_host_writes` are carved around them
//! (see [`crate::policy::reach`]).

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use super::resolve::{Normalizer, normalize};

/// Why a path is never writable from a tool child.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    ShellStartUp,
    OnPath,
    UserBin,
    Autostart,
    Cron,
    GitConfig,
    ToolConfig,
    Ssh,
    EditorConfig,
    AgentConfig,
    WorkspaceDir,
    OtherSession,
}

impl Why {
    /// The reason in words, as the policy's refusals and the docs give it.
    pub fn text(self) -> &'static str {
        match self {
            Why::ShellStartUp => "a shell start-up file: the user's next shell runs it",
            Why::OnPath => {
                "a directory on the daemon's PATH: a program planted there shadows the real one \
                 for the user's next shell and for zeroclaw itself"
            }
            Why::UserBin => "the user's own program directory, on most shells' PATH",
            Why::Autostart => "autostart: the session manager runs what is there at login",
            Why::Cron => "crontabs: cron runs what is there",
            Why::GitConfig => {
                "git configuration: it names programs git runs (hooks, fsmonitor, pagers, \
                 credential helpers)"
            }
            Why::ToolConfig => {
                "tool configuration that runs programs (cargo's build wrappers, npm's and pip's \
                 scripts and indexes)"
            }
            Why::Ssh => "SSH keys and configuration (ProxyCommand, authorized_keys)",
            Why::EditorConfig => {
                "editor configuration: the editor runs the tasks and extensions it names"
            }
            Why::AgentConfig => {
                "agent configuration: the agent runs the hooks and MCP servers it names, unasked"
            }
            Why::WorkspaceDir => "zeroclaw's own state (`workspace_dir`)",
            Why::OtherSession => "another session's workspace",
        }
    }
}

/// Paths under the daemon's home directory, with their reasons.
pub const HOME_ENTRIES: &[(&str, Why)] = &[
    (".bashrc", Why::ShellStartUp),
    (".bash_profile", Why::ShellStartUp),
    (".bash_login", Why::ShellStartUp),
    (".bash_logout", Why::ShellStartUp),
    (".profile", Why::ShellStartUp),
    (".zshenv", Why::ShellStartUp),
    (".zshrc", Why::ShellStartUp),
    (".zprofile", Why::ShellStartUp),
    (".zlogin", Why::ShellStartUp),
    (".zlogout", Why::ShellStartUp),
    (".config/fish", Why::ShellStartUp),
    (".pam_environment", Why::ShellStartUp),
    (".xprofile", Why::ShellStartUp),
    (".xsessionrc", Why::ShellStartUp),
    (".local/bin", Why::UserBin),
    (".config/autostart", Why::Autostart),
    (".config/systemd", Why::Autostart),
    (".gitconfig", Why::GitConfig),
    (".config/git", Why::GitConfig),
    (".cargo/config.toml", Why::ToolConfig),
    (".cargo/config", Why::ToolConfig),
    (".npmrc", Why::ToolConfig),
    (".pip", Why::ToolConfig),
    (".config/pip", Why::ToolConfig),
    (".ssh", Why::Ssh),
    (".config/zed", Why::EditorConfig),
    (".vscode", Why::EditorConfig),
    (".codex", Why::AgentConfig),
    (".claude", Why::AgentConfig),
    (".claude.json", Why::AgentConfig),
];

/// System paths, with their reasons.
pub const SYSTEM_ENTRIES: &[(&str, Why)] = &[
    ("/var/spool/cron", Why::Cron),
    ("/etc/crontab", Why::Cron),
    ("/etc/cron.d", Why::Cron),
];

/// One path no tool child may write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Normalized (see [`normalize`]).
    pub path: PathBuf,
    pub why: Why,
}

/// A [`list`] resolved on first use, then shared by the clones of the policy holding it.
///
/// Resolving normalizes every entry against the host (some fifty paths: a fifth of a plain
/// turn's CPU and its only file system calls when it was done as each turn's policy was
/// built): a turn whose model calls no tool never needs the list, and the calls of a turn that
/// does all see the one resolved at its first call. A policy built again (each turn, each mode
/// change) resolves afresh.
#[derive(Debug, Clone)]
pub struct Lazy {
    home: Option<PathBuf>,
    path_var: Option<OsString>,
    workspace_dir: PathBuf,
    resolved: Arc<OnceLock<Vec<Entry>>>,
}

impl Lazy {
    /// The daemon's list: [`HOME_ENTRIES`] under `$HOME`, [`SYSTEM_ENTRIES`], every absolute
    /// directory on `$PATH`, and `workspace_dir` (`$HOME` and `$PATH` read now).
    pub fn for_daemon(workspace_dir: &Path) -> Lazy {
        Lazy::of(
            zeroclaw_sandbox::profile::home_dir().as_deref(),
            std::env::var_os("PATH").as_deref(),
            workspace_dir,
        )
    }

    /// [`list`] of these arguments, resolved on first use.
    pub fn of(home: Option<&Path>, path_var: Option<&OsStr>, workspace_dir: &Path) -> Lazy {
        Lazy {
            home: home.map(Path::to_path_buf),
            path_var: path_var.map(OsStr::to_os_string),
            workspace_dir: workspace_dir.to_path_buf(),
            resolved: Arc::default(),
        }
    }

    /// The entries, resolved by the first caller.
    pub fn entries(&self) -> &[Entry] {
        self.resolved.get_or_init(|| {
            list(
                self.home.as_deref(),
                self.path_var.as_deref(),
                &self.workspace_dir,
            )
        })
    }
}

/// [`HOME_ENTRIES`] under `home`, [`SYSTEM_ENTRIES`], every absolute directory on `path_var`
/// (a `PATH` value) and `workspace_dir`, each normalized now.
pub fn list(home: Option<&Path>, path_var: Option<&OsStr>, workspace_dir: &Path) -> Vec<Entry> {
    let mut paths: Vec<(PathBuf, Why)> = Vec::new();
    if let Some(home) = home {
        paths.extend(HOME_ENTRIES.iter().map(|(p, why)| (home.join(p), *why)));
    }
    paths.extend(
        SYSTEM_ENTRIES
            .iter()
            .map(|(p, why)| (PathBuf::from(p), *why)),
    );
    for dir in path_var.map(std::env::split_paths).into_iter().flatten() {
        // A relative entry names a different directory in every cwd: nothing to keep.
        if dir.is_absolute() && dir != Path::new("/") {
            paths.push((dir, Why::OnPath));
        }
    }
    paths.push((workspace_dir.to_path_buf(), Why::WorkspaceDir));
    let mut normalizer = Normalizer::default();
    let mut out: Vec<Entry> = paths
        .iter()
        .map(|(path, why)| Entry {
            path: normalizer.normalize(path),
            why: *why,
        })
        .collect();
    let mut seen = std::collections::HashSet::new();
    out.retain(|e| seen.insert(e.path.clone()));
    out
}

/// The other sessions' workspaces as entries; those equal to or holding `cwd` are left out
/// (a session shares its own workspace, and one inside another's is its own to write).
pub fn other_sessions<'a>(
    cwd: &'a Path,
    workspaces: impl IntoIterator<Item = &'a PathBuf> + 'a,
) -> impl Iterator<Item = Entry> + 'a {
    workspaces
        .into_iter()
        .map(|w| normalize(w))
        .filter(move |w| !cwd.starts_with(w))
        .map(|path| Entry {
            path,
            why: Why::OtherSession,
        })
}

/// The entry that equals or holds `path`, if any.
pub fn matching<'a>(
    entries: impl IntoIterator<Item = &'a Entry>,
    path: &Path,
) -> Option<&'a Entry> {
    entries.into_iter().find(|e| path.starts_with(&e.path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_holds_home_system_path_and_state_entries_each_once() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().canonicalize().unwrap();
        let bin = home.join("bin");
        std::fs::create_dir(&bin).unwrap();
        let path = std::env::join_paths([bin.as_path(), Path::new("relative"), &bin]).unwrap();
        let state = home.join("state");
        let entries = list(Some(&home), Some(&path), &state);
        let found = |p: &Path| matching(&entries, p).map(|e| e.why);
        assert_eq!(found(&home.join(".bashrc")), Some(Why::ShellStartUp));
        assert_eq!(found(&home.join(".local/bin/git")), Some(Why::UserBin));
        assert_eq!(found(&bin.join("git")), Some(Why::OnPath));
        assert_eq!(found(&state.join("x")), Some(Why::WorkspaceDir));
        assert_eq!(
            found(Path::new("/var/spool/cron/crontabs/root")),
            Some(Why::Cron)
        );
        assert_eq!(found(&home.join("project/file")), None);
        assert_eq!(entries.iter().filter(|e| e.path == bin).count(), 1);
        assert!(entries.iter().all(|e| e.path.is_absolute()));
    }

    #[test]
    fn another_session_holding_the_cwd_is_not_an_entry() {
        let (outer, inner, other) = (
            PathBuf::from("/p"),
            PathBuf::from("/p/sub"),
            PathBuf::from("/q"),
        );
        let all = [outer.clone(), inner.clone(), other.clone()];
        let got: Vec<PathBuf> = other_sessions(&inner, all.iter()).map(|e| e.path).collect();
        assert_eq!(got, [other]);
    }
}
