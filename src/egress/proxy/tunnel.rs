//! A tunnel (after `CONNECT` or a SOCKS5 connect): the client's first bytes must be a TLS
//! ClientHello naming the requested host (rustls's server-side parser reads it without
//! terminating TLS); those bytes are then replayed upstream and both directions relayed until
//! either side closes, the tunnel is idle for `idle_timeout`, or the proxy is closed: with
//! splice(2) on Linux (`super::splice`), else, or when no pipe can be had, by copying through
//! the proxy. The bytes each way are counted for the connection's report. A destination an
//! `allow` entry admits ([`Rule::AllowListed`]) is relayed raw, without the TLS check
//! ([`relay_raw`]); a tunnel to a host bound to one of the session's credentials goes to
//! [`super::intercept`] instead.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::timeout;

use super::counted::Bytes;
use super::dial::Dialed;
use super::observed::{Observed, Observer};
use super::{Attempt, Inner};
use crate::egress::{Host, Rule};

/// The largest ClientHello read before giving up on it.
const MAX_CLIENT_HELLO: usize = 64 * 1024;
/// Copy buffer per direction (when the tunnel cannot splice).
const COPY_BUF: usize = 64 * 1024;

/// Checks the client's ClientHello against `host`, then relays `client` and the upstream
/// (reported when the tunnel ends). `early` holds what the client sent that was read already
/// (by the HTTP server), before anything more from `client`.
pub(super) async fn run(
    inner: &Arc<Inner>,
    at: &Attempt,
    mut client: TcpStream,
    early: &[u8],
    dialed: Dialed,
    host: &Host,
) {
    if matches!(dialed.rule, Rule::AllowListed(_)) {
        return relay_raw(inner, at, client, early, dialed).await;
    }
    let mut sent = early.chain(&mut client);
    let hello = match timeout(inner.limits.header_timeout, read_client_hello(&mut sent)).await {
        Ok(result) => result,
        Err(_) => Err("no TLS ClientHello in time".to_owned()),
    };
    let (unread, _) = sent.into_inner();
    let first =
        match hello.and_then(|(bytes, sni)| check_sni(inner, host, at.port, sni).map(|()| bytes)) {
            Ok(bytes) => bytes,
            Err(why) => {
                inner
                    .refuse(at, Some(dialed.address), Rule::Proxy(why))
                    .await;
                return;
            }
        };
    if let (Some(session), Host::Name(name)) = (&inner.credentials, host)
        && !session.bound_to(name).is_empty()
    {
        let mut first = first;
        first.extend_from_slice(unread);
        return super::intercept::run(inner, at, client, first, dialed, name, session).await;
    }
    let Dialed {
        stream: mut upstream,
        address,
        rule,
    } = dialed;
    let bytes = Bytes::default();
    if upstream.write_all(&first).await.is_ok() && upstream.write_all(unread).await.is_ok() {
        bytes.add_sent(first.len() + unread.len());
        let idle = inner.limits.idle_timeout;
        tokio::select! {
            () = relay_or_copy(&mut client, &mut upstream, idle, &bytes) => {}
            () = inner.closed.cancelled() => tracing::debug!("egress proxy closed; tunnel ended"),
        }
    }
    inner.ended(at, address, rule, bytes.totals()).await;
}

/// Relays `client` and the upstream raw (after `early`, bytes already read from the client),
/// reported when it ends.
pub(super) async fn relay_raw(
    inner: &Inner,
    at: &Attempt,
    mut client: TcpStream,
    early: &[u8],
    dialed: Dialed,
) {
    let Dialed {
        stream: mut upstream,
        address,
        rule,
    } = dialed;
    let bytes = Bytes::default();
    if upstream.write_all(early).await.is_ok() {
        bytes.add_sent(early.len());
        let idle = inner.limits.idle_timeout;
        tokio::select! {
            () = relay_or_copy(&mut client, &mut upstream, idle, &bytes) => {}
            () = inner.closed.cancelled() => tracing::debug!("egress proxy closed; relay ended"),
        }
    }
    inner.ended(at, address, rule, bytes.totals()).await;
}

/// Relays with splice(2), else by copying.
async fn relay_or_copy(
    client: &mut TcpStream,
    upstream: &mut TcpStream,
    idle: Duration,
    bytes: &Bytes,
) {
    if let Err(e) = relay(client, upstream, idle, bytes).await {
        tracing::debug!(error = %e, "egress tunnel cannot splice; copying");
        copy_both(client, upstream, idle, bytes).await;
    }
}

#[cfg(target_os = "linux")]
use super::splice::relay;

/// splice(2) is Linux's: elsewhere a tunnel copies.
#[cfg(not(target_os = "linux"))]
async fn relay(_: &TcpStream, _: &TcpStream, _: Duration, _: &Bytes) -> std::io::Result<()> {
    Err(std::io::ErrorKind::Unsupported.into())
}

/// The bytes read and the server name of a complete ClientHello.
pub(super) async fn read_client_hello<C: AsyncRead + Unpin>(
    client: &mut C,
) -> Result<(Vec<u8>, Option<String>), String> {
    let mut acceptor = rustls::server::Acceptor::default();
    let mut bytes = Vec::new();
    let mut chunk = vec![0u8; 4096];
    loop {
        let n = client
            .read(&mut chunk)
            .await
            .map_err(|e| format!("tunnel read failed: {e}"))?;
        if n == 0 {
            return Err("tunnel closed before a TLS ClientHello".into());
        }
        if bytes.is_empty() && chunk[0] != 0x16 {
            return Err("tunnel does not start with TLS (tunnels carry TLS only)".into());
        }
        bytes.extend_from_slice(&chunk[..n]);
        if bytes.len() > MAX_CLIENT_HELLO {
            return Err("TLS ClientHello too large".into());
        }
        let mut rest = &chunk[..n];
        while !rest.is_empty() {
            acceptor
                .read_tls(&mut rest)
                .map_err(|e| format!("not a TLS ClientHello: {e}"))?;
        }
        match acceptor.accept() {
            Ok(Some(accepted)) => {
                let sni = accepted.client_hello().server_name().map(str::to_owned);
                return Ok((bytes, sni));
            }
            Ok(None) => continue,
            Err((e, _alert)) => return Err(format!("not a TLS ClientHello: {e}")),
        }
    }
}

/// A tunnel to a name must name that server; one to an address may name none, or a server
/// the policy admits by name.
fn check_sni(inner: &Inner, host: &Host, port: u16, sni: Option<String>) -> Result<(), String> {
    match (host, sni) {
        (Host::Name(name), Some(sni)) if Host::parse(&sni) == Ok(Host::Name(name.clone())) => {
            Ok(())
        }
        (Host::Name(_), Some(sni)) => Err(format!(
            "TLS server name `{sni}` differs from the requested host"
        )),
        (Host::Name(_), None) => Err("TLS ClientHello names no server".into()),
        (Host::Ip(_), None) => Ok(()),
        (Host::Ip(_), Some(sni)) => {
            let named = Host::parse(&sni).ok();
            match named.map(|h| inner.policy.check_target(&h, port)) {
                Some(d) if d.allowed => Ok(()),
                _ => Err(format!("TLS server name `{sni}` is not allowed")),
            }
        }
    }
}

/// Copies both ways until one side closes, or nothing moved for `idle`; what `a` sends
/// counts as sent, what `b` sends as received.
async fn copy_both<A, B>(a: A, b: B, idle: Duration, bytes: &Bytes)
where
    A: AsyncRead + AsyncWrite + Unpin,
    B: AsyncRead + AsyncWrite + Unpin,
{
    let start = Instant::now();
    let last = Arc::new(AtomicU64::new(0));
    let watch = || Watch {
        start,
        last: last.clone(),
        read: 0,
    };
    let mut a = Observed::new(a, watch());
    let mut b = Observed::new(b, watch());
    let copy = tokio::io::copy_bidirectional_with_sizes(&mut a, &mut b, COPY_BUF, COPY_BUF);
    let watchdog = super::idle::quiet_for(idle, start, &last);
    tokio::select! {
        _ = copy => {}
        () = watchdog => tracing::debug!("egress tunnel idle; closed"),
    }
    bytes.add_sent(a.observer.read);
    bytes.add_received(b.observer.read);
}

/// When a tunnel's streams last read anything, and how much each read.
struct Watch {
    start: Instant,
    last: Arc<AtomicU64>,
    read: usize,
}

impl Observer for Watch {
    fn read(&mut self, bytes: &[u8]) {
        self.read += bytes.len();
        let now = self.start.elapsed().as_millis() as u64;
        self.last.store(now, Ordering::Relaxed);
    }
}
