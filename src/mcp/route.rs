//! How zeroclaw reaches a session's http MCP servers, by the session's network mode:
//!
//! - `allow`: directly (the daemon's own network, as any HTTP client).
//! - `proxy`: only a URL whose host and port the session's [`EgressPolicy`] admits — the same
//!   decisions as the egress proxy ([`crate::egress::admit`]: `deny_domains`, `allow_domains`,
//!   `allow_ports`, IP literals and refused address classes against `allow_cidrs`, every
//!   resolved address checked). The connection goes over a client pinned to the admitted
//!   addresses (its resolver answers those and never asks DNS again, it uses no proxy and
//!   follows no redirect), so it reaches the address that was checked. Nobody is asked while
//!   servers start: in a supervised session a host only missing from `allow_domains` is
//!   refused like any other.
//! - `deny` (and `readonly`): never.
//!
//! [`check`] judges the URLs when `session/new` names the servers (before any lookup);
//! [`client`] judges again, resolving, when a server starts.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use super::spec::{HttpEndpoint, ServerSpec};
use crate::egress::admit::{Unadmitted, admit};
use crate::egress::proxy::Refusal;
use crate::egress::{EgressPolicy, Host};
use crate::policy::Policy;

/// The http servers of `specs` a session under `policy` may not use, as the first one's
/// reason (the target checks only: names are resolved when the server starts).
pub fn check(policy: &Policy, specs: &[ServerSpec]) -> Result<(), String> {
    for spec in specs {
        let Some(endpoint) = &spec.http else {
            continue;
        };
        if policy.network {
            continue;
        }
        let Some(egress) = &policy.egress else {
            return Err(refused());
        };
        let (host, port) = target(&endpoint.url).map_err(|e| named(spec, &e))?;
        let decision = egress.check_target(&host, port);
        if !decision.allowed {
            return Err(named(spec, &refusal(&host, port, decision.rule)));
        }
    }
    Ok(())
}

/// The HTTP client for the http server `spec`, or why the session may not reach it.
pub async fn client(
    policy: &Policy,
    spec: &ServerSpec,
    endpoint: &HttpEndpoint,
    within: Duration,
) -> Result<reqwest::Client, String> {
    if policy.network {
        return Ok(reqwest::Client::new());
    }
    let Some(egress) = &policy.egress else {
        return Err(refused());
    };
    pinned(egress, &endpoint.url, within)
        .await
        .map_err(|e| named(spec, &e))
}

/// Why an http server is not used in a session whose network is denied.
pub fn refused() -> String {
    "http MCP servers are reached by zeroclaw itself: directly when the session's network \
     mode is `allow`, through the egress policy when it is `proxy`; this session's network \
     is denied"
        .to_owned()
}

/// A client that reaches `url`'s host only at the addresses `policy` admits.
async fn pinned(
    policy: &EgressPolicy,
    url: &str,
    within: Duration,
) -> Result<reqwest::Client, String> {
    let (host, port) = target(url)?;
    let addrs = admit(policy, &host, port, within)
        .await
        .map_err(|why| match why {
            Unadmitted::Refused(rule) => refusal(&host, port, rule),
            Unadmitted::Failed(why) => why,
        })?;
    tracing::debug!(%host, port, ?addrs, "http MCP server admitted by the egress policy");
    reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .dns_resolver(Arc::new(Pinned(addrs)))
        .connect_timeout(within)
        .build()
        .map_err(|e| format!("cannot build its HTTP client: {e}"))
}

/// The host and port of an `http://` or `https://` URL.
fn target(url: &str) -> Result<(Host, u16), String> {
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("its url {url:?}: {e}"))?;
    let host = parsed
        .host_str()
        .ok_or_else(|| format!("its url {url:?} has no host"))?;
    let host = Host::parse(host).map_err(|rule| format!("its url {url:?}: {rule}"))?;
    let port = parsed
        .port_or_known_default()
        .ok_or_else(|| format!("its url {url:?} has no port"))?;
    Ok((host, port))
}

fn refusal(host: &Host, port: u16, rule: crate::egress::Rule) -> String {
    let refusal = Refusal {
        target: format!("{host}:{port}"),
        rule,
    };
    refusal.to_string()
}

fn named(spec: &ServerSpec, why: &str) -> String {
    format!("http MCP server {:?}: {why}", spec.name)
}

/// Answers every lookup with the admitted addresses: the client never asks DNS.
struct Pinned(Vec<SocketAddr>);

impl Resolve for Pinned {
    fn resolve(&self, _name: Name) -> Resolving {
        let addrs: Addrs = Box::new(self.0.clone().into_iter());
        Box::pin(std::future::ready(Ok(addrs)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{NetworkConfig, NetworkMode};

    fn http(url: &str) -> ServerSpec {
        ServerSpec {
            name: "web".into(),
            command: String::new(),
            args: Vec::new(),
            env: Vec::new(),
            trusted: false,
            http: Some(HttpEndpoint {
                url: url.into(),
                headers: Vec::new(),
            }),
        }
    }

    fn proxy_policy() -> Policy {
        let config = NetworkConfig {
            mode: NetworkMode::Proxy,
            allow_domains: vec!["mcp.example".into()],
            deny_domains: vec!["bad.mcp.example".into()],
            allow_ports: vec![443, 8080],
            allow_cidrs: vec!["127.0.0.1/32".into()],
            ..NetworkConfig::default()
        };
        Policy {
            network: false,
            egress: Some(EgressPolicy::from_config(&config).unwrap()),
            ..Policy::default()
        }
    }

    #[test]
    fn urls_are_judged_by_the_egress_policy_and_refusals_name_host_and_rule() {
        let p = proxy_policy();
        for ok in [
            "https://mcp.example/mcp",
            "http://mcp.example:8080/mcp",
            "http://127.0.0.1:8080/mcp",
            "https://MCP.example./x",
        ] {
            assert_eq!(check(&p, &[http(ok)]), Ok(()), "{ok}");
        }
        for (bad, needle) in [
            (
                "https://other.example/mcp",
                "\"web\": network: refused other.example:443 — not in allow_domains",
            ),
            (
                "http://mcp.example/mcp",
                "mcp.example:80 — port 80 not in allow_ports",
            ),
            (
                "https://bad.mcp.example/",
                "matches deny_domains entry `bad.mcp.example`",
            ),
            (
                "https://10.0.0.1/",
                "10.0.0.1:443 — IP address not in allow_cidrs",
            ),
            (
                "http://[::1]:8080/",
                "[::1]:8080 — IP address not in allow_cidrs",
            ),
        ] {
            let error = check(&p, &[http(bad)]).unwrap_err();
            assert!(error.contains(needle), "{bad}: {error}");
        }
        let denied = Policy {
            network: false,
            egress: None,
            ..Policy::default()
        };
        let error = check(&denied, &[http("https://mcp.example/")]).unwrap_err();
        assert!(error.contains("denied"), "{error}");
        let allowed = Policy {
            network: true,
            ..Policy::default()
        };
        assert_eq!(
            check(&allowed, &[http("https://anything.example/")]),
            Ok(())
        );
    }
}
