//! The SOCKS5 side (RFC 1928, no authentication, `CONNECT` only): a small parser rather than a
//! crate, because the proxy must own name resolution and every check between the request and
//! the reply, which the SOCKS crates do inside their own connect logic. Names (`socks5h://`)
//! are resolved by the proxy; the child has no resolver. A name or address the proxy would
//! not take from a URL ([`Host::parse`]: a NUL, a control character, an IPv4-mapped IPv6
//! address, ...) is refused with its rule, like a denied one.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::OwnedSemaphorePermit;
use tokio::time::timeout;

use super::dial::{DialError, dial};
use super::{Attempt, Inner, Via, tunnel};
use crate::egress::host::shown;
use crate::egress::{Host, Rule};

const VERSION: u8 = 5;
const NO_AUTH: u8 = 0;
const NO_ACCEPTABLE: u8 = 0xff;
const CMD_CONNECT: u8 = 1;
const REP_OK: u8 = 0;
const REP_NOT_ALLOWED: u8 = 2;
const REP_HOST_UNREACHABLE: u8 = 4;
const REP_COMMAND: u8 = 7;
const REP_ADDRESS_TYPE: u8 = 8;

/// Serves one SOCKS5 client connection.
pub(super) async fn serve_conn(
    inner: Arc<Inner>,
    mut stream: TcpStream,
    _permit: Arc<OwnedSemaphorePermit>,
) {
    let asked = tokio::select! {
        asked = timeout(inner.limits.header_timeout, handshake(&mut stream)) => asked,
        () = inner.closed.cancelled() => return,
    };
    let request = match asked {
        Ok(Ok(request)) => request,
        Ok(Err(Some(code))) => {
            let _ = reply(&mut stream, code).await;
            return;
        }
        Ok(Err(None)) | Err(_) => return,
    };
    let (host, port) = request;
    let host = match host {
        Ok(host) => host,
        Err((text, rule)) => {
            let at = Attempt::new(Via::Socks, text, port);
            inner.refuse(&at, None, rule).await;
            let _ = reply(&mut stream, REP_NOT_ALLOWED).await;
            return;
        }
    };
    let at = Attempt::new(Via::Socks, host.to_string(), port);
    let dialed = match dial(&inner, &at, &host).await {
        Ok(dialed) => dialed,
        Err(DialError::Refused(_)) => {
            let _ = reply(&mut stream, REP_NOT_ALLOWED).await;
            return;
        }
        Err(DialError::Failed(why)) => {
            tracing::debug!(%why, "socks upstream failed");
            let _ = reply(&mut stream, REP_HOST_UNREACHABLE).await;
            return;
        }
    };
    if reply(&mut stream, REP_OK).await.is_err() {
        return;
    }
    tunnel::run(&inner, &at, stream, &[], dialed, &host).await;
}

/// A requested host, or the text sent (escaped) and the rule refusing it.
pub(super) type Requested = Result<Host, (String, Rule)>;

/// The requested destination, or the reply code to fail with (`None`: just close).
pub(super) async fn handshake<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
) -> Result<(Requested, u16), Option<u8>> {
    let io = |_| None;
    let mut head = [0u8; 2];
    s.read_exact(&mut head).await.map_err(io)?;
    if head[0] != VERSION {
        return Err(None);
    }
    let mut methods = vec![0u8; usize::from(head[1])];
    s.read_exact(&mut methods).await.map_err(io)?;
    if !methods.contains(&NO_AUTH) {
        let _ = s.write_all(&[VERSION, NO_ACCEPTABLE]).await;
        return Err(None);
    }
    s.write_all(&[VERSION, NO_AUTH]).await.map_err(io)?;
    let mut req = [0u8; 4];
    s.read_exact(&mut req).await.map_err(io)?;
    if req[0] != VERSION {
        return Err(None);
    }
    if req[1] != CMD_CONNECT {
        return Err(Some(REP_COMMAND));
    }
    let host = match req[3] {
        1 => {
            let mut a = [0u8; 4];
            s.read_exact(&mut a).await.map_err(io)?;
            Ok(Host::Ip(IpAddr::V4(Ipv4Addr::from(a))))
        }
        4 => {
            let mut a = [0u8; 16];
            s.read_exact(&mut a).await.map_err(io)?;
            let ip = IpAddr::V6(Ipv6Addr::from(a));
            Host::from_ip(ip).map_err(|rule| (ip.to_string(), rule))
        }
        3 => {
            let mut len = [0u8; 1];
            s.read_exact(&mut len).await.map_err(io)?;
            let mut name = vec![0u8; usize::from(len[0])];
            s.read_exact(&mut name).await.map_err(io)?;
            let text = String::from_utf8_lossy(&name);
            Host::parse(&text).map_err(|rule| (shown(&text), rule))
        }
        _ => return Err(Some(REP_ADDRESS_TYPE)),
    };
    let mut port = [0u8; 2];
    s.read_exact(&mut port).await.map_err(io)?;
    Ok((host, u16::from_be_bytes(port)))
}

async fn reply(s: &mut TcpStream, code: u8) -> std::io::Result<()> {
    s.write_all(&[VERSION, code, 0, 1, 0, 0, 0, 0, 0, 0]).await
}
