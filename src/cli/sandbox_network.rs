//! `zeroclaw sandbox run --network proxy`: the egress policy of the run (the configuration's
//! `[sandbox.network]`, with `--allow-domain` / `--deny-domain` replacing its lists when
//! given), and the run itself through the launcher with the egress proxy serving the command
//! (its refusals are printed to stderr once it ended).

use zeroclaw_sandbox::{Network, Outcome, Profile, Sandbox, SandboxError, Stream};

use crate::config::{NetworkConfig, NetworkMode};
use crate::egress::EgressPolicy;

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

/// Runs `command` with the egress proxy serving it, on a runtime of its own.
pub fn run(
    sandbox: &Sandbox,
    profile: &Profile,
    command: &[std::ffi::OsString],
    policy: &EgressPolicy,
    on_output: impl FnMut(Stream, &[u8]),
) -> Result<Outcome, SandboxError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (outcome, refusals) = runtime.block_on(crate::egress::serve::run_proxied(
        sandbox,
        profile,
        command,
        policy,
        None,
        on_output,
        std::future::pending(),
    ))?;
    for refusal in refusals {
        eprintln!("zeroclaw sandbox: {refusal}");
    }
    Ok(outcome)
}
