//! Credential injection on the wire. A tunnel to a host bound to a credential (its SNI checked
//! by [`super::tunnel`]) is not relayed blindly: the proxy finishes the child's TLS handshake
//! with a leaf of the session's CA, opens its own TLS connection to the real upstream
//! (verified with the system roots and `extra_ca_files`), and relays HTTP/1.1 requests one by
//! one, with the secrets of the host's credentials put in ([`scan::inject`]) and a request
//! carrying another credential's placeholder refused ([`scan::foreign`]). Plain `http://`
//! requests carrying any placeholder are refused by [`check_plain`] (a secret never goes out
//! in clear text). Each use and each refusal is reported to the proxy's observer.

use std::convert::Infallible;
use std::sync::Arc;

use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
use tokio::sync::Mutex;
use tokio::time::timeout;
use tokio_rustls::{TlsAcceptor, TlsConnector};

use super::counted::{Counted, counted};
use super::dial::Dialed;
use super::peek::{Body, Replayed, body_prefix};
use super::reply::{refused, text};
use super::{Attempt, CredentialUse, Inner};
use crate::egress::Rule;
use crate::egress::credentials::Session;
use crate::egress::credentials::scan::{BODY_PREFIX, foreign, inject};

/// Serves the intercepted tunnel of `at` (to `name`, bound to a credential of `session`):
/// `first` is what the client sent so far (its ClientHello), `dialed` the upstream.
pub(super) async fn run(
    inner: &Arc<Inner>,
    at: &Attempt,
    client: TcpStream,
    first: Vec<u8>,
    dialed: Dialed,
    name: &str,
    session: &Arc<Session>,
) {
    let Dialed {
        stream: upstream,
        address,
        rule,
    } = dialed;
    let (upstream, bytes) = counted(upstream);
    let served = serve(inner, at, client, first, upstream, name, session).await;
    if let Err(why) = served {
        inner.refuse(at, Some(address), Rule::Proxy(why)).await;
    }
    inner.ended(at, address, rule, bytes.totals()).await;
}

async fn serve(
    inner: &Arc<Inner>,
    at: &Attempt,
    client: TcpStream,
    first: Vec<u8>,
    upstream: Counted<TcpStream>,
    name: &str,
    session: &Arc<Session>,
) -> Result<(), String> {
    let config = session.server_config(name)?;
    let accept = TlsAcceptor::from(config).accept(Replayed::new(first, client));
    let tls = match timeout(inner.limits.header_timeout, accept).await {
        Ok(Ok(tls)) => tls,
        Ok(Err(e)) => {
            return Err(format!(
                "the client's TLS with the session CA's certificate for `{name}` failed \
                 (does it trust the session's CA bundle?): {e}"
            ));
        }
        Err(_) => return Err("no TLS handshake in time".into()),
    };
    let server_name = ServerName::try_from(name.to_owned()).map_err(|e| e.to_string())?;
    let connect = TlsConnector::from(session.upstream()).connect(server_name, upstream);
    let sender = match timeout(inner.limits.connect_timeout, connect).await {
        Ok(Ok(up)) => match hyper::client::conn::http1::handshake(TokioIo::new(up)).await {
            Ok((sender, conn)) => {
                tokio::spawn(async move {
                    if let Err(e) = conn.await {
                        tracing::debug!(error = %e, "intercepted upstream connection ended");
                    }
                });
                Ok(sender)
            }
            Err(e) => Err(format!("upstream `{name}`: {e}")),
        },
        Ok(Err(e)) => Err(format!("upstream `{name}` failed TLS verification: {e}")),
        Err(_) => Err(format!("upstream `{name}`: no TLS handshake in time")),
    };
    let why = sender.as_ref().err().cloned();
    let relay = Arc::new(Relay {
        inner: inner.clone(),
        at: at.clone(),
        name: name.to_owned(),
        session: session.clone(),
        sender: sender.ok().map(Mutex::new),
    });
    let svc = service_fn(move |req| {
        let relay = relay.clone();
        async move { Ok::<_, Infallible>(relay.request(req).await) }
    });
    let conn = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(inner.limits.idle_timeout)
        .max_buf_size(inner.limits.max_header_bytes.max(8192))
        .serve_connection(TokioIo::new(tls), svc);
    let mut conn = std::pin::pin!(conn);
    let result = tokio::select! {
        result = conn.as_mut() => result,
        () = inner.closed.cancelled() => {
            conn.as_mut().graceful_shutdown();
            conn.await
        }
    };
    if let Err(e) = result {
        tracing::debug!(error = %e, "intercepted connection ended");
    }
    why.map_or(Ok(()), Err)
}

/// The relay of one intercepted connection's requests.
struct Relay {
    inner: Arc<Inner>,
    at: Attempt,
    name: String,
    session: Arc<Session>,
    /// `None` when the upstream could not be had (each request is answered 502).
    sender: Option<Mutex<SendRequest<Body>>>,
}

impl Relay {
    async fn request(&self, req: Request<Incoming>) -> Response<Body> {
        let Some(sender) = &self.sender else {
            return text(
                StatusCode::BAD_GATEWAY,
                &format!("zeroclaw: no trusted upstream for {}\n", self.name),
            );
        };
        let (mut parts, body) = req.into_parts();
        let (prefix, body) = match body_prefix(body, BODY_PREFIX).await {
            Ok(read) => read,
            Err(e) => return text(StatusCode::BAD_REQUEST, &format!("request body: {e}\n")),
        };
        let call = CallOf::new(&parts);
        let target = parts.uri.to_string();
        let binds = |b: &crate::egress::credentials::session::Bound| b.credential.binds(&self.name);
        if let Some(b) = foreign(&self.session, &binds, &target, &parts.headers, &prefix) {
            let credential = b.credential.name.clone();
            self.report(&credential, &call, false).await;
            let rule = Rule::Placeholder(credential);
            return refused(&self.inner.refuse(&self.at, None, rule).await);
        }
        for credential in inject(&mut parts.headers, &self.session.bound_to(&self.name)) {
            self.report(&credential, &call, true).await;
        }
        parts.headers.remove("proxy-authorization");
        parts.headers.remove("proxy-connection");
        let mut sender = sender.lock().await;
        if sender.ready().await.is_err() {
            return text(StatusCode::BAD_GATEWAY, "zeroclaw: the upstream closed\n");
        }
        match sender.send_request(Request::from_parts(parts, body)).await {
            Ok(response) => {
                use http_body_util::BodyExt;
                response.map(|b| b.boxed())
            }
            Err(e) => text(StatusCode::BAD_GATEWAY, &format!("upstream: {e}\n")),
        }
    }

    async fn report(&self, credential: &str, call: &CallOf, allowed: bool) {
        let used = CredentialUse {
            credential: credential.to_owned(),
            name: self.name.clone(),
            port: self.at.port,
            method: call.method.clone(),
            path: call.path.clone(),
            allowed,
        };
        self.inner.credential(used).await;
    }
}

/// The method and path (no query: it may carry anything) of a request, for the record.
struct CallOf {
    method: String,
    path: String,
}

impl CallOf {
    fn new(parts: &hyper::http::request::Parts) -> CallOf {
        CallOf {
            method: parts.method.to_string(),
            path: parts.uri.path().to_owned(),
        }
    }
}

/// A plain `http://` request (`req`, to `at`) with any placeholder of `session` is refused
/// (answered here); else it comes back with its body ready to forward.
pub(super) async fn check_plain(
    inner: &Inner,
    at: &Attempt,
    session: &Session,
    req: Request<Incoming>,
) -> Result<Request<Body>, Response<Body>> {
    let (parts, body) = req.into_parts();
    let (prefix, body) = match body_prefix(body, BODY_PREFIX).await {
        Ok(read) => read,
        Err(e) => {
            return Err(text(
                StatusCode::BAD_REQUEST,
                &format!("request body: {e}\n"),
            ));
        }
    };
    let target = parts.uri.to_string();
    if let Some(b) = foreign(session, &|_| false, &target, &parts.headers, &prefix) {
        let call = CallOf::new(&parts);
        let credential = b.credential.name.clone();
        let used = CredentialUse {
            credential: credential.clone(),
            name: at.name.clone(),
            port: at.port,
            method: call.method,
            path: call.path,
            allowed: false,
        };
        inner.credential(used).await;
        return Err(refused(
            &inner.refuse(at, None, Rule::Placeholder(credential)).await,
        ));
    }
    Ok(Request::from_parts(parts, body))
}
