//! The egress proxy of one confined call: served on the listeners the sandbox brought back
//! from the call's network namespace, with the session's effective policy, for as long as the
//! call runs; [`Serving::finish`] stops it (its connections reported to the call's observer)
//! and gives the refusals for the tool result.

use std::ffi::OsStr;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use zeroclaw_sandbox::egress::refused_watch::RefusedWatch;
use zeroclaw_sandbox::{EgressListeners, Outcome, Profile, Sandbox, SandboxError, Stream};

use super::EgressPolicy;
use super::credentials::Session;
use super::proxy::{Approver, Limits, Observer, Proxy, Refusal};

/// How long a finished call waits for its connections to end and be reported.
const DRAIN: Duration = Duration::from_secs(5);

/// Runs `argv` confined by `profile` (`network = proxy`, stdin closed) with the egress proxy
/// serving it under `policy` until it ends; returns its outcome and the proxy's refusals.
/// With an `approver` (supervised), names outside `allow_domains` are asked about; with an
/// `observer`, every connection is reported to it before this returns. With `credentials`
/// (the session's), the profile gets their placeholders and CA and the proxy puts them in.
#[allow(clippy::too_many_arguments)]
pub async fn run_proxied<I, S>(
    sandbox: &Sandbox,
    profile: &Profile,
    argv: I,
    policy: &EgressPolicy,
    approver: Option<Arc<dyn Approver>>,
    observer: Option<Arc<dyn Observer>>,
    credentials: Option<Arc<Session>>,
    on_output: impl FnMut(Stream, &[u8]),
    cancel: impl Future<Output = ()>,
) -> Result<(Outcome, Vec<Refusal>), SandboxError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let profile = match &credentials {
        Some(session) => session.apply(profile.clone()),
        None => profile.clone(),
    };
    let mut child = sandbox.spawn(&profile, argv).await?;
    drop(child.take_stdin());
    let listeners = child.take_egress().ok_or_else(|| {
        SandboxError::Profile("the sandbox brought back no egress proxy listeners".into())
    })?;
    let serving = serve(policy, listeners, approver, observer, credentials)?;
    let outcome = child.wait(on_output, cancel).await?;
    Ok((outcome, serving.finish().await))
}

/// A proxy serving one call (stopped when finished or dropped).
pub struct Serving {
    proxy: Proxy,
    tasks: Vec<JoinHandle<()>>,
}

/// Starts the HTTP proxy and SOCKS5 on `listeners` under `policy`, and transparent egress
/// when the sandbox brought its sockets back (needs a Tokio runtime), putting `credentials`
/// in for their hosts.
pub fn serve(
    policy: &EgressPolicy,
    listeners: EgressListeners,
    approver: Option<Arc<dyn Approver>>,
    observer: Option<Arc<dyn Observer>>,
    credentials: Option<Arc<Session>>,
) -> std::io::Result<Serving> {
    let http = tokio::net::TcpListener::from_std(listeners.http)?;
    let socks = tokio::net::TcpListener::from_std(listeners.socks)?;
    let limits = Limits::default();
    let proxy = Proxy::credentialed(policy.clone(), limits, approver, observer, credentials);
    let mut tasks = vec![proxy.serve_http(http), proxy.serve_socks(socks)];
    if let Some(t) = listeners.transparent {
        let dns = tokio::net::UdpSocket::from_std(t.dns)?;
        let listeners = t
            .listeners
            .into_iter()
            .map(tokio::net::TcpListener::from_std)
            .collect::<std::io::Result<Vec<_>>>()?;
        let watch = match t.watch {
            Some(fd) => Some(RefusedWatch::new(fd)?),
            None => {
                tracing::warn!(
                    "transparent egress: no watch on refused connections (no raw socket in the \
                     call's namespace); connections to unlisted ports go unrecorded"
                );
                None
            }
        };
        tasks.extend(proxy.serve_transparent(dns, listeners, watch));
    }
    Ok(Serving { proxy, tasks })
}

impl Serving {
    /// Stops accepting (the listeners close with their tasks; approval questions still open
    /// are dropped, tunnels still open end), waits for every connection's report, and returns
    /// the distinct refusals of the call, oldest first.
    pub async fn finish(self) -> Vec<Refusal> {
        for task in &self.tasks {
            task.abort();
        }
        self.proxy.finish(DRAIN).await
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
