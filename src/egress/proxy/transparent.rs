//! Transparent egress's listeners: the child's direct connections (any TCP connection it
//! makes to a port the policy can allow lands on the listener bound at `0.0.0.0:port` in its
//! network namespace, every IPv4 address being local there). The accepted socket's local
//! address is where the child meant to go: a synthetic address maps back to the name the DNS
//! stub gave it for ([`super::synthetic`]), any other address is an IP destination. Then the
//! rules of a `CONNECT` to that name or address and port apply ([`super::dial`]): the proxy
//! resolves the name itself and judges every address; port 80 must carry an HTTP request
//! whose one `Host` names the destination; an `allow` entry's port is relayed raw; any other
//! port (443 included) must start with a TLS ClientHello naming the destination
//! ([`super::tunnel`]). A refusal before the relay resets the connection (the program sees
//! `ECONNRESET`: the kernel had accepted it on the proxy's behalf); every connection is
//! reported like a proxied one, `via` transparent.

use std::net::IpAddr;
use std::sync::Arc;

use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use tokio::sync::OwnedSemaphorePermit;
use tokio::time::timeout;

use super::dial::{DialError, dial};
use super::synthetic::{Names, is_synthetic};
use super::{Attempt, Inner, Via, tunnel};
use crate::egress::{Host, Rule};

/// Serves one direct connection of the child's.
pub(super) async fn serve_conn(
    inner: Arc<Inner>,
    names: Arc<Names>,
    client: TcpStream,
    _permit: Arc<OwnedSemaphorePermit>,
) {
    let Ok(dest) = client.local_addr() else {
        return;
    };
    let port = dest.port();
    let host = match dest.ip().to_canonical() {
        IpAddr::V4(v4) if is_synthetic(v4) => match names.name_of(v4) {
            Some(name) => Ok(Host::Name(name)),
            None => Err(Rule::MalformedHost(format!(
                "{v4} is a synthetic address the DNS stub did not give out"
            ))),
        },
        ip => Host::from_ip(ip),
    };
    let host = match host {
        Ok(host) => host,
        Err(rule) => {
            let at = Attempt::new(Via::Transparent, dest.ip().to_string(), port);
            inner.refuse(&at, None, rule).await;
            return reset(client);
        }
    };
    let at = Attempt::new(Via::Transparent, host.to_string(), port);
    let dialed = tokio::select! {
        dialed = dial(&inner, &at, &host) => dialed,
        () = inner.closed.cancelled() => return,
    };
    let dialed = match dialed {
        Ok(dialed) => dialed,
        Err(DialError::Refused(_)) => return reset(client),
        Err(DialError::Failed(why)) => {
            tracing::debug!(%why, "transparent upstream failed");
            return reset(client);
        }
    };
    if port == 80 && !matches!(dialed.rule, Rule::AllowListed(_)) {
        let mut client = client;
        let head = timeout(
            inner.limits.header_timeout,
            read_head(&mut client, inner.limits.max_header_bytes),
        )
        .await
        .unwrap_or_else(|_| Err("no HTTP request head in time".into()));
        let checked = head.and_then(|head| check_host(&head, &host).map(|()| head));
        match checked {
            Ok(head) => tunnel::relay_raw(&inner, &at, client, &head, dialed).await,
            Err(why) => {
                inner
                    .refuse(&at, Some(dialed.address), Rule::Proxy(why))
                    .await;
                reset(client);
            }
        }
        return;
    }
    tunnel::run(&inner, &at, client, &[], dialed, &host).await;
}

/// Closes `client` with a reset (`SO_LINGER` 0), so a refused program sees `ECONNRESET`
/// rather than an orderly end of a connection that never went anywhere.
fn reset(client: TcpStream) {
    let _ = client.set_zero_linger();
}

/// The client's bytes up to and including the end of its first request head.
async fn read_head(client: &mut TcpStream, max: usize) -> Result<Vec<u8>, String> {
    let mut head = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = client
            .read(&mut chunk)
            .await
            .map_err(|e| format!("read failed: {e}"))?;
        if n == 0 {
            return Err("closed before an HTTP request head".into());
        }
        head.extend_from_slice(&chunk[..n]);
        if head.windows(4).any(|w| w == b"\r\n\r\n") {
            return Ok(head);
        }
        if head.len() > max {
            return Err("HTTP request head too large".into());
        }
    }
}

/// The first request of a port-80 connection must name `host` in exactly one `Host` header
/// (its port, if any, 80), with no userinfo, no folded header, and not both `Content-Length`
/// and `Transfer-Encoding`.
fn check_host(head: &[u8], host: &Host) -> Result<(), String> {
    let end = head
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("no HTTP request head")?;
    let text = std::str::from_utf8(&head[..end]).map_err(|_| "a request head not in UTF-8")?;
    let mut lines = text.split("\r\n");
    let request = lines.next().unwrap_or_default();
    let http1 = request.ends_with(" HTTP/1.1") || request.ends_with(" HTTP/1.0");
    if request.split(' ').count() != 3 || !http1 {
        return Err("not an HTTP/1 request (port 80 carries HTTP only)".into());
    }
    let (mut hosts, mut length, mut chunked) = (Vec::new(), false, false);
    for line in lines {
        if line.starts_with([' ', '\t']) {
            return Err("ambiguous request: a folded header".into());
        }
        let Some((name, value)) = line.split_once(':') else {
            return Err("a malformed header line".into());
        };
        match name.to_ascii_lowercase().as_str() {
            "host" => hosts.push(value.trim()),
            "content-length" => length = true,
            "transfer-encoding" => chunked = true,
            _ => {}
        }
    }
    if length && chunked {
        return Err("ambiguous request: both Content-Length and Transfer-Encoding".into());
    }
    let [value] = hosts.as_slice() else {
        return Err(format!("{} Host headers (exactly one wanted)", hosts.len()));
    };
    if value.contains('@') {
        return Err(format!(
            "ambiguous request: `Host: {value}` carries userinfo"
        ));
    }
    let name = match value.rsplit_once(':') {
        Some((name, "80")) => name,
        Some((_, port)) => return Err(format!("`Host: {value}` names port {port}, not 80")),
        None => value,
    };
    match Host::parse(name) {
        Ok(named) if &named == host => Ok(()),
        _ => Err(format!(
            "`Host: {value}` differs from the destination {host}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(lines: &str) -> Vec<u8> {
        format!("GET / HTTP/1.1\r\n{lines}\r\n").into_bytes()
    }

    #[test]
    fn port_80_needs_one_host_naming_the_destination() {
        let site = Host::Name("site.example".into());
        assert!(check_host(&head("Host: site.example\r\n"), &site).is_ok());
        assert!(check_host(&head("host: SITE.example:80\r\n"), &site).is_ok());
        for bad in [
            "Host: other.example\r\n",
            "Host: site.example\r\nHost: other.example\r\n",
            "",
            "Host: other.example:80@site.example\r\n",
            "Host: site.example:8080\r\n",
            "Host: site.example\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n",
            "Host: site.example\r\n folded\r\n",
        ] {
            assert!(check_host(&head(bad), &site).is_err(), "{bad:?}");
        }
        assert!(check_host(b"\x16\x03\x01junk\r\n\r\n", &site).is_err());
    }
}
