//! A foreground run's egress proxy listeners (`network = proxy`, the caller's side): bound on
//! the host's loopback before the fork on a rung without a network namespace, or sent back by
//! the child over the plan socket once it has made the call's network namespace
//! ([`crate::egress::launch`], [`crate::egress::handover`]), which the poll loop watches; handed to the
//! caller's hook, which serves the proxy on them, once they are there. A run whose listeners
//! could not be received or served is killed and ends with that error.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use crate::egress::launch::{EgressListeners, Pending};
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
        self.hand_over(crate::egress::launch::receive(ours))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(result: Result<Outcome, SandboxError>) -> String {
        match result {
            Err(e) => e.to_string(),
            Ok(outcome) => panic!("succeeded: {outcome:?}"),
        }
    }

    #[test]
    fn listeners_sent_back_are_served_once() {
        let (ours, theirs) = crate::egress::launch::plan_channel().unwrap();
        let ports = crate::egress::handover::ProxyPorts { http: 0, socks: 0 };
        let sent = crate::egress::handover::bind_and_send(theirs.as_fd(), ports).unwrap();
        let mut served = Vec::new();
        let mut egress = Egress::new(
            Pending::Channel(ours),
            Box::new(|listeners: EgressListeners| {
                served.push(listeners.ports);
                Ok(())
            }),
        );
        assert!(egress.started() && egress.channel().is_some());
        assert!(egress.receive());
        assert!(egress.channel().is_none() && egress.receive());
        let setup = SandboxError::Profile("the child's own error".into());
        assert!(failed(egress.finish(Err(setup))).contains("the child's own error"));
        assert_eq!(served, vec![sent]);
    }

    #[test]
    fn a_socket_closed_unsent_or_a_failed_hook_fails_the_run() {
        let (ours, theirs) = crate::egress::launch::plan_channel().unwrap();
        drop(theirs);
        let mut egress = Egress::new(Pending::Channel(ours), Box::new(|_| Ok(())));
        assert!(!egress.receive(), "nothing came");
        // The child's report says why it failed: that comes first.
        let setup = SandboxError::Profile("namespaces: the child's own error".into());
        assert!(failed(egress.finish(Err(setup))).contains("the child's own error"));

        let (ours, theirs) = crate::egress::launch::plan_channel().unwrap();
        let ports = crate::egress::handover::ProxyPorts { http: 0, socks: 0 };
        crate::egress::handover::bind_and_send(theirs.as_fd(), ports).unwrap();
        let refuse = |_| Err(std::io::Error::other("no runtime"));
        let mut egress = Egress::new(Pending::Channel(ours), Box::new(refuse));
        assert!(!egress.receive(), "the hook failed");
        let killed = Ok(Outcome {
            exit: crate::wire::ExitInfo::Signal(15),
            end: crate::End::Exited,
            stdout: Vec::new(),
            stderr: Vec::new(),
            truncated: false,
            enforcement: crate::wire::Enforcement::default(),
            findings: Default::default(),
        });
        assert!(failed(egress.finish(killed)).contains("serve the egress proxy: no runtime"));
    }
}
