//! [`Host::parse`], the one place a requested name or address becomes a destination.
//! Properties: an accepted host's text re-parses to itself (the allowlist, the resolver and
//! the audit record agree on it), a name is lowercase ASCII without a trailing dot, and the
//! `host:port` written from it reads back through the `http` crate's authority parser (the
//! proxy's upstream request) as the same host and port.

use hyper::http::uri::Authority;
use zeroclaw::egress::Host;

pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(host) = Host::parse(text) else {
        return;
    };
    let shown = host.to_string();
    assert_eq!(
        Host::parse(&shown).as_ref(),
        Ok(&host),
        "{text:?} shown as {shown:?}"
    );
    if let Host::Name(name) = &host {
        assert!(name.is_ascii() && !name.ends_with('.'));
        assert_eq!(name.to_ascii_lowercase(), *name);
    }
    if let Ok(authority) = format!("{shown}:8443").parse::<Authority>() {
        assert_eq!(
            Host::parse(authority.host()).as_ref(),
            Ok(&host),
            "{shown:?}"
        );
        assert_eq!(authority.port_u16(), Some(8443));
    }
}
