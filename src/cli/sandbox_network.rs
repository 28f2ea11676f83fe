//! `zeroclaw sandbox run --network proxy`: the egress policy of the run (the configuration's
//! `[sandbox.network]`, with `--allow-domain` / `--deny-domain` replacing its lists when
//! given), and the run itself, in the foreground with the egress proxy served from a thread of
//! its own (its refusals are printed to stderr once it ended).

use zeroclaw_sandbox::{EgressListeners, Network, Outcome, Profile, Sandbox, SandboxError, Stream};

use crate::config::{NetworkConfig, NetworkMode};
use std::sync::Arc;

use crate::egress::EgressPolicy;
use crate::egress::credentials::Session;
use crate::egress::proxy::Refusal;

/// The run's egress policy: `Some` for `--network proxy`; the domain flags need it.
pub fn policy(
    network: Network,
    allow: &[String],
    deny: &[String],
    config: &NetworkConfig,
) -> Result<Option<EgressPolicy>, String> {
    if network != Network::Proxy {
        if !allow.is_empty() || !deny.is_empty() {
            return Err("--allow-domain and --deny-domain need --network proxy".into());
        }
        return Ok(None);
    }
    let mut config = config.clone();
    config.mode = NetworkMode::Proxy;
    if !allow.is_empty() {
        config.allow_domains = allow.to_vec();
    }
    if !deny.is_empty() {
        config.deny_domains = deny.to_vec();
    }
    EgressPolicy::from_config(&config)
        .map(Some)
        .map_err(|(key, why)| {
            let flag = match key.split('[').next() {
                Some("allow_domains") => "--allow-domain",
                Some("deny_domains") => "--deny-domain",
                _ => "[sandbox.network]",
            };
            format!("{flag} ({key}): {why}")
        })
}

/// Runs `command` in the foreground ([`Sandbox::run_foreground_proxied`]: stdin relayed,
/// SIGINT/SIGTERM/SIGHUP end it as cancelled) with the egress proxy serving it from a thread of
/// its own; `through_launcher` (a test hook): through the async launcher tool calls take,
/// stdin closed. The proxy's refusals are printed to stderr once the run has ended. The
/// configured credentials get placeholders and a CA of this run's own.
pub fn run(
    sandbox: &Sandbox,
    profile: &Profile,
    command: &[std::ffi::OsString],
    policy: &EgressPolicy,
    through_launcher: bool,
    on_output: impl FnMut(Stream, &[u8]),
) -> Result<Outcome, SandboxError> {
    let credentials = Session::start(policy.credentials(), policy.extra_cas())?;
    let (result, refusals) = if through_launcher {
        launched(sandbox, profile, command, policy, credentials, on_output)
    } else {
        let profile = match &credentials {
            Some(session) => session.apply(profile.clone()),
            None => profile.clone(),
        };
        let mut proxy = None;
        let result = sandbox.run_foreground_proxied(&profile, command, on_output, |listeners| {
            proxy = Some(ProxyThread::start(policy, listeners, credentials.clone())?);
            Ok(())
        });
        (result, proxy.map(ProxyThread::finish).unwrap_or_default())
    };
    for refusal in refusals {
        eprintln!("zeroclaw sandbox: {refusal}");
    }
    result
}

/// The run through the launcher, on a runtime of its own.
fn launched(
    sandbox: &Sandbox,
    profile: &Profile,
    command: &[std::ffi::OsString],
    policy: &EgressPolicy,
    credentials: Option<Arc<Session>>,
    on_output: impl FnMut(Stream, &[u8]),
) -> (Result<Outcome, SandboxError>, Vec<Refusal>) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => return (Err(e.into()), Vec::new()),
    };
    let served = runtime.block_on(crate::egress::serve::run_proxied(
        sandbox,
        profile,
        command,
        policy,
        None,
        None,
        credentials,
        on_output,
        std::future::pending(),
    ));
    match served {
        Ok((outcome, refusals)) => (Ok(outcome), refusals),
        Err(e) => (Err(e), Vec::new()),
    }
}

/// The egress proxy of a foreground run, served on a current-thread runtime in a thread of its
/// own (started after the fork: the run's thread polls the child) until [`ProxyThread::finish`].
struct ProxyThread {
    stop: tokio::sync::oneshot::Sender<()>,
    thread: std::thread::JoinHandle<Vec<Refusal>>,
}

impl ProxyThread {
    /// Starts serving on `listeners`; returns once the proxy accepts on them.
    fn start(
        policy: &EgressPolicy,
        listeners: EgressListeners,
        credentials: Option<Arc<Session>>,
    ) -> std::io::Result<ProxyThread> {
        let policy = policy.clone();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (ready, serving) = std::sync::mpsc::sync_channel::<std::io::Result<()>>(1);
        let thread = std::thread::Builder::new()
            .name("egress-proxy".into())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build();
                let runtime = match runtime {
                    Ok(runtime) => runtime,
                    Err(e) => {
                        let _ = ready.send(Err(e));
                        return Vec::new();
                    }
                };
                let refusals = runtime.block_on(async move {
                    let serving = match crate::egress::serve::serve(
                        &policy,
                        listeners,
                        None,
                        None,
                        credentials,
                    ) {
                        Ok(serving) => serving,
                        Err(e) => {
                            let _ = ready.send(Err(e));
                            return Vec::new();
                        }
                    };
                    let _ = ready.send(Ok(()));
                    let _ = stopped.await;
                    serving.finish().await
                });
                // A name still being resolved on the blocking pool is not waited for.
                runtime.shutdown_background();
                refusals
            })?;
        match serving.recv() {
            Ok(Ok(())) => Ok(ProxyThread { stop, thread }),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(std::io::Error::other("the egress proxy thread ended")),
        }
    }

    /// Stops the proxy (connections still open are dropped: the run has ended) and returns its
    /// refusals, oldest first.
    fn finish(self) -> Vec<Refusal> {
        let _ = self.stop.send(());
        self.thread.join().unwrap_or_default()
    }
}
