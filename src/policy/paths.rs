//! The policy's path checks, on paths resolved against the session cwd ([`super::resolve`]):
//! forbidden paths (every level), the never-writable paths and protected git paths (writes),
//! what a `full` session may write, and the workspace jail.

use std::path::{Path, PathBuf};

use super::Policy;
use super::resolve::{expand_home, normalize};
use crate::config::AutonomyLevel;

/// What a tool wants to do with a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
}

/// Paths inside the workspace a tool may never write (git runs them on the host later).
const PROTECTED: &[&str] = &[".git/hooks", ".git/config", ".git/commondir"];

/// A path the policy refuses: the rule that refused it (as the audit log names it) and the
/// reason shown to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denied {
    /// `forbidden_path`, `process_secret`, `protected_git_path` or `outside_workspace`.
    pub rule: &'static str,
    pub reason: String,
}

impl Denied {
    fn new(rule: &'static str, reason: String) -> Denied {
        Denied { rule, reason }
    }
}

impl std::fmt::Display for Denied {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.reason)
    }
}

impl Policy {
    /// The absolute path a tool argument names, relative to `cwd`.
    pub fn resolve(&self, cwd: &Path, raw: &str) -> PathBuf {
        let expanded = expand_home(Path::new(raw));
        normalize(&cwd.join(expanded))
    }

    /// Resolves `raw` and checks it; the error is the rule and the reason shown to the model.
    pub fn check_path(&self, cwd: &Path, raw: &str, access: Access) -> Result<PathBuf, Denied> {
        let path = self.resolve(cwd, raw);
        if !self.checks {
            return Ok(path);
        }
        if let Some(forbidden) = self.forbidden_match(&path) {
            return Err(Denied::new(
                "forbidden_path",
                format!(
                    "denied by policy: {} is inside the forbidden path {}",
                    path.display(),
                    forbidden.display()
                ),
            ));
        }
        if let Some(name) = proc_secret(&path) {
            return Err(Denied::new(
                "process_secret",
                format!(
                    "denied by policy: {} exposes another process's {name}",
                    path.display()
                ),
            ));
        }
        if access == Access::Write
            && let Some(p) = PROTECTED.iter().find(|p| path.starts_with(cwd.join(p)))
        {
            return Err(Denied::new(
                "protected_git_path",
                format!("denied by policy: {p} is protected (git would run it on the host)"),
            ));
        }
        if access == Access::Write
            && let Some(entry) =
                super::never_writable::matching(&self.never_writable_for(cwd), &path)
        {
            return Err(Denied::new(
                "never_writable",
                format!(
                    "denied by policy: {} is never writable from a tool ({}: {}); no setting \
                     allows it",
                    path.display(),
                    entry.path.display(),
                    entry.why.text()
                ),
            ));
        }
        if access == Access::Write
            && self.level == AutonomyLevel::Full
            && !self.full_host_writes
            && !self.reachable(cwd, &path, access)
        {
            return Err(Denied::new(
                "full_writes_outside",
                format!(
                    "denied by policy: {} is outside the session workspace {} and the \
                     read-write allowed roots; a `full` session reads the host but writes only \
                     there. To allow it, the operator adds an [autonomy] allowed_roots entry \
                     with write = true covering it (or sets [autonomy] full_host_writes = true)",
                    path.display(),
                    cwd.display()
                ),
            ));
        }
        if self.workspace_only && !self.reachable(cwd, &path, access) {
            return Err(Denied::new(
                "outside_workspace",
                format!(
                    "denied by policy: {} is outside the session workspace {} (workspace_only); \
                     use a path inside it, or ask the user to add an allowed root",
                    path.display(),
                    cwd.display()
                ),
            ));
        }
        Ok(path)
    }

    fn reachable(&self, cwd: &Path, path: &Path, access: Access) -> bool {
        path.starts_with(cwd)
            || self
                .allowed_roots
                .iter()
                .any(|(root, write)| path.starts_with(root) && (*write || access == Access::Read))
    }
}

/// `/proc/<pid>/{environ,mem,cmdline,...}` of a process: never a tool's business.
fn proc_secret(path: &Path) -> Option<&'static str> {
    let rest = path.strip_prefix("/proc").ok()?;
    let mut parts = rest.components();
    parts.next()?;
    let leaf = parts.next()?.as_os_str().to_str()?;
    [
        "environ", "mem", "cmdline", "maps", "fd", "root", "cwd", "auxv",
    ]
    .into_iter()
    .find(|name| *name == leaf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_removes_dots_and_keeps_missing_tails() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let p = normalize(&root.join("a/../b/./c"));
        assert_eq!(p, root.join("b/c"));
        assert_eq!(normalize(Path::new("/../../etc")), PathBuf::from("/etc"));
    }

    #[test]
    fn a_planted_symlink_is_followed_before_the_check() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::os::unix::fs::symlink("/etc", root.join("link")).unwrap();
        assert_eq!(
            normalize(&root.join("link/passwd")),
            PathBuf::from("/etc/passwd")
        );
    }

    #[test]
    fn checks_forbidden_protected_and_outside_paths_with_reasons() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap().join("ws");
        std::fs::create_dir(&ws).unwrap();
        let mut policy = Policy::default();
        let denied = |p: &Policy, raw: &str, access| {
            let denied = p.check_path(&ws, raw, access).unwrap_err();
            format!("{} {}", denied.rule, denied.reason)
        };
        let shadow = denied(&policy, "/etc/shadow", Access::Read);
        assert!(shadow.starts_with("forbidden_path "), "{shadow}");
        assert!(denied(&policy, "~/.ssh/id_ed25519", Access::Read).contains("forbidden path"));
        assert!(shadow.contains("forbidden path"));
        let hook = denied(&policy, ".git/hooks/pre-commit", Access::Write);
        assert!(hook.starts_with("protected_git_path "), "{hook}");
        assert!(hook.contains("protected"));
        let outside = denied(&policy, "../outside", Access::Write);
        assert!(outside.starts_with("outside_workspace "), "{outside}");
        assert!(outside.contains("outside the session"));
        let environ = denied(&policy, "/proc/1/environ", Access::Read);
        assert!(environ.starts_with("process_secret "), "{environ}");
        assert!(environ.contains("environ"));
        assert_eq!(
            policy.check_path(&ws, "a/b.txt", Access::Write),
            Ok(ws.join("a/b.txt"))
        );
        policy.workspace_only = false;
        assert!(policy.check_path(&ws, "../outside", Access::Write).is_ok());
        assert!(denied(&policy, "~/.aws/credentials", Access::Read).contains("denied by policy"));
        policy.checks = false;
        assert!(
            policy
                .check_path(&ws, "~/.aws/credentials", Access::Read)
                .is_ok()
        );
    }

    #[test]
    fn proc_secrets_are_recognized() {
        assert_eq!(proc_secret(Path::new("/proc/1/environ")), Some("environ"));
        assert_eq!(proc_secret(Path::new("/proc/cpuinfo")), None);
    }
}
