//! [`Sandbox`]'s foreground run: the one place that joins the daemon side (the caller's
//! [`foreground`] supervision) to the child side ([`helper::forked`]), which never import
//! each other.

use std::ffi::OsStr;

use crate::Sandbox;
use crate::error::SandboxError;
use crate::foreground::Caller;
use crate::helper::forked::{self, Started};
use crate::launcher::{Outcome, Stream};

impl Sandbox {
    /// Runs `argv` confined by `profile` in the foreground of a **single-threaded** caller
    /// (checked): stdin is relayed from the caller's, output is passed to `on_output` (not
    /// kept in the returned [`Outcome`]) within the output limit. SIGINT, SIGTERM and SIGHUP
    /// are held while it runs and end it as [`crate::End::Cancelled`].
    pub fn run_foreground<I, S>(
        &self,
        profile: &crate::Profile,
        argv: I,
        on_output: impl FnMut(Stream, &[u8]),
    ) -> Result<Outcome, SandboxError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let plan = self.plan(profile, crate::planner::command(argv)?, None)?;
        if crate::egress_plan::proxied(&plan) {
            // Nobody here would serve the proxy: its listeners go to the async launcher.
            return Err(SandboxError::Profile(
                "network proxy runs through the launcher (`Sandbox::spawn`), not in the \
                 foreground"
                    .into(),
            ));
        }
        let caller = Caller::prepare()?;
        let started = forked::start(&plan, || caller.install_in_child())?;
        let init = matches!(started, Started::Init(_));
        let result = caller.supervise(started.pid(), init, self.backend(), profile, on_output);
        started.finish(&plan);
        result
    }
}
