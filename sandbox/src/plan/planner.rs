//! What a call is checked and planned with on the daemon side: a [`Planner`] (the chosen
//! backend, whether partial confinement is accepted, the bwrap path) turns a profile and an
//! argv into the helper's [`Plan`](crate::plan::Plan), after the checks every backend makes.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::backend::Backend;
use crate::error::SandboxError;
use crate::profile::Profile;

/// The part of a [`crate::Sandbox`] a plan depends on.
#[derive(Debug, Clone)]
pub(crate) struct Planner {
    pub(crate) backend: Backend,
    pub(crate) allow_partial: bool,
    pub(crate) bwrap: Option<PathBuf>,
    /// That bwrap refuses `--cap-add` ([`crate::host::bwrap_refuses_cap_add`], read once
    /// with the path: its mode and our uid do not change per call).
    pub(crate) bwrap_refuses_cap_add: bool,
    /// What the plan reads of git and the git section it adds (`crate::git::READER`).
    pub(crate) git: crate::plan::GitReader,
}

impl Planner {
    /// The helper's instructions for `argv` (or the operation `op`) under `profile`.
    pub(crate) fn plan(
        &self,
        profile: &Profile,
        argv: Vec<OsString>,
        op: Option<String>,
    ) -> Result<crate::plan::Plan, SandboxError> {
        validate(profile)?;
        let facts = crate::plan::HostFacts::gather(self.backend, profile, self.git);
        directories(profile, &facts)?;
        let scratch =
            matches!(self.backend, Backend::Landlock | Backend::Seatbelt).then(scratch_path);
        let mut plan = crate::plan::build(self.backend, profile, &facts, argv, scratch);
        plan.op = op;
        plan.allow_partial = self.allow_partial;
        plan.bwrap = crate::plan::bubblewrap(
            self.backend,
            &facts,
            self.bwrap.clone(),
            self.bwrap_refuses_cap_add,
        );
        // Bubblewrap launched by another user: the helper mounts the layer around bwrap when
        // bwrap is not setuid and the workspace has no `.git` (`plan::layer::Layering`).
        let layering = if plan.bwrap.as_ref().is_some_and(|b| !b.refuses_cap_add)
            && !facts.git.workspace.exists()
        {
            crate::plan::layer::Layering::Outside
        } else {
            crate::plan::layer::Layering::Inside
        };
        crate::plan::layer::apply(self.backend, profile, &mut plan, layering)?;
        // Git hook: no `.git` yet, none left behind; an existing repository's private stage;
        // the parent repository's.
        (self.git.stage)(&mut plan, profile, &facts);
        crate::plan::egress::apply(self.backend, profile, facts.landlock_abi, &mut plan)?;
        plan.shape = Some(crate::plan::shape::digest(&plan));
        Ok(plan)
    }
}

/// The command's argv, owned; an empty one is a profile error.
pub(crate) fn command<I, S>(argv: I) -> Result<Vec<OsString>, SandboxError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let argv: Vec<OsString> = argv.into_iter().map(|a| a.as_ref().to_owned()).collect();
    if argv.is_empty() {
        return Err(SandboxError::Profile("empty command".into()));
    }
    Ok(argv)
}

/// What every backend refuses before planning: a writable root inside a denied path, a home
/// bind that is not one.
fn validate(profile: &Profile) -> Result<(), SandboxError> {
    if let Some((root, denied)) = profile.root_inside_denied() {
        return Err(SandboxError::Profile(format!(
            "writable root {} lies inside the denied path {}: a denied path holding a root \
             cannot be hidden",
            root.display(),
            denied.display()
        )));
    }
    if let Some(bind) = profile.home_binds.iter().find(|b| !b.is_valid()) {
        return Err(SandboxError::Profile(format!(
            "home bind {} at ~/{}: the host path must be absolute and the place a relative \
             path of plain names",
            bind.host.display(),
            bind.at.display()
        )));
    }
    Ok(())
}

/// What every backend refuses once the host is read: a workspace or cwd that is not a
/// directory (as `facts` found them).
fn directories(profile: &Profile, facts: &crate::plan::HostFacts) -> Result<(), SandboxError> {
    for (what, path) in [("workspace", &profile.workspace), ("cwd", &profile.cwd)] {
        if !facts.is_dir(path) {
            return Err(SandboxError::Profile(format!(
                "{what} {} is not a directory",
                path.display()
            )));
        }
    }
    Ok(())
}

fn scratch_path() -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    std::env::temp_dir().join(format!("zeroclaw-sbx-{}-{n}-{nanos}", std::process::id()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_backend_refuses_a_workspace_inside_a_denied_path() {
        let dir = tempfile::tempdir().unwrap();
        let denied = dir.path().canonicalize().unwrap();
        let inside = denied.join("project");
        std::fs::create_dir(&inside).unwrap();
        let profiles = [
            Profile::for_workspace(&inside).deny(&denied),
            Profile::for_workspace(&denied).deny(&denied),
            Profile::for_workspace("/")
                .allow_write(&inside)
                .deny(&denied),
        ];
        for backend in [
            Backend::Namespaces,
            Backend::Bubblewrap,
            Backend::Landlock,
            Backend::Seatbelt,
            Backend::None,
        ] {
            let sandbox = Planner {
                backend,
                allow_partial: false,
                bwrap: None,
                bwrap_refuses_cap_add: false,
                git: crate::git::READER,
            };
            for profile in &profiles {
                match sandbox.plan(profile, vec!["true".into()], None) {
                    Err(SandboxError::Profile(msg)) => assert!(
                        msg.contains(&*denied.to_string_lossy()) && msg.contains("denied path"),
                        "{backend:?}: {msg}"
                    ),
                    other => panic!("{backend:?} planned a root inside {denied:?}: {other:?}"),
                }
            }
            let holding = Profile::for_workspace(dir.path()).deny(&inside);
            assert!(
                sandbox.plan(&holding, vec!["true".into()], None).is_ok(),
                "{backend:?}: a denied path inside the workspace is masked, not refused"
            );
        }
    }

    #[test]
    fn the_git_section_comes_from_the_reader_the_daemon_hands_in() {
        let dir = tempfile::tempdir().unwrap();
        let marker = std::path::Path::new("/git-section-marker");
        let planner = Planner {
            backend: Backend::Namespaces,
            allow_partial: false,
            bwrap: None,
            bwrap_refuses_cap_add: false,
            git: crate::plan::GitReader {
                stage: |plan, _, _| {
                    plan.mounts.push(crate::plan::MountOp::Tmpfs {
                        path: "/git-section-marker".into(),
                        mode: 0o700,
                    })
                },
                ..crate::plan::NO_GIT
            },
        };
        let profile = Profile::for_workspace(dir.path());
        let plan = planner.plan(&profile, vec!["true".into()], None).unwrap();
        assert!(
            plan.mounts.iter().any(|op| op.path() == marker),
            "the planner did not add the reader's git section: {:?}",
            plan.mounts
        );
    }

    #[test]
    fn a_home_bind_outside_the_home_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let planner = Planner {
            backend: Backend::Namespaces,
            allow_partial: false,
            bwrap: None,
            bwrap_refuses_cap_add: false,
            git: crate::git::READER,
        };
        for at in ["../x", "/x", ""] {
            let profile = Profile::for_workspace(dir.path()).bind_in_home(dir.path(), at);
            match planner.plan(&profile, vec!["true".into()], None) {
                Err(SandboxError::Profile(msg)) => assert!(msg.contains("home bind"), "{msg}"),
                other => panic!("{at:?} planned: {other:?}"),
            }
        }
    }
}
