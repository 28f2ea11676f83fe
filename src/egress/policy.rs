//! The egress policy the proxy enforces: built from a [`NetworkConfig`] (whose malformed entries
//! are errors naming the key), it judges a requested destination ([`EgressPolicy::check_target`])
//! and every address a name resolves to ([`EgressPolicy::check_address`]). Every [`Decision`]
//! carries the [`Rule`] that made it. An `allow` entry (`name:port`) admits that name at that
//! port whatever `allow_ports` and `allow_domains` say (not past `deny_domains`), for a raw
//! relay ([`Rule::AllowListed`]).

use std::collections::BTreeMap;
use std::net::IpAddr;

use ipnet::IpNet;

use super::address::refused_class;
use super::credentials::credential::Credential;
pub use super::host::Host;
use super::pattern::DomainPattern;
pub use super::rule::Rule;
use crate::config::{NetworkConfig, NetworkMode};

/// A verdict and the rule behind it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub allowed: bool,
    pub rule: Rule,
}

impl Decision {
    fn allow(rule: Rule) -> Decision {
        Decision {
            allowed: true,
            rule,
        }
    }
    fn refuse(rule: Rule) -> Decision {
        Decision {
            allowed: false,
            rule,
        }
    }
}

/// The checked policy of one session's (or one `sandbox run`'s) network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EgressPolicy {
    pub mode: NetworkMode,
    allow_domains: Vec<DomainPattern>,
    deny_domains: Vec<DomainPattern>,
    allow_ports: Vec<u16>,
    allow_cidrs: Vec<IpNet>,
    /// `allow` entries: a name pattern and the port relayed raw for it.
    raw: Vec<(DomainPattern, u16)>,
    hosts: BTreeMap<String, IpAddr>,
    /// `credentials`, checked, their secrets read.
    credentials: Vec<Credential>,
    /// The PEM text of each `extra_ca_files` entry.
    extra_cas: Vec<String>,
}

/// The PEM text of a CA file, checked to hold certificates.
fn read_ca_file(path: &str) -> Result<String, String> {
    let path = crate::policy::resolve::expand_home(std::path::Path::new(path));
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    super::credentials::roots::parse_pem(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(text)
}

/// A malformed entry: the key below `[sandbox.network]` (e.g. `allow_domains[2]`) and why.
pub type FieldError = (String, String);

impl EgressPolicy {
    /// Parses every entry of `config`; the first malformed one is the error.
    pub fn from_config(config: &NetworkConfig) -> Result<EgressPolicy, FieldError> {
        let patterns = |key: &str, list: &[String]| {
            list.iter()
                .enumerate()
                .map(|(i, p)| DomainPattern::parse(p).map_err(|e| (format!("{key}[{i}]"), e)))
                .collect::<Result<Vec<_>, _>>()
        };
        let allow_domains = patterns("allow_domains", &config.allow_domains)?;
        let deny_domains = patterns("deny_domains", &config.deny_domains)?;
        if let Some(i) = config.allow_ports.iter().position(|&p| p == 0) {
            return Err((format!("allow_ports[{i}]"), "port 0 is not a port".into()));
        }
        let allow_cidrs = config
            .allow_cidrs
            .iter()
            .enumerate()
            .map(|(i, c)| parse_cidr(c).map_err(|e| (format!("allow_cidrs[{i}]"), e)))
            .collect::<Result<Vec<_>, _>>()?;
        let raw = config
            .allow
            .iter()
            .enumerate()
            .map(|(i, e)| parse_raw(e).map_err(|why| (format!("allow[{i}]"), why)))
            .collect::<Result<Vec<_>, _>>()?;
        let mut hosts = BTreeMap::new();
        for (name, addr) in &config.hosts {
            let key = format!("hosts.{name}");
            let Ok(Host::Name(norm)) = Host::parse(name) else {
                return Err((key, format!("`{name}` is not a host name")));
            };
            let ip = addr
                .parse::<IpAddr>()
                .map_err(|_| (key, format!("`{addr}` is not an IP address")))?;
            hosts.insert(norm, ip.to_canonical());
        }
        let env = |name: &str| std::env::var(name).ok();
        let credentials = super::credentials::credential::from_config(&config.credentials, &env)?;
        let extra_cas = config
            .extra_ca_files
            .iter()
            .enumerate()
            .map(|(i, path)| read_ca_file(path).map_err(|e| (format!("extra_ca_files[{i}]"), e)))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(EgressPolicy {
            mode: config.mode,
            allow_domains,
            deny_domains,
            allow_ports: config.allow_ports.clone(),
            allow_cidrs,
            raw,
            hosts,
            credentials,
            extra_cas,
        })
    }

    /// The credentials the proxy injects (secrets read at load).
    pub fn credentials(&self) -> &[Credential] {
        &self.credentials
    }

    /// The PEM texts of `extra_ca_files`.
    pub fn extra_cas(&self) -> &[String] {
        &self.extra_cas
    }

    /// Judges a requested destination before any name is resolved: the port, then an IP
    /// literal against `allow_cidrs`, or a name against `deny_domains` (which wins) and
    /// `allow_domains`.
    pub fn check_target(&self, host: &Host, port: u16) -> Decision {
        if let Host::Name(name) = host
            && let Some((p, _)) = self
                .raw
                .iter()
                .find(|(p, raw_port)| *raw_port == port && p.matches(name))
        {
            if let Some(d) = self.deny_domains.iter().find(|d| d.matches(name)) {
                return Decision::refuse(Rule::DenyDomain(d.to_string()));
            }
            return Decision::allow(Rule::AllowListed(format!("{p}:{port}")));
        }
        if !self.allow_ports.contains(&port) {
            return Decision::refuse(Rule::PortNotAllowed(port));
        }
        match host {
            Host::Ip(ip) => match self.cidr_of(*ip) {
                Some(net) => Decision::allow(Rule::AllowCidr(net.to_string())),
                None => Decision::refuse(Rule::IpNotInAllowCidrs),
            },
            Host::Name(name) => {
                if let Some(p) = self.deny_domains.iter().find(|p| p.matches(name)) {
                    return Decision::refuse(Rule::DenyDomain(p.to_string()));
                }
                match self.allow_domains.iter().find(|p| p.matches(name)) {
                    Some(p) => Decision::allow(Rule::AllowDomain(p.to_string())),
                    None => Decision::refuse(Rule::NotInAllowDomains),
                }
            }
        }
    }

    /// Judges one address a name resolved to: inside an `allow_cidrs` entry, else refused
    /// when of a refused class (no DNS rebinding to loopback or a private network).
    pub fn check_address(&self, addr: IpAddr) -> Decision {
        let addr = addr.to_canonical();
        if let Some(net) = self.cidr_of(addr) {
            return Decision::allow(Rule::AllowCidr(net.to_string()));
        }
        match refused_class(addr) {
            Some(class) => Decision::refuse(Rule::RefusedAddress { addr, class }),
            None => Decision::allow(Rule::PublicAddress),
        }
    }

    /// Every destination port the policy can allow (`allow_ports`, then the `allow`
    /// entries' ports), each once: what transparent egress listens on.
    pub fn ports(&self) -> Vec<u16> {
        let mut ports = self.allow_ports.clone();
        for (_, port) in &self.raw {
            if !ports.contains(port) {
                ports.push(*port);
            }
        }
        ports
    }

    /// Whether `name` (canonical) is allowed at one of [`EgressPolicy::ports`], and else the
    /// refusal at the first of them (what transparent egress's DNS stub answers by).
    pub fn check_name(&self, name: &str) -> Decision {
        let host = Host::Name(name.to_owned());
        let mut first = None;
        for port in self.ports() {
            let d = self.check_target(&host, port);
            if d.allowed {
                return d;
            }
            first.get_or_insert(d);
        }
        first.unwrap_or(Decision::refuse(Rule::NotInAllowDomains))
    }

    /// The operator's fixed address for `name` (`[sandbox.network] hosts`), if any.
    pub fn fixed_address(&self, name: &str) -> Option<IpAddr> {
        self.hosts.get(name).copied()
    }

    /// The policy as `doctor` and `sandbox run --help` show it, one `key = value` a line.
    pub fn describe(&self) -> Vec<String> {
        let list = |items: Vec<String>| format!("[{}]", items.join(", "));
        let mut lines = vec![
            format!("mode = {}", self.mode.as_str()),
            format!(
                "allow_domains = {}",
                list(self.allow_domains.iter().map(|p| p.to_string()).collect())
            ),
            format!(
                "deny_domains = {}",
                list(self.deny_domains.iter().map(|p| p.to_string()).collect())
            ),
            format!(
                "allow_ports = {}",
                list(self.allow_ports.iter().map(|p| p.to_string()).collect())
            ),
            format!(
                "allow_cidrs = {}",
                list(self.allow_cidrs.iter().map(|n| n.to_string()).collect())
            ),
        ];
        if !self.raw.is_empty() {
            let raw = self.raw.iter().map(|(p, port)| format!("{p}:{port}"));
            lines.push(format!("allow = {}", list(raw.collect())));
        }
        if !self.credentials.is_empty() {
            let shown = self.credentials.iter().map(|c| {
                let hosts: Vec<String> = c.hosts.iter().map(|p| p.to_string()).collect();
                format!("{} (${} for {})", c.name, c.env, hosts.join(" "))
            });
            lines.push(format!("credentials = {}", list(shown.collect())));
        }
        lines
    }

    fn cidr_of(&self, ip: IpAddr) -> Option<&IpNet> {
        self.allow_cidrs.iter().find(|net| net.contains(&ip))
    }
}

/// An `allow` entry: `name:port` (a name pattern; a port other than 80 and 443, which keep
/// their HTTP and TLS checks).
fn parse_raw(text: &str) -> Result<(DomainPattern, u16), String> {
    let Some((name, port)) = text.trim().rsplit_once(':') else {
        return Err(format!("`{text}` is not `name:port` (e.g. git.example:22)"));
    };
    let port: u16 = match port.parse() {
        Ok(0) | Err(_) => return Err(format!("`{port}` is not a port (1-65535)")),
        Ok(port) => port,
    };
    if port == 80 || port == 443 {
        return Err(format!(
            "port {port} keeps its {} check: list `{name}` in allow_domains instead",
            if port == 80 {
                "HTTP Host"
            } else {
                "TLS server name"
            }
        ));
    }
    Ok((DomainPattern::parse(name)?, port))
}

/// `10.0.0.0/8`, `fd00::/8`, or a bare address (a single-address network).
fn parse_cidr(text: &str) -> Result<IpNet, String> {
    let text = text.trim();
    if let Ok(net) = text.parse::<IpNet>() {
        if net.trunc() != net {
            return Err(format!(
                "`{text}` has host bits set (did you mean `{}`?)",
                net.trunc()
            ));
        }
        return Ok(net);
    }
    text.parse::<IpAddr>()
        .map(IpNet::from)
        .map_err(|_| format!("`{text}` is not an address or CIDR (e.g. 10.0.0.0/8, fd00::/8)"))
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
