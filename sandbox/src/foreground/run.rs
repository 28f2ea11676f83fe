//! [`Sandbox`]'s foreground run: the one place that joins the daemon side (the caller's
//! [`crate::foreground`] supervision) to the child side ([`helper::forked`]), which never import
//! each other.

use std::ffi::OsStr;
use std::os::fd::OwnedFd;

use crate::Sandbox;
use crate::egress::launch::{EgressListeners, Pending};
use crate::error::SandboxError;
use crate::foreground::Caller;
use crate::foreground::egress::{Egress, Serve};
use crate::helper::forked::{self, Started};
use crate::launcher::{Outcome, Stream};

impl Sandbox {
    /// Runs `argv` confined by `profile` in the foreground of a **single-threaded** caller
    /// (checked): stdin is relayed from the caller's, output is passed to `on_output` (not
    /// kept in the returned [`Outcome`]) within the output limit. SIGINT, SIGTERM and SIGHUP
    /// are held while it runs and end it as [`crate::End::Cancelled`]. A `network = proxy`
    /// profile needs [`Sandbox::run_foreground_proxied`].
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
        let argv = crate::plan::planner::command(argv)?;
        let mut on_output = on_output;
        let mut restarts = crate::restart::Restarts::new();
        loop {
            let plan = self.plan(profile, argv.clone(), None)?;
            if crate::plan::egress::proxied(&plan) {
                return Err(SandboxError::Profile(
                    "network proxy needs a proxy serving the run: use \
                     `Sandbox::run_foreground_proxied` (or `Sandbox::spawn`)"
                        .into(),
                ));
            }
            // The host changed under the plan before the command ran: planned again from the
            // host as it is now (as the launcher does).
            match self.foreground(profile, &plan, None, &mut on_output) {
                Err(e) if restarts.again(&e) => {}
                done => return done,
            }
        }
    }

    /// [`Sandbox::run_foreground`] for a `network = proxy` profile: `serve` gets the proxy's
    /// two listeners once they exist (bound in the child's network namespace and sent back, or
    /// on the host's loopback before the child starts on a rung without one) and must serve
    /// the HTTP proxy and SOCKS5 on them, from a thread of its own, until the run has ended
    /// (this thread polls the run). It is called after the fork, so nothing it starts exists
    /// while the child side is forked; an error from it kills the run and is returned.
    pub fn run_foreground_proxied<I, S>(
        &self,
        profile: &crate::Profile,
        argv: I,
        on_output: impl FnMut(Stream, &[u8]),
        serve: impl FnOnce(EgressListeners) -> std::io::Result<()>,
    ) -> Result<Outcome, SandboxError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut plan = self.plan(profile, crate::plan::planner::command(argv)?, None)?;
        if !crate::plan::egress::proxied(&plan) {
            return Err(SandboxError::Profile(
                "run_foreground_proxied needs a network = proxy profile".into(),
            ));
        }
        // The same hand-over as the launcher's: bound here before the child starts, or sent
        // back by the child from the call's network namespace.
        let (pending, theirs) = match crate::egress::launch::bind_on_host(&mut plan)? {
            Some(bound) => (Pending::Bound(bound), None),
            None => {
                let (ours, theirs) = crate::egress::launch::plan_channel()?;
                (Pending::Channel(ours), Some(theirs))
            }
        };
        let egress = (pending, theirs, Box::new(serve) as Serve<'_>);
        self.foreground(profile, &plan, Some(egress), on_output)
    }

    fn foreground(
        &self,
        profile: &crate::Profile,
        plan: &crate::plan::Plan,
        egress: Option<(Pending, Option<OwnedFd>, Serve<'_>)>,
        on_output: impl FnMut(Stream, &[u8]),
    ) -> Result<Outcome, SandboxError> {
        let (egress, theirs) = match egress {
            Some((pending, theirs, serve)) => (Some(Egress::new(pending, serve)), theirs),
            None => (None, None),
        };
        let caller = Caller::prepare(theirs.as_ref())?;
        let started = forked::start(plan, || caller.install_in_child())?;
        // The child's copy only: its end-of-file tells us a child that failed before sending.
        drop(theirs);
        let init = matches!(started, Started::Init(_));
        let result = caller.supervise(
            started.pid(),
            init,
            self.backend(),
            profile,
            on_output,
            egress,
        );
        started.finish(plan);
        result
    }
}
