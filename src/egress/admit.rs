//! Which addresses of a destination the [`EgressPolicy`] admits: the one place a name is
//! resolved for a policy (the operator's `hosts` map, else DNS) and every resolved address
//! judged. The proxy's dial and zeroclaw's own connections under a policy (http MCP servers)
//! both use it, and both connect only to the addresses it returns: no second lookup, so no
//! rebinding window between the check and the connection.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use tokio::time::timeout;

use super::{EgressPolicy, Host, Rule};

/// Why a destination has no admitted address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unadmitted {
    /// The policy refused it, by this rule.
    Refused(Rule),
    /// Allowed, but the name did not resolve (or resolved to nothing).
    Failed(String),
}

/// The addresses `name` resolves to that the policy admits (`within` bounds the lookup);
/// when none is admitted, the rule that refused the first one.
pub async fn admitted_addresses(
    policy: &EgressPolicy,
    name: &str,
    port: u16,
    within: Duration,
) -> Result<Vec<IpAddr>, Unadmitted> {
    let resolved = match policy.fixed_address(name) {
        Some(ip) => vec![ip],
        None => resolve(name, port, within).await?,
    };
    let mut admitted = Vec::new();
    let mut first_refusal = None;
    for ip in resolved {
        let decision = policy.check_address(ip);
        if decision.allowed {
            admitted.push(ip);
        } else {
            first_refusal.get_or_insert(decision.rule);
        }
    }
    if admitted.is_empty() {
        return Err(match first_refusal {
            Some(rule) => Unadmitted::Refused(rule),
            None => Unadmitted::Failed(format!("{name} has no address")),
        });
    }
    Ok(admitted)
}

/// The admitted socket addresses of `host:port` for a connection nobody is asked about: the
/// target judged ([`EgressPolicy::check_target`]; a name only missing from `allow_domains`
/// is refused like any other), then a name's resolved addresses ([`admitted_addresses`]).
pub async fn admit(
    policy: &EgressPolicy,
    host: &Host,
    port: u16,
    within: Duration,
) -> Result<Vec<SocketAddr>, Unadmitted> {
    let decision = policy.check_target(host, port);
    if !decision.allowed {
        return Err(Unadmitted::Refused(decision.rule));
    }
    let ips = match host {
        Host::Ip(ip) => vec![*ip],
        Host::Name(name) => admitted_addresses(policy, name, port, within).await?,
    };
    Ok(ips
        .into_iter()
        .map(|ip| SocketAddr::new(ip, port))
        .collect())
}

async fn resolve(name: &str, port: u16, within: Duration) -> Result<Vec<IpAddr>, Unadmitted> {
    match timeout(within, tokio::net::lookup_host((name, port))).await {
        Ok(Ok(addrs)) => Ok(addrs.map(|a| a.ip().to_canonical()).collect()),
        Ok(Err(e)) => Err(Unadmitted::Failed(format!("cannot resolve {name}: {e}"))),
        Err(_) => Err(Unadmitted::Failed(format!("resolving {name} timed out"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{NetworkConfig, NetworkMode};

    fn policy(cidrs: &[&str], hosts: &[(&str, &str)]) -> EgressPolicy {
        let config = NetworkConfig {
            mode: NetworkMode::Proxy,
            allow_domains: vec!["mcp.example".into()],
            allow_ports: vec![8080],
            allow_cidrs: cidrs.iter().map(|c| c.to_string()).collect(),
            hosts: hosts
                .iter()
                .map(|(n, a)| (n.to_string(), a.to_string()))
                .collect(),
            ..NetworkConfig::default()
        };
        EgressPolicy::from_config(&config).unwrap()
    }

    fn host(text: &str) -> Host {
        Host::parse(text).unwrap()
    }

    #[tokio::test]
    async fn a_target_is_judged_then_its_resolved_addresses() {
        let within = Duration::from_secs(5);
        let p = policy(&[], &[("mcp.example", "127.0.0.1")]);
        let refused = |rule| Err(Unadmitted::Refused(rule));
        assert_eq!(
            admit(&p, &host("other.example"), 8080, within).await,
            refused(Rule::NotInAllowDomains)
        );
        assert_eq!(
            admit(&p, &host("mcp.example"), 443, within).await,
            refused(Rule::PortNotAllowed(443))
        );
        assert_eq!(
            admit(&p, &host("127.0.0.1"), 8080, within).await,
            refused(Rule::IpNotInAllowCidrs)
        );
        let loopback = "127.0.0.1".parse().unwrap();
        assert_eq!(
            admit(&p, &host("mcp.example"), 8080, within).await,
            refused(Rule::RefusedAddress {
                addr: loopback,
                class: "loopback"
            })
        );
        let open = policy(&["127.0.0.1/32"], &[("mcp.example", "127.0.0.1")]);
        let want = vec![SocketAddr::new(loopback, 8080)];
        assert_eq!(
            admit(&open, &host("mcp.example"), 8080, within).await,
            Ok(want.clone())
        );
        assert_eq!(
            admit(&open, &host("127.0.0.1"), 8080, within).await,
            Ok(want)
        );
    }
}
