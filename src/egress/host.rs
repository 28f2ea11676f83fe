//! A destination as a client named it, canonicalized once: [`Host::parse`] is the one place a
//! requested name or address (URL, `CONNECT`, `Host` header, SOCKS5, TLS server name) becomes
//! a [`Host`], and the allowlist check, the resolver and the audit record all use that form.
//! Anything ambiguous is refused with its [`Rule`], never repaired: control characters,
//! non-ASCII (IDN) names, empty labels, and IP addresses written in any notation but the
//! canonical one (decimal, octal, hex or zero-padded IPv4, IPv4-mapped IPv6), which a resolver
//! would read as an address the name check never saw. Only case and one trailing dot (the
//! root) are folded.

use std::fmt;
use std::net::{IpAddr, Ipv6Addr};

use super::pattern::check_name;
use super::rule::Rule;

/// A destination as a client asked for it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Host {
    /// A DNS name, canonical: ASCII, lowercase, no trailing dot.
    Name(String),
    /// An IP literal in its canonical notation.
    Ip(IpAddr),
}

impl Host {
    /// Parses a host as a client wrote it (`[::1]` brackets for IPv6); the error is the rule
    /// that refuses it.
    pub fn parse(text: &str) -> Result<Host, Rule> {
        let malformed = |why: &str| Rule::MalformedHost(format!("`{}` {why}", shown(text)));
        if text.chars().any(char::is_control) {
            return Err(malformed("holds a control character"));
        }
        if !text.is_ascii() {
            return Err(malformed(
                "is not ASCII (an international name is written in its xn-- form)",
            ));
        }
        if let Some(inner) = text.strip_prefix('[') {
            return match inner.strip_suffix(']').map(str::parse::<Ipv6Addr>) {
                Some(Ok(v6)) => Host::from_ip(IpAddr::V6(v6)),
                _ => Err(malformed("is not a bracketed IPv6 address")),
            };
        }
        if let Ok(ip) = text.parse::<IpAddr>() {
            return Host::from_ip(ip);
        }
        let lower = text.to_ascii_lowercase();
        let name = lower.strip_suffix('.').unwrap_or(&lower);
        if ends_in_number(name) {
            return Err(Rule::NoncanonicalIp(shown(text)));
        }
        check_name(name).map_err(malformed)?;
        Ok(Host::Name(name.to_owned()))
    }

    /// An address as a destination: an IPv4-mapped IPv6 address is refused (the IPv4 address
    /// is written as such).
    pub fn from_ip(ip: IpAddr) -> Result<Host, Rule> {
        match ip {
            IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some() => {
                Err(Rule::NoncanonicalIp(v6.to_string()))
            }
            ip => Ok(Host::Ip(ip)),
        }
    }
}

/// `text` with control and non-ASCII characters escaped, for messages and records.
pub fn shown(text: &str) -> String {
    text.escape_default().to_string()
}

/// Whether a name's last label is a number (`1`, `0x7f`): `inet_aton` would read the name as
/// an IPv4 address (`2130706433`, `0177.0.0.1`, `0x7f.1`, `127.000.000.001`).
fn ends_in_number(name: &str) -> bool {
    let last = name.rsplit('.').next().unwrap_or("");
    let hex = last
        .strip_prefix("0x")
        .is_some_and(|h| h.bytes().all(|b| b.is_ascii_hexdigit()));
    hex || (!last.is_empty() && last.bytes().all(|b| b.is_ascii_digit()))
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Host::Name(name) => f.write_str(name),
            Host::Ip(IpAddr::V6(v6)) => write!(f, "[{v6}]"),
            Host::Ip(ip) => write!(f, "{ip}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule_id(text: &str) -> &'static str {
        Host::parse(text).unwrap_err().id()
    }

    #[test]
    fn case_and_one_trailing_dot_fold_to_one_name() {
        for text in ["registry.example", "Registry.EXAMPLE", "registry.example."] {
            assert_eq!(Host::parse(text), Ok(Host::Name("registry.example".into())));
        }
        assert_eq!(
            Host::parse("xn--bcher-kva.example"),
            Ok(Host::Name("xn--bcher-kva.example".into()))
        );
        assert_eq!(
            Host::parse("127.0.0.1"),
            Ok(Host::Ip("127.0.0.1".parse().unwrap()))
        );
        assert_eq!(Host::parse("[::1]"), Ok(Host::Ip("::1".parse().unwrap())));
    }

    #[test]
    fn ambiguous_names_are_refused_with_their_rule() {
        for text in [
            "a.example\0.b",
            "allowed.example\0.evil",
            "a\tb.example",
            "a\u{7f}.example",
            "bücher.example",
            "a..example",
            "registry.example..",
            "",
            ".",
            "a%2eexample",
            "user@registry.example",
            "[127.0.0.1]",
            "[::1",
        ] {
            assert_eq!(rule_id(text), "malformed_host", "{text:?}");
        }
        assert!(
            Host::parse("a\0b")
                .unwrap_err()
                .to_string()
                .contains(r"`a\u{0}b` holds a control character")
        );
    }

    #[test]
    fn ipv4_in_any_but_its_canonical_notation_is_refused() {
        for text in [
            "2130706433",
            "0x7f000001",
            "0177.0.0.1",
            "0x7f.0.0.1",
            "127.000.000.001",
            "127.1",
            "127.0.0.1.",
            "[::ffff:127.0.0.1]",
            "::ffff:7f00:1",
            "1.2.3.0X1F",
        ] {
            assert_eq!(rule_id(text), "noncanonical_ip", "{text:?}");
        }
    }
}
