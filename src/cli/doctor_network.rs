//! The network section of `zeroclaw doctor`: the effective `[sandbox.network]` policy and what
//! enforces it on the chosen rung.

use serde_json::{Value, json};
use zeroclaw_sandbox::Backend;

use crate::config::{NetworkConfig, NetworkMode};
use crate::egress::EgressPolicy;

/// The policy lines and the enforcement sentence.
pub struct NetworkReport {
    policy: Vec<String>,
    enforced: String,
}

/// Describes `network` as the `chosen` backend enforces it (`config check` has already
/// refused a malformed one).
pub fn describe(network: &NetworkConfig, chosen: Option<Backend>) -> NetworkReport {
    let policy = EgressPolicy::from_config(network)
        .map(|p| p.describe())
        .unwrap_or_else(|(key, why)| vec![format!("invalid {key}: {why}")]);
    NetworkReport {
        policy,
        enforced: enforcement(network.mode, chosen).to_owned(),
    }
}

fn enforcement(mode: NetworkMode, chosen: Option<Backend>) -> &'static str {
    match (mode, chosen) {
        (NetworkMode::Allow, _) => "tool children use the host's network",
        (_, None) => "no usable backend: nothing is enforced",
        (NetworkMode::Proxy, Some(Backend::Namespaces | Backend::Bubblewrap)) => {
            "a network namespace with only `lo`, where zeroclaw's egress proxy listens (HTTP on \
             127.0.0.1:3128, SOCKS5 on 127.0.0.1:1080) and admits only what the policy allows"
        }
        (NetworkMode::Proxy, Some(_)) => {
            "NOT available on this rung: tool calls are refused (only the namespaces and \
             bubblewrap backends route children through the egress proxy so far)"
        }
        (_, Some(Backend::Namespaces | Backend::Bubblewrap)) => {
            "a network namespace with only `lo`: no route anywhere"
        }
        (_, Some(Backend::Landlock)) => {
            "no network namespace on this rung: seccomp refuses IP sockets, Landlock denies TCP \
             bind/connect and scopes abstract Unix sockets (where the kernel's Landlock ABI has \
             them)"
        }
        (_, Some(Backend::Seatbelt)) => "the SBPL profile denies network access",
        (_, Some(Backend::None)) => "backend none: NOT enforced, children have the host's network",
    }
}

impl NetworkReport {
    pub fn table(&self) -> String {
        let mut s = String::from("\nnetwork\n");
        for line in &self.policy {
            s += &format!("  {line}\n");
        }
        s += &format!("  enforced by: {}\n", self.enforced);
        s
    }

    pub fn to_json(&self) -> Value {
        json!({"policy": self.policy, "enforced": self.enforced})
    }
}
