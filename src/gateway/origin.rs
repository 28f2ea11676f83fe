//! The browser `Origin` check of `GET /acp` on TCP: a request carrying an `Origin` header (every
//! browser sends one on a WebSocket handshake) is admitted only when that origin is listed in
//! `[gateway] allowed_origins` (whose entries `crate::config::origin` checks), so a web page cannot drive a local daemon with a token it
//! learned. A request without `Origin` (a non-browser client) is unaffected, and so is the Unix
//! socket, which no browser can reach.

use axum::http::HeaderMap;
use axum::http::header::ORIGIN;

use super::auth::PeerInfo;

/// `Err(origin)` when the request comes from a browser page whose origin is not allowed.
pub fn check(peer: &PeerInfo, headers: &HeaderMap, allowed: &[String]) -> Result<(), String> {
    if matches!(peer, PeerInfo::Unix { .. }) {
        return Ok(());
    }
    let Some(value) = headers.get(ORIGIN) else {
        return Ok(());
    };
    let origin = String::from_utf8_lossy(value.as_bytes()).trim().to_owned();
    if allowed.iter().any(|a| a.eq_ignore_ascii_case(&origin)) {
        Ok(())
    } else {
        Err(origin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn only_a_listed_origin_passes_on_tcp() {
        let tcp = PeerInfo::Tcp {
            remote: "127.0.0.1:1".parse().unwrap(),
            loopback: true,
        };
        let unix = PeerInfo::Unix { cred: Some((1, 1)) };
        let allowed = vec!["https://app.example".to_owned()];
        let mut h = HeaderMap::new();
        assert_eq!(check(&tcp, &h, &[]), Ok(()), "no Origin: not a browser");
        h.insert(ORIGIN, HeaderValue::from_static("https://evil.example"));
        assert_eq!(
            check(&tcp, &h, &allowed),
            Err("https://evil.example".into())
        );
        assert_eq!(check(&unix, &h, &[]), Ok(()), "no browser reaches a socket");
        h.insert(ORIGIN, HeaderValue::from_static("https://APP.example"));
        assert_eq!(check(&tcp, &h, &allowed), Ok(()));
        h.insert(ORIGIN, HeaderValue::from_static("null"));
        assert!(check(&tcp, &h, &allowed).is_err());
    }
}
