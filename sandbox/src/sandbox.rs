//! [`Sandbox`], the crate's main type (daemon side): a chosen backend, the helper executable,
//! its zygote and warm helpers; what a call is checked and planned with. Planning a
//! call is [`crate::plan::planner`]'s, starting and supervising it [`crate::launcher`]'s, a
//! foreground run `foreground::run`'s.

use std::ffi::{OsStr, OsString};
use std::future::Future;
use std::path::PathBuf;

use crate::backend::{Backend, BackendChoice};
use crate::error::SandboxError;
use crate::launcher::{Confined, Launcher, Outcome};
use crate::plan::planner::{Planner, command};
use crate::profile::Profile;

/// A configured sandbox: a chosen backend and the helper executable.
#[derive(Debug, Clone)]
pub struct Sandbox {
    pub(crate) launcher: Launcher,
}

impl Sandbox {
    /// Detects what works here and picks the backend for `choice` (fails closed).
    pub fn new(choice: BackendChoice, allow_partial: bool) -> Result<Self, SandboxError> {
        let backend = crate::detect::choose(choice, allow_partial, &crate::detect::Live)?;
        Ok(Self::with_backend(backend, allow_partial))
    }

    /// Like [`Sandbox::new`] without trying user namespaces or bwrap first (see
    /// [`crate::detect::FirstRunTries`]): for one-shot callers, which on a
    /// [`Stage::Namespaces`](crate::Stage::Namespaces) or [`Stage::Bubblewrap`](crate::Stage::Bubblewrap) setup failure fall back to
    /// [`Sandbox::new`].
    pub fn new_unprobed(choice: BackendChoice, allow_partial: bool) -> Result<Self, SandboxError> {
        let probes = crate::detect::FirstRunTries;
        let backend = crate::detect::choose(choice, allow_partial, &probes)?;
        Ok(Self::with_backend(backend, allow_partial))
    }

    fn with_backend(backend: Backend, allow_partial: bool) -> Self {
        // Only the bubblewrap backend runs it (a PATH search otherwise paid per Sandbox).
        let bwrap = (backend == Backend::Bubblewrap)
            .then(crate::detect::bwrap_path)
            .flatten();
        let planner = Planner {
            backend,
            allow_partial,
            bwrap_refuses_cap_add: bwrap
                .as_deref()
                .is_some_and(crate::host::bwrap_refuses_cap_add),
            bwrap,
            git: crate::git::READER,
        };
        Sandbox {
            launcher: Launcher::new(planner, PathBuf::from("/proc/self/exe")),
        }
    }

    /// Uses `exe` as the helper (it must call [`crate::helper::run_if_helper`] first thing).
    /// Defaults to `/proc/self/exe`.
    pub fn with_helper(mut self, exe: impl Into<PathBuf>) -> Self {
        self.launcher = self.launcher.for_helper(exe.into());
        self
    }

    /// Each call returns only once its helper has exited, with every clean-up done: for a
    /// caller that exits right after its calls. Otherwise a call returns at the helper's word
    /// that it has ended, and the last of the clean-up (a git stage's `.git` placeholder, the
    /// call's cgroups) follows it, off the caller's path.
    pub fn settling(mut self) -> Self {
        self.launcher.settle = true;
        self
    }

    /// The backend in use.
    pub fn backend(&self) -> Backend {
        self.launcher.planner.backend
    }

    /// Runs `argv` confined by `profile` with stdin closed, collecting output.
    pub async fn run<I, S>(
        &self,
        profile: &Profile,
        argv: I,
        cancel: impl Future<Output = ()>,
    ) -> Result<Outcome, SandboxError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut child = self.spawn(profile, argv).await?;
        drop(child.take_stdin());
        child.wait(|_, _| {}, cancel).await
    }

    /// Runs the registered operation `op` (see [`crate::helper::run_if_helper_with`]) inside
    /// the sandbox with `payload` as its input: `Outcome::stdout` holds its result (exit 0) or
    /// `Outcome::stderr` its error text (exit 1). Same confinement, limits and kill-tree as a
    /// command; an unknown operation is a [`Stage::Exec`](crate::Stage::Exec) setup error.
    pub async fn run_op(
        &self,
        profile: &Profile,
        op: &str,
        payload: Vec<u8>,
        cancel: impl Future<Output = ()>,
    ) -> Result<Outcome, SandboxError> {
        let mut child = self
            .launcher
            .start(profile, Vec::new(), Some(op.to_string()))
            .await?;
        if let Some(mut stdin) = child.take_stdin() {
            tokio::spawn(async move {
                use tokio::io::AsyncWriteExt;
                let _ = stdin.write_all(&payload).await;
            });
        }
        child.wait(|_, _| {}, cancel).await
    }

    /// Starts `argv` confined by `profile`. Returns once the helper reports the confinement
    /// complete (or with the failing [`Stage`](crate::Stage)).
    pub async fn spawn<I, S>(&self, profile: &Profile, argv: I) -> Result<Confined, SandboxError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.launcher.start(profile, command(argv)?, None).await
    }

    /// The helper's instructions for `argv` (or the operation `op`) under `profile`.
    pub(crate) fn plan(
        &self,
        profile: &Profile,
        argv: Vec<OsString>,
        op: Option<String>,
    ) -> Result<crate::plan::Plan, SandboxError> {
        self.launcher.planner.plan(profile, argv, op)
    }
}
