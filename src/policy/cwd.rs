//! Which directories a session may work in: not `/` (unless `[autonomy] allow_root_cwd`), and
//! not one that equals or lies inside a denied path — the policy's forbidden paths (config
//! directory, `workspace_dir`, session database, `forbidden_paths`) and the sandbox's own
//! secrets, exactly the denied list of the session's sandbox profile — nor one inside a path
//! no child may write ([`super::never_writable`]: `~/.claude`, a directory on `PATH`, ...;
//! another session's workspace excepted). A denied path *inside*
//! the cwd is fine: the sandbox masks it. The sandbox refuses such a profile on its own too
//! ([`zeroclaw_sandbox::Profile::root_inside_denied`]); this check gives the client the reason
//! before any tool runs.

use std::path::Path;

use super::Policy;

impl Policy {
    /// Whether `cwd` (canonical) may be a session's working directory; the error names the
    /// denied path.
    pub fn check_cwd(&self, cwd: &Path) -> Result<(), String> {
        if cwd == Path::new("/") && !self.allow_root_cwd {
            return Err(
                "cwd / is refused: a session there would have the whole host as its \
                 workspace (set [autonomy] allow_root_cwd = true to allow it)"
                    .to_owned(),
            );
        }
        if let Some(entry) = super::never_writable::matching(&self.never_writable_for(cwd), cwd) {
            return Err(format!(
                "cwd {} is refused: it lies inside {}, which no tool may write ({})",
                cwd.display(),
                entry.path.display(),
                entry.why.text()
            ));
        }
        let profile = self.profile(cwd, &[]);
        match profile.denied.iter().find(|denied| cwd.starts_with(denied)) {
            Some(denied) => Err(format!(
                "cwd {} is refused: it lies inside the denied path {}",
                cwd.display(),
                denied.display()
            )),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cwd_inside_a_denied_path_is_refused_one_holding_it_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let secret = root.join("secret");
        std::fs::create_dir_all(secret.join("inner")).unwrap();
        let mut policy = Policy::default();
        policy.forbidden.push(secret.clone());
        for cwd in [secret.clone(), secret.join("inner")] {
            let error = policy.check_cwd(&cwd).unwrap_err();
            assert!(error.contains(&*secret.to_string_lossy()), "{error}");
        }
        assert_eq!(policy.check_cwd(&root), Ok(()));
        assert!(policy.check_cwd(Path::new("/")).is_err());
        policy.allow_root_cwd = true;
        assert_eq!(policy.check_cwd(Path::new("/")), Ok(()));
    }

    #[test]
    fn a_cwd_inside_a_never_writable_path_is_refused_with_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let agent = root.join(".claude/project");
        std::fs::create_dir_all(&agent).unwrap();
        let policy = Policy {
            never_writable: super::super::never_writable::Lazy::of(
                Some(&root),
                None,
                &root.join("state"),
            ),
            ..Policy::default()
        };
        let error = policy.check_cwd(&agent).unwrap_err();
        assert!(error.contains("agent configuration"), "{error}");
        assert_eq!(
            policy.check_cwd(&root),
            Ok(()),
            "the home itself may be a cwd"
        );
    }
}
