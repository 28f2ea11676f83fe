//! Entry points for the fuzz targets (`fuzz/`): the proxy's parsers of client bytes, reached
//! without a listener. Not an API: each wraps one private step exactly as the proxy runs it.

use hyper::header::HeaderMap;
use hyper::http::uri::Authority;
use hyper::{Method, Uri};
use tokio::io::{AsyncRead, AsyncWrite};

use super::head::HeadScan;
use super::observed::Observer;
use crate::egress::{Host, Rule};

/// Whether the request head scanner, fed `bytes` in reads of `chunk` bytes, saw both
/// `Content-Length` and `Transfer-Encoding` before the head ended.
pub fn head_names_both(bytes: &[u8], chunk: usize) -> bool {
    let mut scan = HeadScan::default();
    for part in bytes.chunks(chunk.max(1)) {
        scan.read(part);
    }
    scan.framing().both()
}

/// The proxy's check of a parsed request (the target and its `Host` headers), as
/// `http::handle` runs it once hyper has parsed the head: the host, or the refusing rule;
/// `None` where the proxy answers 400 before the check (no authority, no port).
pub fn checked_target(
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    names_both: bool,
) -> Option<Result<Host, Rule>> {
    if method != Method::CONNECT && uri.scheme_str() != Some("http") {
        return None;
    }
    let authority: &Authority = uri.authority()?;
    let default_port = (method != Method::CONNECT).then_some(80);
    let port = authority.port_u16().or(default_port)?;
    Some(super::http::checked_target(
        method, headers, authority, port, names_both,
    ))
}

/// The SOCKS5 handshake on `stream`: the requested host (or its refusal) and port, or the
/// reply code the proxy fails with (`None`: it just closes).
pub async fn socks_handshake<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
) -> Result<(Result<Host, (String, Rule)>, u16), Option<u8>> {
    super::socks::handshake(stream).await
}

/// A tunnel's first bytes read as a TLS ClientHello: the bytes and the server name.
pub async fn client_hello<C: AsyncRead + Unpin>(
    client: &mut C,
) -> Result<(Vec<u8>, Option<String>), String> {
    super::tunnel::read_client_hello(client).await
}
