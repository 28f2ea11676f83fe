//! Why the egress policy allowed or refused a destination: the [`Rule`] every decision,
//! refusal and audit record carries, with its stable id and its message.

use std::fmt;
use std::net::IpAddr;

/// Why a destination was allowed or refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rule {
    /// The name matches this `allow_domains` entry.
    AllowDomain(String),
    /// The name matches this `deny_domains` entry.
    DenyDomain(String),
    /// The name matches no `allow_domains` entry.
    NotInAllowDomains,
    /// The port is not in `allow_ports`.
    PortNotAllowed(u16),
    /// The name and port match this `allow` entry: relayed raw.
    AllowListed(String),
    /// The address is inside this `allow_cidrs` entry.
    AllowCidr(String),
    /// An IP literal outside every `allow_cidrs` entry.
    IpNotInAllowCidrs,
    /// A resolved address of a refused class outside every `allow_cidrs` entry.
    RefusedAddress { addr: IpAddr, class: &'static str },
    /// A resolved address of no refused class.
    PublicAddress,
    /// The client answered a supervised approval prompt.
    Approved(String),
    /// Not in `allow_domains`, and the supervised approval did not admit it (why).
    NotApproved(String),
    /// Refused by the proxy for what it saw on the wire (SNI, protocol).
    Proxy(String),
    /// A host that is not one plain name or address (why, naming it).
    MalformedHost(String),
    /// An IP address in a notation other than its canonical one (as written).
    NoncanonicalIp(String),
    /// A request two parsers could read two ways (why): userinfo, a second or differing
    /// `Host`, both `Content-Length` and `Transfer-Encoding`, a folded header.
    Ambiguous(String),
    /// The request carries the placeholder of this credential, which is not sent to its host
    /// (or goes over plain HTTP).
    Placeholder(String),
    /// Transparent egress has no listener at this port: the kernel refused the connection.
    PortNotListed(u16),
}

impl Rule {
    /// The rule's stable name, for the audit record.
    pub fn id(&self) -> &'static str {
        match self {
            Rule::AllowDomain(_) => "allow_domains",
            Rule::DenyDomain(_) => "deny_domains",
            Rule::NotInAllowDomains => "not_in_allow_domains",
            Rule::PortNotAllowed(_) => "allow_ports",
            Rule::AllowListed(_) => "allow",
            Rule::AllowCidr(_) => "allow_cidrs",
            Rule::IpNotInAllowCidrs => "not_in_allow_cidrs",
            Rule::RefusedAddress { .. } => "refused_address",
            Rule::PublicAddress => "public_address",
            Rule::Approved(_) => "approved",
            Rule::NotApproved(_) => "not_approved",
            Rule::Proxy(_) => "proxy",
            Rule::MalformedHost(_) => "malformed_host",
            Rule::NoncanonicalIp(_) => "noncanonical_ip",
            Rule::Ambiguous(_) => "ambiguous_request",
            Rule::Placeholder(_) => "credential_placeholder",
            Rule::PortNotListed(_) => "port_not_listed",
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rule::AllowDomain(p) => write!(f, "allowed by allow_domains entry `{p}`"),
            Rule::DenyDomain(p) => write!(f, "matches deny_domains entry `{p}`"),
            Rule::NotInAllowDomains => f.write_str("not in allow_domains"),
            Rule::PortNotAllowed(port) => write!(f, "port {port} not in allow_ports"),
            Rule::AllowListed(e) => write!(f, "allowed by allow entry `{e}` (relayed raw)"),
            Rule::AllowCidr(net) => write!(f, "allowed by allow_cidrs entry `{net}`"),
            Rule::IpNotInAllowCidrs => f.write_str("IP address not in allow_cidrs"),
            Rule::RefusedAddress { addr, class } => write!(
                f,
                "resolves to {addr} ({class}), refused unless allow_cidrs names it"
            ),
            Rule::PublicAddress => f.write_str("public address"),
            Rule::Approved(how) => write!(f, "approved by the client ({how})"),
            Rule::NotApproved(why) => write!(f, "not in allow_domains and not approved: {why}"),
            Rule::Proxy(why) => f.write_str(why),
            Rule::MalformedHost(why) => write!(f, "malformed host: {why}"),
            Rule::NoncanonicalIp(text) => write!(
                f,
                "`{text}` is an IP address in a non-canonical notation (write IPv4 as a.b.c.d)"
            ),
            Rule::Ambiguous(why) => write!(f, "ambiguous request: {why}"),
            Rule::Placeholder(name) => write!(
                f,
                "the request carries the placeholder of credential `{name}`, which is not \
                 bound to this host (or goes over plain http://)"
            ),
            Rule::PortNotListed(port) => write!(
                f,
                "port {port} not listed (not in allow_ports or an allow entry): nothing \
                 listens there, the connection was refused"
            ),
        }
    }
}
