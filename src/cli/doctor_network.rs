//! The network section of `zeroclaw doctor`: the effective `[sandbox.network]` policy, what
//! enforces it on the chosen rung, and how each rung enforces proxy mode (or cannot).

use serde_json::{Map, Value, json};
use zeroclaw_sandbox::Backend;
use zeroclaw_sandbox::detect::Report;
use zeroclaw_sandbox::plan::LANDLOCK_NET_ABI;

use crate::config::{NetworkConfig, NetworkMode};
use crate::egress::EgressPolicy;

/// Every rung, strongest first.
const RUNGS: [Backend; 5] = [
    Backend::Namespaces,
    Backend::Bubblewrap,
    Backend::Landlock,
    Backend::Seatbelt,
    Backend::None,
];

/// The policy lines, the enforcement sentence and proxy mode on each rung.
pub struct NetworkReport {
    policy: Vec<String>,
    enforced: String,
    proxy: Vec<(Backend, String)>,
}

/// Describes `network` as the rung `report` chose enforces it (`config check` has already
/// refused a malformed one).
pub fn describe(network: &NetworkConfig, report: &Report) -> NetworkReport {
    let policy = EgressPolicy::from_config(network)
        .map(|p| p.describe())
        .unwrap_or_else(|(key, why)| vec![format!("invalid {key}: {why}")]);
    let abi = report.probes.landlock_abi;
    NetworkReport {
        policy,
        enforced: enforcement(network.mode, report.chosen, abi),
        proxy: RUNGS.iter().map(|b| (*b, proxy_mode(*b, abi))).collect(),
    }
}

fn enforcement(mode: NetworkMode, chosen: Option<Backend>, landlock_abi: u32) -> String {
    let said = match (mode, chosen) {
        (NetworkMode::Allow, _) => "tool children use the host's network",
        (_, None) => "no usable backend: nothing is enforced",
        (NetworkMode::Proxy, Some(backend)) => return proxy_mode(backend, landlock_abi),
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
    };
    said.to_owned()
}

/// How `backend` keeps a proxy-mode child to zeroclaw's egress proxy, on a kernel whose
/// Landlock ABI is `landlock_abi`.
fn proxy_mode(backend: Backend, landlock_abi: u32) -> String {
    let said = match backend {
        Backend::Namespaces => {
            "a network namespace with only `lo`, where zeroclaw's egress proxy listens (HTTP on \
             127.0.0.1:3128, SOCKS5 on 127.0.0.1:1080) and admits only what the policy allows; \
             programs that ignore the proxy variables go through it too (transparent egress: \
             a DNS stub on 127.0.0.1:53 for allowed names, every TCP connection taken by the \
             proxy)"
        }
        Backend::Bubblewrap => {
            "a network namespace with only `lo`, where zeroclaw's egress proxy listens (HTTP on \
             127.0.0.1:3128, SOCKS5 on 127.0.0.1:1080) and admits only what the policy allows; \
             programs that ignore the proxy variables go through it too (transparent egress), \
             except with a setuid-root bwrap run by another user than root (it refuses \
             --cap-add): there they have no route"
        }
        Backend::Landlock if landlock_abi >= LANDLOCK_NET_ABI => {
            "no network namespace: the proxy listens on the host's 127.0.0.1 at two ephemeral \
             ports; Landlock TCP rules allow connecting only to them and binding nothing, the \
             helper's connect supervision admits IP connects to them only, and seccomp refuses \
             UDP, raw, packet and other sockets (the host's other processes can reach the \
             proxy too while a call runs)"
        }
        Backend::Landlock => {
            return format!(
                "NOT available: needs Landlock ABI {LANDLOCK_NET_ABI} (TCP rules), this kernel \
                 has ABI {landlock_abi}; tool calls are refused"
            );
        }
        Backend::Seatbelt => {
            "the SBPL profile allows outbound TCP only to the proxy's two ports on localhost \
             (the proxy listens on the host's loopback)"
        }
        Backend::None => "NOT available on this rung: tool calls are refused",
    };
    said.to_owned()
}

impl NetworkReport {
    pub fn table(&self) -> String {
        let mut s = String::from("\nnetwork\n");
        for line in &self.policy {
            s += &format!("  {line}\n");
        }
        s += &format!("  enforced by: {}\n", self.enforced);
        s += "  proxy mode on each rung:\n";
        for (backend, how) in &self.proxy {
            s += &format!("    {:<11} {how}\n", backend.name());
        }
        s
    }

    pub fn to_json(&self) -> Value {
        let proxy: Map<String, Value> = self
            .proxy
            .iter()
            .map(|(b, how)| (b.name().to_owned(), Value::from(how.as_str())))
            .collect();
        json!({"policy": self.policy, "enforced": self.enforced, "proxy_by_rung": proxy})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_landlock_rung_serves_the_proxy_from_abi_4_only() {
        assert!(proxy_mode(Backend::Landlock, 4).contains("Landlock TCP rules"));
        let old = proxy_mode(Backend::Landlock, 3);
        assert!(
            old.starts_with("NOT available: needs Landlock ABI 4"),
            "{old}"
        );
        let chosen = enforcement(NetworkMode::Proxy, Some(Backend::Landlock), 6);
        assert!(chosen.contains("seccomp refuses"), "{chosen}");
        assert!(proxy_mode(Backend::Seatbelt, 0).contains("SBPL"));
        assert!(proxy_mode(Backend::None, 6).starts_with("NOT available"));
    }
}
