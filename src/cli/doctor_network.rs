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
    let host = Host {
        landlock_abi: report.probes.landlock_abi,
        bwrap_refuses_cap_add: report
            .probes
            .bwrap_path
            .as_deref()
            .is_some_and(zeroclaw_sandbox::host::bwrap_refuses_cap_add),
    };
    NetworkReport {
        policy,
        enforced: enforcement(network.mode, report.chosen, host),
        proxy: RUNGS.iter().map(|b| (*b, proxy_mode(*b, host))).collect(),
    }
}

/// What decides how proxy mode is enforced here, besides the rung.
#[derive(Debug, Clone, Copy, Default)]
struct Host {
    landlock_abi: u32,
    /// bwrap is setuid root and we are not root: its inner stage keeps no capability.
    bwrap_refuses_cap_add: bool,
}

fn enforcement(mode: NetworkMode, chosen: Option<Backend>, host: Host) -> String {
    let said = match (mode, chosen) {
        (NetworkMode::Allow, _) => "tool children use the host's network",
        (_, None) => "no usable backend: nothing is enforced",
        (NetworkMode::Proxy, Some(backend)) => return proxy_mode(backend, host),
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

/// How `backend` keeps a proxy-mode child to zeroclaw's egress proxy on `host`.
fn proxy_mode(backend: Backend, host: Host) -> String {
    let landlock_abi = host.landlock_abi;
    let said = match backend {
        Backend::Namespaces => {
            "a network namespace with only `lo`, where zeroclaw's egress proxy listens (HTTP on \
             127.0.0.1:3128, SOCKS5 on 127.0.0.1:1080) and admits only what the policy allows; \
             programs that ignore the proxy variables go through it too (transparent egress: \
             a DNS stub on 127.0.0.1:53 for allowed names, every TCP connection taken by the \
             proxy)"
        }
        Backend::Bubblewrap if host.bwrap_refuses_cap_add => {
            "a network namespace with only `lo`, where zeroclaw's egress proxy listens (HTTP on \
             127.0.0.1:3128, SOCKS5 on 127.0.0.1:1080) and admits only what the policy allows; \
             NO transparent egress here: this bwrap is setuid root and zeroclaw does not run as \
             root, so bwrap refuses --cap-add and cannot route: programs that ignore the proxy \
             variables get no resolver and no route (only proxy-aware programs reach anything)"
        }
        Backend::Bubblewrap => {
            "a network namespace with only `lo`, where zeroclaw's egress proxy listens (HTTP on \
             127.0.0.1:3128, SOCKS5 on 127.0.0.1:1080) and admits only what the policy allows; \
             programs that ignore the proxy variables go through it too (transparent egress: \
             a DNS stub on 127.0.0.1:53 for allowed names, every TCP connection taken by the \
             proxy; launched by another user than root, in a network namespace of bwrap's inner \
             stage)"
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

    fn abi(landlock_abi: u32) -> Host {
        Host {
            landlock_abi,
            ..Host::default()
        }
    }

    #[test]
    fn the_landlock_rung_serves_the_proxy_from_abi_4_only() {
        assert!(proxy_mode(Backend::Landlock, abi(4)).contains("Landlock TCP rules"));
        let old = proxy_mode(Backend::Landlock, abi(3));
        assert!(
            old.starts_with("NOT available: needs Landlock ABI 4"),
            "{old}"
        );
        let chosen = enforcement(NetworkMode::Proxy, Some(Backend::Landlock), abi(6));
        assert!(chosen.contains("seccomp refuses"), "{chosen}");
        assert!(proxy_mode(Backend::Seatbelt, abi(0)).contains("SBPL"));
        assert!(proxy_mode(Backend::None, abi(6)).starts_with("NOT available"));
    }

    /// Bubblewrap redirects programs that ignore the proxy variables, except where this
    /// bwrap is setuid root and we are not root: doctor says that it cannot, and what fails.
    #[test]
    fn bubblewrap_says_where_it_cannot_redirect() {
        let routed = proxy_mode(Backend::Bubblewrap, Host::default());
        assert!(
            routed.contains("go through it too (transparent egress"),
            "{routed}"
        );
        let setuid = Host {
            bwrap_refuses_cap_add: true,
            ..Host::default()
        };
        let not = proxy_mode(Backend::Bubblewrap, setuid);
        assert!(not.contains("NO transparent egress here"), "{not}");
        assert!(not.contains("no resolver and no route"), "{not}");
    }
}
