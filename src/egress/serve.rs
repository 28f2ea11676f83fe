//! The egress proxy of one confined call: served on the listeners the sandbox brought back
//! from the call's network namespace, with the session's effective policy, for as long as the
//! call runs; [`Serving::finish`] stops it and gives the refusals for the tool result.

use std::ffi::OsStr;
use std::future::Future;
use std::sync::Arc;

use tokio::task::JoinHandle;
use zeroclaw_sandbox::{EgressListeners, Outcome, Profile, Sandbox, SandboxError, Stream};

use super::EgressPolicy;
use super::proxy::{Approver, Limits, Proxy, Refusal};

/// Runs `argv` confined by `profile` (`network = proxy`, stdin closed) with the egress proxy
/// serving it under `policy` until it ends; returns its outcome and the proxy's refusals.
/// With an `approver` (supervised), names outside `allow_domains` are asked about.
pub async fn run_proxied<I, S>(
    sandbox: &Sandbox,
    profile: &Profile,
    argv: I,
    policy: &EgressPolicy,
    approver: Option<Arc<dyn Approver>>,
    on_output: impl FnMut(Stream, &[u8]),
    cancel: impl Future<Output = ()>,
) -> Result<(Outcome, Vec<Refusal>), SandboxError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut child = sandbox.spawn(profile, argv).await?;
    drop(child.take_stdin());
    let listeners = child.take_egress().ok_or_else(|| {
        SandboxError::Profile("the sandbox brought back no egress proxy listeners".into())
    })?;
    let serving = serve(policy, listeners, approver)?;
    let outcome = child.wait(on_output, cancel).await?;
    Ok((outcome, serving.finish()))
}

/// A proxy serving one call (stopped when finished or dropped).
pub struct Serving {
    proxy: Proxy,
    tasks: Vec<JoinHandle<()>>,
}

/// Starts the HTTP proxy and SOCKS5 on `listeners` under `policy` (needs a Tokio runtime).
pub fn serve(
    policy: &EgressPolicy,
    listeners: EgressListeners,
    approver: Option<Arc<dyn Approver>>,
) -> std::io::Result<Serving> {
    let http = tokio::net::TcpListener::from_std(listeners.http)?;
    let socks = tokio::net::TcpListener::from_std(listeners.socks)?;
    let proxy = Proxy::with_approver(policy.clone(), Limits::default(), approver);
    let tasks = vec![proxy.serve_http(http), proxy.serve_socks(socks)];
    Ok(Serving { proxy, tasks })
}

impl Serving {
    /// Stops accepting (the listeners close with their tasks; approval questions still open
    /// are dropped) and returns the distinct refusals of the call, oldest first.
    pub fn finish(self) -> Vec<Refusal> {
        self.proxy.refusals()
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
        self.proxy.close();
    }
}
