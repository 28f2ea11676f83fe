//! A private package index over TLS for the credential tests: the files under a directory
//! (pip's "simple" layout), its own test CA, 401 unless the request carries the expected
//! `Authorization` (every request's path and authorization are kept).

use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

use super::{Seen, Upstream};

/// Serves the files under `root` for `name`; only `authorization` gets in. Returns the server
/// and its CA's PEM.
pub async fn private_index(name: &str, root: PathBuf, authorization: String) -> (Upstream, String) {
    let (acceptor, ca_pem) = super::tls_acceptor(name);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Seen::default();
    let log = seen.clone();
    let state = Arc::new((root, authorization));
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (acceptor, log, state) = (acceptor.clone(), log.clone(), state.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(stream).await else {
                    return;
                };
                let svc = hyper::service::service_fn(move |req| {
                    let answer = file(&req, &state, &log);
                    async move { Ok::<_, std::convert::Infallible>(answer) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tls), svc)
                    .await;
            });
        }
    });
    (Upstream { addr, seen }, ca_pem)
}

fn file(
    req: &Request<Incoming>,
    (root, authorization): &(PathBuf, String),
    seen: &Seen,
) -> Response<Full<Bytes>> {
    let auth = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let path = req.uri().path().to_owned();
    seen.lock().unwrap().push(format!("{path} auth={auth}"));
    let status = |code: StatusCode| {
        let mut response = Response::new(Full::new(Bytes::new()));
        *response.status_mut() = code;
        response
    };
    if &auth != authorization {
        let mut response = status(StatusCode::UNAUTHORIZED);
        response
            .headers_mut()
            .insert("www-authenticate", "Basic realm=\"index\"".parse().unwrap());
        return response;
    }
    let mut on_disk = root.join(path.trim_start_matches('/'));
    if path.ends_with('/') {
        on_disk = on_disk.join("index.html");
    }
    if path.contains("..") {
        return status(StatusCode::BAD_REQUEST);
    }
    match std::fs::read(&on_disk) {
        Ok(bytes) => {
            let mut response = Response::new(Full::new(Bytes::from(bytes)));
            let html = on_disk.extension().is_some_and(|e| e == "html");
            let kind = if html {
                "text/html"
            } else {
                "application/octet-stream"
            };
            response
                .headers_mut()
                .insert("content-type", kind.parse().unwrap());
            response
        }
        Err(_) => status(StatusCode::NOT_FOUND),
    }
}
