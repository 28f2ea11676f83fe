//! A foreground run's egress proxy listeners (`network = proxy`, the caller's side): bound on
//! the host's loopback before the fork on a rung without a network namespace, or sent back by
//! the child over the plan socket once it has made the call's network namespace
//! ([`crate::egress_launch`], [`crate::egress_fds`]), which the poll loop watches; handed to the
//! caller's hook, which serves the proxy on them, once they are there. A run whose listeners
//! could not be received or served is killed and ends with that error.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use crate::egress_launch::{EgressListeners, Pending};
use crate::error::SandboxError;
use crate::supervise::Outcome;

/// What serves the HTTP proxy and SOCKS5 on a run's listeners, from a thread of its own (the
/// caller's thread polls the run); called once, after the fork.
pub(crate) type Serve<'a> = Box<dyn FnOnce(EgressListeners) -> std::io::Result<()> + 'a>;

/// The listeners of one foreground proxy run, on their way to [`Serve`].
pub(crate) struct Egress<'a> {
    /// Our end of the plan socket, until the listeners came over it.
    channel: Option<OwnedFd>,
    /// Listeners bound on the host's loopback, until served.
    bound: Option<EgressListeners>,
    serve: Option<Serve<'a>>,
    failed: Option<SandboxError>,
}

impl<'a> Egress<'a> {
    pub(crate) fn new(pending: Pending, serve: Serve<'a>) -> Self {
        let (channel, bound) = match pending {
            Pending::Channel(ours) => (Some(ours), None),
            Pending::Bound(listeners) => (None, Some(listeners)),
        };
        Egress {
            channel,
            bound,
            serve: Some(serve),
            failed: None,
        }
    }

    /// Once the child is started: listeners bound on the host are served now. `false`: that
    /// failed, the run must be killed.
    pub(crate) fn started(&mut self) -> bool {
        match self.bound.take() {
            Some(listeners) => self.hand_over(Ok(listeners)),
            None => true,
        }
    }

    /// The plan socket to watch, while the listeners have not come.
    pub(crate) fn channel(&self) -> Option<BorrowedFd<'_>> {
        self.channel.as_ref().map(AsFd::as_fd)
    }

    /// The plan socket is readable: the listeners, or the end-of-file of a child that failed
    /// before it sent them (its report says why). `false`: the run must be killed.
    pub(crate) fn receive(&mut self) -> bool {
        let Some(ours) = self.channel.take() else {
            return true;
        };
        self.hand_over(crate::egress_launch::receive(ours))
    }

    fn hand_over(&mut self, listeners: Result<EgressListeners, SandboxError>) -> bool {
        let served = listeners.and_then(|listeners| match self.serve.take() {
            Some(serve) => serve(listeners).map_err(|e| {
                SandboxError::Io(std::io::Error::new(
                    e.kind(),
                    format!("serve the egress proxy: {e}"),
                ))
            }),
            None => Ok(()),
        });
        match served {
            Ok(()) => true,
            Err(e) => {
                self.failed = Some(e);
                false
            }
        }
    }

    /// The run's result: a setup failure the child reported comes first, then a failure to
    /// receive or serve the listeners (the run was killed for it), then the outcome.
    pub(crate) fn finish(
        self,
        result: Result<Outcome, SandboxError>,
    ) -> Result<Outcome, SandboxError> {
        match (result, self.failed) {
            (Err(e), _) | (Ok(_), Some(e)) => Err(e),
            (Ok(outcome), None) => Ok(outcome),
        }
    }
}
