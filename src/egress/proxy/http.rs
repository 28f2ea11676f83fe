//! The HTTP proxy side on hyper: `CONNECT host:port` opens a [`tunnel`] after the policy and
//! the dial; an absolute-form `http://` request is forwarded (its `Host` header must name the
//! requested host) on a fresh upstream connection in origin form, hop-by-hop headers dropped.
//! Refusals answer 403 with the rule in the body and in `x-zeroclaw-egress`.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode, Uri};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpStream;
use tokio::sync::OwnedSemaphorePermit;

use super::dial::{DialError, dial};
use super::{Inner, Refusal, tunnel};
use crate::egress::{Host, Rule};

type Body = BoxBody<Bytes, hyper::Error>;

/// Serves one client connection (keep-alive: many requests).
pub(super) async fn serve_conn(
    inner: Arc<Inner>,
    stream: TcpStream,
    permit: Arc<OwnedSemaphorePermit>,
) {
    let _ = stream.set_nodelay(true);
    let limits = inner.limits.clone();
    let svc = service_fn(move |req| {
        let inner = inner.clone();
        let permit = permit.clone();
        async move { Ok::<_, Infallible>(handle(inner, req, permit).await) }
    });
    let conn = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .max_buf_size(limits.max_header_bytes.max(8192))
        .serve_connection(TokioIo::new(stream), svc)
        .with_upgrades();
    if let Err(e) = conn.await {
        tracing::debug!(error = %e, "egress proxy connection ended");
    }
}

async fn handle(
    inner: Arc<Inner>,
    req: Request<Incoming>,
    permit: Arc<OwnedSemaphorePermit>,
) -> Response<Body> {
    if req.method() == Method::CONNECT {
        connect(inner, req, permit).await
    } else {
        forward(inner, req).await
    }
}

async fn connect(
    inner: Arc<Inner>,
    req: Request<Incoming>,
    permit: Arc<OwnedSemaphorePermit>,
) -> Response<Body> {
    let Some((host, port)) = req
        .uri()
        .authority()
        .and_then(|a| Some((Host::parse(a.host())?, a.port_u16()?)))
    else {
        return text(StatusCode::BAD_REQUEST, "CONNECT needs host:port\n");
    };
    let upstream = match dial(&inner, &host, port).await {
        Ok(upstream) => upstream,
        Err(e) => return dial_error(e),
    };
    tokio::spawn(async move {
        let _permit = permit;
        match hyper::upgrade::on(req).await {
            // The connection hyper served is a `TokioIo<TcpStream>` (see `serve_conn`).
            Ok(upgraded) => match upgraded.downcast::<TokioIo<TcpStream>>() {
                Ok(parts) => {
                    let client = parts.io.into_inner();
                    tunnel::run(&inner, client, &parts.read_buf, upstream, &host, port).await
                }
                Err(_) => tracing::warn!("CONNECT upgrade is not the client's TCP stream"),
            },
            Err(e) => tracing::debug!(error = %e, "CONNECT upgrade failed"),
        }
    });
    Response::new(empty())
}

async fn forward(inner: Arc<Inner>, req: Request<Incoming>) -> Response<Body> {
    let uri = req.uri();
    if uri.scheme_str() != Some("http") {
        return text(
            StatusCode::BAD_REQUEST,
            "only absolute http:// URLs are forwarded; https goes through CONNECT\n",
        );
    }
    let Some((host, port)) = uri
        .authority()
        .and_then(|a| Some((Host::parse(a.host())?, a.port_u16().unwrap_or(80))))
    else {
        return text(StatusCode::BAD_REQUEST, "the URL names no valid host\n");
    };
    if let Some(value) = req.headers().get(header::HOST)
        && !host_header_names(value, &host, port)
    {
        let shown = String::from_utf8_lossy(value.as_bytes()).into_owned();
        let why = format!("Host header `{shown}` differs from the requested host");
        return refused(&inner.refuse(&host, port, Rule::Proxy(why)));
    }
    let upstream = match dial(&inner, &host, port).await {
        Ok(upstream) => upstream,
        Err(e) => return dial_error(e),
    };
    let (mut sender, conn) =
        match hyper::client::conn::http1::handshake(TokioIo::new(upstream)).await {
            Ok(pair) => pair,
            Err(e) => return text(StatusCode::BAD_GATEWAY, &format!("upstream: {e}\n")),
        };
    tokio::spawn(async move {
        if let Err(e) = conn.await {
            tracing::debug!(error = %e, "egress upstream connection ended");
        }
    });
    let (mut parts, body) = req.into_parts();
    let origin = parts.uri.path_and_query().map_or("/", |pq| pq.as_str());
    parts.uri = origin
        .parse::<Uri>()
        .unwrap_or_else(|_| Uri::from_static("/"));
    parts.version = hyper::Version::HTTP_11;
    strip_hop_by_hop(&mut parts.headers);
    if !parts.headers.contains_key(header::HOST) {
        let authority = uri_authority(&host, port);
        if let Ok(value) = HeaderValue::from_str(&authority) {
            parts.headers.insert(header::HOST, value);
        }
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

/// Whether a `Host` header names `host:port` (the port may be left out for 80).
fn host_header_names(value: &HeaderValue, host: &Host, port: u16) -> bool {
    let Ok(text) = value.to_str() else {
        return false;
    };
    let Ok(authority) = text.parse::<hyper::http::uri::Authority>() else {
        return false;
    };
    Host::parse(authority.host()).as_ref() == Some(host)
        && authority.port_u16().unwrap_or(80) == port
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

fn refused(refusal: &Refusal) -> Response<Body> {
    let mut response = text(StatusCode::FORBIDDEN, &format!("zeroclaw {refusal}\n"));
    if let Ok(value) = HeaderValue::from_str(&refusal.rule.to_string()) {
        response.headers_mut().insert("x-zeroclaw-egress", value);
    }
    response
}

fn text(status: StatusCode, body: &str) -> Response<Body> {
    let mut response = Response::new(full(body.to_owned()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

fn full(body: String) -> Body {
    Full::new(Bytes::from(body))
        .map_err(|never| match never {})
        .boxed()
}

fn empty() -> Body {
    full(String::new())
}
