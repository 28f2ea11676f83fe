//! A git smart-HTTP server over TLS for the credential tests: `git http-backend` as a CGI
//! behind hyper, with its own test CA, answering 401 unless the request carries the expected
//! `Authorization` (every request's method, path and authorization are kept).

use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

use super::{Seen, Upstream};

/// Serves the bare repositories under `root` for `name`; only `authorization` gets in.
/// Returns the server and its CA's PEM.
pub async fn git_https(name: &str, root: PathBuf, authorization: String) -> (Upstream, String) {
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
                    let (log, state) = (log.clone(), state.clone());
                    async move { Ok::<_, std::convert::Infallible>(cgi(req, &state, &log).await) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tls), svc)
                    .await;
            });
        }
    });
    (Upstream { addr, seen }, ca_pem)
}

async fn cgi(
    req: Request<Incoming>,
    (root, authorization): &(PathBuf, String),
    seen: &Seen,
) -> Response<Full<Bytes>> {
    let header = |name: &str| {
        req.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned()
    };
    let auth = header("authorization");
    seen.lock()
        .unwrap()
        .push(format!("{} {} auth={auth}", req.method(), req.uri()));
    if &auth != authorization {
        let mut response = Response::new(Full::new(Bytes::from_static(b"unauthorized\n")));
        *response.status_mut() = StatusCode::UNAUTHORIZED;
        response
            .headers_mut()
            .insert("www-authenticate", "Basic realm=\"git\"".parse().unwrap());
        return response;
    }
    let (content_type, encoding) = (header("content-type"), header("content-encoding"));
    let (method, path) = (req.method().to_string(), req.uri().path().to_owned());
    let query = req.uri().query().unwrap_or("").to_owned();
    let body = req.into_body().collect().await.unwrap().to_bytes();
    let exec = std::process::Command::new("git")
        .arg("--exec-path")
        .output()
        .unwrap();
    let backend =
        PathBuf::from(String::from_utf8_lossy(&exec.stdout).trim()).join("git-http-backend");
    let mut child = tokio::process::Command::new(backend)
        .env("GIT_PROJECT_ROOT", root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("REMOTE_USER", "git")
        .env("REMOTE_ADDR", "127.0.0.1")
        .env("REQUEST_METHOD", method)
        .env("PATH_INFO", path)
        .env("QUERY_STRING", query)
        .env("CONTENT_TYPE", content_type)
        .env("CONTENT_LENGTH", body.len().to_string())
        .env("HTTP_CONTENT_ENCODING", encoding)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    tokio::io::AsyncWriteExt::write_all(&mut stdin, &body)
        .await
        .unwrap();
    drop(stdin);
    let out = child.wait_with_output().await.unwrap();
    let split = out
        .stdout
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|at| (at, 4))
        .or_else(|| {
            out.stdout
                .windows(2)
                .position(|w| w == b"\n\n")
                .map(|at| (at, 2))
        })
        .unwrap_or((out.stdout.len(), 0));
    let head = String::from_utf8_lossy(&out.stdout[..split.0]).into_owned();
    let mut response = Response::new(Full::new(Bytes::copy_from_slice(
        &out.stdout[split.0 + split.1..],
    )));
    for line in head.lines() {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("status") {
            let code = value
                .split(' ')
                .next()
                .unwrap_or("200")
                .parse()
                .unwrap_or(200);
            *response.status_mut() = StatusCode::from_u16(code).unwrap();
        } else if let (Ok(n), Ok(v)) = (
            hyper::header::HeaderName::from_bytes(name.as_bytes()),
            value.parse::<hyper::header::HeaderValue>(),
        ) {
            response.headers_mut().insert(n, v);
        }
    }
    response
}
