//! The `network.connection` record: one per connection the egress proxy of a call refused
//! (written at once) or served (written when it ended), with the rule behind it; and the
//! `credential.use` record: one per request the proxy put a credential in, or refused for
//! carrying a credential's placeholder to a host it is not bound to (never the secret).

use crate::egress::proxy::{Connection, CredentialUse};

/// The kind of a credential's record.
pub const CREDENTIAL_KIND: &str = "credential.use";

/// Adds the use's fields to `event` (a `credential.use` event carrying the call fields).
pub fn with_credential(event: super::Event, u: &CredentialUse) -> super::Event {
    event
        .with("credential", u.credential.as_str())
        .with("name", u.name.as_str())
        .with("port", u.port)
        .with("method", u.method.as_str())
        .with("path", u.path.as_str())
        .with("decision", if u.allowed { "allow" } else { "deny" })
}

/// The kind of the record.
pub const KIND: &str = "network.connection";

/// Adds the connection's fields to `event` (a `network.connection` event carrying the call
/// fields).
pub fn with_connection(event: super::Event, c: &Connection) -> super::Event {
    event
        .with("via", c.via.as_str())
        .with("name", c.name.as_str())
        .with("port", c.port)
        .with("address", c.address.map(|a| a.ip().to_string()))
        .with("decision", if c.allowed { "allow" } else { "deny" })
        .with("rule", c.rule.id())
        .with("reason", c.rule.to_string())
        .with("bytes_sent", c.sent)
        .with("bytes_received", c.received)
        .with("duration_us", c.duration.as_micros() as u64)
}
