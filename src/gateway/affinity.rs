//! Session affinity for load balancers in front of several daemons: the `/acp` upgrade answers
//! with the `Acp-Session-Id` the client sent (if any) and a cookie naming the daemon that holds
//! that session's lease (else this daemon), so a balancer that routes on the cookie sends a
//! reconnect to the daemon running the session. A reconnect that lands elsewhere still works
//! through `session/load`.

use axum::http::{HeaderMap, HeaderName, HeaderValue, header};

use crate::acp::server::Server;

/// The header naming the session a connection is for (ACP's remote-transport draft).
pub const SESSION_HEADER: HeaderName = HeaderName::from_static("acp-session-id");
/// The cookie naming the lease holder.
pub const COOKIE: &str = "zeroclaw_daemon";

/// The headers to add to an `/acp` upgrade response.
pub async fn response_headers(
    server: &Server,
    request: &HeaderMap,
) -> Vec<(HeaderName, HeaderValue)> {
    let session = request
        .get(&SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|s| is_session_id(s));
    let mut holder = None;
    if let (Some(id), Some(store)) = (session, &server.store) {
        match store.lease_holder(id).await {
            Ok(found) => holder = found,
            Err(error) => tracing::warn!(%error, "reading a session's lease holder failed"),
        }
    }
    let holder = holder.unwrap_or_else(|| server.leases.holder().as_str().to_owned());
    let mut headers = Vec::new();
    if let Some(id) = session
        && let Ok(value) = HeaderValue::from_str(id)
    {
        headers.push((SESSION_HEADER, value));
    }
    let cookie = format!(
        "{COOKIE}={}; Path=/acp; HttpOnly; SameSite=Strict",
        cookie_value(&holder)
    );
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        headers.push((header::SET_COOKIE, value));
    }
    headers
}

/// Session ids are `s-` and hex; anything else is not echoed.
fn is_session_id(s: &str) -> bool {
    s.len() <= 128
        && s.starts_with("s-")
        && s[2..]
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-')
}

/// The holder name with the characters a cookie value cannot carry replaced.
fn cookie_value(holder: &str) -> String {
    holder
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-._/".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_session_ids_are_echoed_and_cookies_stay_well_formed() {
        assert!(is_session_id("s-0123abcd"));
        assert!(!is_session_id("s-1\r\nSet-Cookie: x"));
        assert!(!is_session_id("other"));
        assert_eq!(cookie_value("host a/1/x;y"), "host_a/1/x_y");
    }
}
