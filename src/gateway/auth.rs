//! Who is connecting, decided before any WebSocket upgrade. On the Unix socket the peer's
//! credentials are the principal (`SO_PEERCRED`: the daemon's uid, root, or an allowed uid/gid);
//! a token presented there is ignored (and the log says so). On TCP a bearer token (from
//! `Authorization: Bearer` or a `Sec-WebSocket-Protocol` entry `bearer.<token>`; never from the
//! URL, see [`url_token_refusal`]), else — only with `require_auth = false` on a loopback
//! connection — `local`. Anything else is refused with a plain 401.

use std::net::SocketAddr;

use axum::extract::connect_info::Connected;
use axum::http::HeaderMap;
use axum::http::header::{AUTHORIZATION, SEC_WEBSOCKET_PROTOCOL};
use axum::serve::{IncomingStream, Listener};

use super::tokens::Tokens;
use crate::config::GatewayConfig;

/// The subprotocol echoed when a client offers it.
pub const SUBPROTOCOL: &str = "zeroclaw.acp.v1";
/// Prefix of the `Sec-WebSocket-Protocol` entry carrying a token.
const PROTOCOL_TOKEN_PREFIX: &str = "bearer.";

/// What the transport knows about the other end, captured when the connection is accepted.
#[derive(Debug, Clone)]
pub enum PeerInfo {
    /// `loopback`: the connection arrived on a loopback address.
    Tcp { remote: SocketAddr, loopback: bool },
    /// `(uid, gid)` from `SO_PEERCRED`, when the kernel gave them.
    Unix { cred: Option<(u32, u32)> },
}

/// A TCP listener whose accepted sockets get `TCP_NODELAY` (each streamed chunk is its own
/// small frame: Nagle plus delayed ACKs would hold every one of them back).
pub struct NoDelayTcpListener(pub tokio::net::TcpListener);

impl Listener for NoDelayTcpListener {
    type Io = tokio::net::TcpStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        let (stream, addr) = Listener::accept(&mut self.0).await;
        if let Err(error) = stream.set_nodelay(true) {
            tracing::debug!(%error, "TCP_NODELAY not set");
        }
        (stream, addr)
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.0.local_addr()
    }
}

impl Connected<IncomingStream<'_, NoDelayTcpListener>> for PeerInfo {
    fn connect_info(stream: IncomingStream<'_, NoDelayTcpListener>) -> Self {
        tcp_peer(stream.io(), *stream.remote_addr())
    }
}

fn tcp_peer(stream: &tokio::net::TcpStream, remote: SocketAddr) -> PeerInfo {
    let loopback = stream
        .local_addr()
        .map(|a| a.ip().is_loopback())
        .unwrap_or(false);
    PeerInfo::Tcp { remote, loopback }
}

impl Connected<IncomingStream<'_, tokio::net::UnixListener>> for PeerInfo {
    fn connect_info(stream: IncomingStream<'_, tokio::net::UnixListener>) -> Self {
        let cred = stream.io().peer_cred().ok().map(|c| (c.uid(), c.gid()));
        PeerInfo::Unix { cred }
    }
}

/// The policy the daemon admits clients with.
#[derive(Debug, Clone)]
pub struct Policy {
    pub require_auth: bool,
    pub allowed_uids: Vec<u32>,
    pub allowed_gids: Vec<u32>,
    /// Browser origins admitted on TCP (see [`super::origin`]).
    pub allowed_origins: Vec<String>,
    pub daemon_uid: u32,
}

impl Policy {
    pub fn new(gateway: &GatewayConfig) -> Policy {
        Policy {
            require_auth: gateway.require_auth,
            allowed_uids: gateway.allowed_uids.clone(),
            allowed_gids: gateway.allowed_gids.clone(),
            allowed_origins: gateway.allowed_origins.clone(),
            daemon_uid: nix::unistd::geteuid().as_raw(),
        }
    }

    fn admits_unix(&self, uid: u32, gid: u32) -> bool {
        uid == self.daemon_uid
            || uid == 0
            || self.allowed_uids.contains(&uid)
            || self.allowed_gids.contains(&gid)
    }
}

/// The principal of an admitted connection (`uid:<n>`, `token:<name>`, `local`), or `None`.
pub fn admit(
    peer: &PeerInfo,
    headers: &HeaderMap,
    policy: &Policy,
    tokens: &Tokens,
) -> Option<String> {
    let token = presented_token(headers);
    match peer {
        PeerInfo::Unix { cred } => {
            let (uid, gid) = (*cred)?;
            if token.is_some() {
                tracing::info!(
                    uid,
                    "a token presented on the Unix socket is ignored: the peer's credentials are its principal"
                );
            }
            policy.admits_unix(uid, gid).then(|| format!("uid:{uid}"))
        }
        // A presented token is judged on its own: a wrong or revoked one is refused even where
        // `require_auth = false` would have admitted the connection.
        PeerInfo::Tcp { .. } if token.is_some() => token
            .and_then(|t| tokens.verify(&t))
            .map(|name| format!("token:{name}")),
        PeerInfo::Tcp { loopback: true, .. } if !policy.require_auth => Some("local".into()),
        PeerInfo::Tcp { .. } => None,
    }
}

/// Whether the request carries a token where the daemon reads one.
pub fn presents_token(headers: &HeaderMap) -> bool {
    presented_token(headers).is_some()
}

/// The refusal of a request carrying `?token=` (proxies, logs and browser histories keep URLs),
/// saying where the token goes instead; `None` when the URL carries none.
pub fn url_token_refusal(query_has_token: bool, peer: &PeerInfo) -> Option<String> {
    if !query_has_token {
        return None;
    }
    let instead = match peer {
        PeerInfo::Unix { .. } => {
            "on the Unix socket no token is needed: the peer's credentials decide".to_owned()
        }
        PeerInfo::Tcp { .. } => format!(
            "send it as `Authorization: Bearer <token>` or as the `Sec-WebSocket-Protocol` entry `{PROTOCOL_TOKEN_PREFIX}<token>`"
        ),
    };
    Some(format!(
        "a token in the URL is refused (proxies, logs and browser histories keep URLs): {instead}\n"
    ))
}

/// The first token found in the `Authorization` header, then the subprotocol list.
fn presented_token(headers: &HeaderMap) -> Option<String> {
    let bearer = headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            let (scheme, token) = v.trim().split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
        });
    let protocol = headers
        .get_all(SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .find_map(|p| p.trim().strip_prefix(PROTOCOL_TOKEN_PREFIX));
    bearer
        .or(protocol)
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn policy(require_auth: bool) -> Policy {
        Policy {
            require_auth,
            allowed_uids: vec![1234],
            allowed_gids: vec![77],
            allowed_origins: Vec::new(),
            daemon_uid: 1000,
        }
    }

    #[test]
    fn token_positions_in_order() {
        let mut h = HeaderMap::new();
        assert_eq!(presented_token(&h), None);
        h.insert(
            SEC_WEBSOCKET_PROTOCOL,
            HeaderValue::from_static("zeroclaw.acp.v1, bearer.p"),
        );
        assert_eq!(presented_token(&h).as_deref(), Some("p"));
        h.insert(AUTHORIZATION, HeaderValue::from_static("Bearer a"));
        assert_eq!(presented_token(&h).as_deref(), Some("a"));
    }

    #[test]
    fn peers_without_a_token() {
        let dir = tempfile::tempdir().unwrap();
        let tokens = Tokens::in_dir(dir.path());
        let h = HeaderMap::new();
        let unix = |uid, gid| PeerInfo::Unix {
            cred: Some((uid, gid)),
        };
        let tcp = |loopback| PeerInfo::Tcp {
            remote: "127.0.0.1:1".parse().unwrap(),
            loopback,
        };
        let p = policy(true);
        assert_eq!(
            admit(&unix(1000, 5), &h, &p, &tokens).as_deref(),
            Some("uid:1000")
        );
        assert_eq!(
            admit(&unix(0, 0), &h, &p, &tokens).as_deref(),
            Some("uid:0")
        );
        assert_eq!(
            admit(&unix(1234, 5), &h, &p, &tokens).as_deref(),
            Some("uid:1234")
        );
        assert_eq!(
            admit(&unix(9, 77), &h, &p, &tokens).as_deref(),
            Some("uid:9")
        );
        assert_eq!(admit(&unix(9, 9), &h, &p, &tokens), None);
        assert_eq!(admit(&tcp(true), &h, &p, &tokens), None);
        let open = policy(false);
        assert_eq!(
            admit(&tcp(true), &h, &open, &tokens).as_deref(),
            Some("local")
        );
        assert_eq!(admit(&tcp(false), &h, &open, &tokens), None);
        let mut bad = HeaderMap::new();
        bad.insert(AUTHORIZATION, HeaderValue::from_static("Bearer bad"));
        assert_eq!(admit(&tcp(true), &bad, &open, &tokens), None);
        // On the Unix socket a token is ignored: the credentials decide either way.
        assert_eq!(
            admit(&unix(1000, 5), &bad, &p, &tokens).as_deref(),
            Some("uid:1000")
        );
        assert_eq!(admit(&unix(9, 9), &bad, &p, &tokens), None);
    }
}
