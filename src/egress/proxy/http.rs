//! The HTTP proxy side on hyper: `CONNECT host:port` opens a [`tunnel`] after the policy and
//! the dial; an absolute-form `http://` request is forwarded on a fresh upstream connection in
//! origin form, hop-by-hop headers dropped and `Host` set to the requested host. A client
//! connection carries one request. Refused, each with its rule: userinfo in the URL or the
//! `CONNECT` target, more than one `Host` header, a `Host` that is not exactly the requested
//! host (userinfo included), and a head naming both `Content-Length` and `Transfer-Encoding`
//! ([`super::head`]). Refusals answer 403 with the rule in the body and in `x-zeroclaw-egress`.

use std::convert::Infallible;
use std::sync::Arc;

use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::http::uri::Authority;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode, Uri};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpStream;
use tokio::sync::OwnedSemaphorePermit;

use super::counted::counted;
use super::dial::{DialError, Dialed, dial};
use super::head::{Framing, Scanned, scanned};
use super::{Attempt, Inner, Via, tunnel};
use crate::egress::host::shown;
use crate::egress::{Host, Rule};

use super::peek::Body;
use super::reply::{empty, refused, text};

/// Serves one client connection (one request: no second head to read two ways).
pub(super) async fn serve_conn(
    inner: Arc<Inner>,
    stream: TcpStream,
    permit: Arc<OwnedSemaphorePermit>,
) {
    let _ = stream.set_nodelay(true);
    let limits = inner.limits.clone();
    let inner_closed = inner.closed.clone();
    let stream = scanned(stream);
    let framing = stream.observer.framing();
    let svc = service_fn(move |req| {
        let inner = inner.clone();
        let permit = permit.clone();
        let framing = framing.clone();
        async move { Ok::<_, Infallible>(handle(inner, req, &framing, permit).await) }
    });
    let conn = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .max_buf_size(limits.max_header_bytes.max(8192))
        .keep_alive(false)
        .serve_connection(TokioIo::new(stream), svc)
        .with_upgrades();
    // When the proxy is finished, a request in flight is still answered (a question dropped
    // answers 403); a connection waiting for its head is closed.
    let mut conn = std::pin::pin!(conn);
    let result = tokio::select! {
        result = conn.as_mut() => result,
        () = inner_closed.cancelled() => {
            conn.as_mut().graceful_shutdown();
            conn.await
        }
    };
    if let Err(e) = result {
        tracing::debug!(error = %e, "egress proxy connection ended");
    }
}

async fn handle(
    inner: Arc<Inner>,
    req: Request<Incoming>,
    framing: &Framing,
    permit: Arc<OwnedSemaphorePermit>,
) -> Response<Body> {
    let (via, default_port) = if req.method() == Method::CONNECT {
        (Via::Connect, None)
    } else {
        if req.uri().scheme_str() != Some("http") {
            return text(
                StatusCode::BAD_REQUEST,
                "only absolute http:// URLs are forwarded; https goes through CONNECT\n",
            );
        }
        (Via::Http, Some(80))
    };
    let Some(authority) = req.uri().authority().cloned() else {
        return text(StatusCode::BAD_REQUEST, "the request names no host:port\n");
    };
    let Some(port) = authority.port_u16().or(default_port) else {
        return text(StatusCode::BAD_REQUEST, "CONNECT needs host:port\n");
    };
    // Until the host is known, the record names what was sent (userinfo included).
    let sent = authority.as_str();
    let sent = match authority.port() {
        Some(p) => sent.strip_suffix(&format!(":{p}")).unwrap_or(sent),
        None => sent,
    };
    let at = Attempt::new(via, shown(sent), port);
    let host = match checked_target(
        req.method(),
        req.headers(),
        &authority,
        port,
        framing.both(),
    ) {
        Ok(host) => host,
        Err(rule) => return refused(&inner.refuse(&at, None, rule).await),
    };
    let at = Attempt {
        name: host.to_string(),
        ..at
    };
    if via == Via::Connect {
        return match dial(&inner, &at, &host).await {
            Ok(dialed) => connect(inner, req, permit, at, host, dialed),
            Err(e) => dial_error(e),
        };
    }
    // A placeholder never goes out in clear text: refused before anything is dialed.
    let req = match &inner.credentials {
        Some(session) => match super::intercept::check_plain(&inner, &at, session, req).await {
            Ok(req) => req,
            Err(refusal) => return refusal,
        },
        None => req.map(|b| b.boxed()),
    };
    match dial(&inner, &at, &host).await {
        Ok(dialed) => forward(inner, req, permit, at, &host, dialed).await,
        Err(e) => dial_error(e),
    }
}

/// The requested host, canonical, once the request is unambiguous: no userinfo, no second or
/// differing `Host`, not both framings (`both_framings`: the head named both, see [`Framing`]).
pub(super) fn checked_target(
    method: &Method,
    headers: &HeaderMap,
    authority: &Authority,
    port: u16,
    both_framings: bool,
) -> Result<Host, Rule> {
    let ambiguous = |why: &str| Rule::Ambiguous(why.to_owned());
    if authority.as_str().contains('@') {
        return Err(ambiguous(
            "userinfo (`user@`) in the requested URL or target",
        ));
    }
    let host = Host::parse(authority.host())?;
    if both_framings {
        return Err(ambiguous(
            "both Content-Length and Transfer-Encoding (the body's length is ambiguous)",
        ));
    }
    let mut named = headers.get_all(header::HOST).iter();
    if let Some(value) = named.next() {
        if named.next().is_some() {
            return Err(ambiguous("more than one Host header"));
        }
        let shown = shown(&String::from_utf8_lossy(value.as_bytes()));
        if value.as_bytes().contains(&b'@') {
            return Err(Rule::Ambiguous(format!(
                "Host header `{shown}` carries userinfo"
            )));
        }
        // A `CONNECT`'s Host may leave the port out (it goes nowhere); a request's means 80.
        let names_target = match host_header(value) {
            Ok((named, Some(named_port))) => named == host && named_port == port,
            Ok((named, None)) => named == host && (method == Method::CONNECT || port == 80),
            Err(_) => false,
        };
        if !names_target {
            return Err(Rule::Ambiguous(format!(
                "Host header `{shown}` differs from the requested host"
            )));
        }
    }
    Ok(host)
}

/// The host and port (if given) a `Host` header names.
fn host_header(value: &HeaderValue) -> Result<(Host, Option<u16>), Rule> {
    let text = value
        .to_str()
        .map_err(|_| Rule::MalformedHost("the Host header is not ASCII".into()))?;
    let (host, port) = match text.rfind(':') {
        Some(at) if !text[at..].contains(']') => (&text[..at], Some(&text[at + 1..])),
        _ => (text, None),
    };
    let port = match port {
        None => None,
        Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => Some(
            p.parse()
                .map_err(|_| Rule::MalformedHost(format!("port `{p}`")))?,
        ),
        Some(p) => return Err(Rule::MalformedHost(format!("port `{}`", shown(p)))),
    };
    Ok((Host::parse(host)?, port))
}

fn connect(
    inner: Arc<Inner>,
    req: Request<Incoming>,
    permit: Arc<OwnedSemaphorePermit>,
    at: Attempt,
    host: Host,
    dialed: Dialed,
) -> Response<Body> {
    tokio::spawn(async move {
        let _permit = permit;
        match hyper::upgrade::on(req).await {
            // The connection hyper served is a `TokioIo<Scanned<TcpStream>>` (see `serve_conn`).
            Ok(upgraded) => match upgraded.downcast::<TokioIo<Scanned<TcpStream>>>() {
                Ok(parts) => {
                    let client = parts.io.into_inner().into_inner();
                    tunnel::run(&inner, &at, client, &parts.read_buf, dialed, &host).await
                }
                Err(_) => tracing::warn!("CONNECT upgrade is not the client's TCP stream"),
            },
            Err(e) => tracing::debug!(error = %e, "CONNECT upgrade failed"),
        }
    });
    Response::new(empty())
}

async fn forward(
    inner: Arc<Inner>,
    req: Request<Body>,
    permit: Arc<OwnedSemaphorePermit>,
    at: Attempt,
    host: &Host,
    dialed: Dialed,
) -> Response<Body> {
    let port = at.port;
    let Dialed {
        stream,
        address,
        rule,
    } = dialed;
    let (upstream, bytes) = counted(stream);
    let (mut sender, conn) =
        match hyper::client::conn::http1::handshake(TokioIo::new(upstream)).await {
            Ok(pair) => pair,
            Err(e) => return text(StatusCode::BAD_GATEWAY, &format!("upstream: {e}\n")),
        };
    let closed = inner.closed.clone();
    let ended = inner.clone();
    tokio::spawn(async move {
        let _permit = permit;
        tokio::select! {
            result = conn => if let Err(e) = result {
                tracing::debug!(error = %e, "egress upstream connection ended");
            },
            () = closed.cancelled() => {}
        }
        ended.ended(&at, address, rule, bytes.totals()).await;
    });
    let (mut parts, body) = req.into_parts();
    let origin = parts.uri.path_and_query().map_or("/", |pq| pq.as_str());
    parts.uri = origin
        .parse::<Uri>()
        .unwrap_or_else(|_| Uri::from_static("/"));
    parts.version = hyper::Version::HTTP_11;
    strip_hop_by_hop(&mut parts.headers);
    if let Ok(value) = HeaderValue::from_str(&uri_authority(host, port)) {
        parts.headers.insert(header::HOST, value);
    }
    match sender.send_request(Request::from_parts(parts, body)).await {
        Ok(response) => {
            let (mut parts, body) = response.into_parts();
            strip_hop_by_hop(&mut parts.headers);
            Response::from_parts(parts, body.boxed())
        }
        Err(e) => text(StatusCode::BAD_GATEWAY, &format!("upstream: {e}\n")),
    }
}

fn uri_authority(host: &Host, port: u16) -> String {
    if port == 80 {
        host.to_string()
    } else {
        format!("{host}:{port}")
    }
}

/// Drops the headers of this hop: `Connection` and those it names, proxy credentials,
/// `Keep-Alive`, `TE`, `Trailer`, `Transfer-Encoding` (hyper frames the body) and `Upgrade`.
fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let named: Vec<String> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(',').map(|s| s.trim().to_ascii_lowercase()))
        .collect();
    for name in named {
        headers.remove(name.as_str());
    }
    for name in [
        "connection",
        "proxy-connection",
        "keep-alive",
        "proxy-authorization",
        "proxy-authenticate",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    ] {
        headers.remove(name);
    }
}

fn dial_error(e: DialError) -> Response<Body> {
    match e {
        DialError::Refused(refusal) => refused(&refusal),
        DialError::Failed(why) => text(StatusCode::BAD_GATEWAY, &format!("{why}\n")),
    }
}
