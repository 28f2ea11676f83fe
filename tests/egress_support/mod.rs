//! Loopback upstreams and a started proxy for the egress tests: a plain HTTP upstream, an
//! HTTPS upstream with a test CA made at run time, and policies naming test hosts that the
//! proxy's `hosts` map resolves to loopback.

#![allow(dead_code)]

pub mod git_http;
pub mod private_index;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_rustls::rustls;
use zeroclaw::config::{NetworkConfig, NetworkMode};
use zeroclaw::egress::EgressPolicy;
use zeroclaw::egress::proxy::{Limits, Proxy};

/// What an upstream saw: one `METHOD target host=HOST` line per request.
pub type Seen = Arc<Mutex<Vec<String>>>;

pub struct Upstream {
    pub addr: SocketAddr,
    pub seen: Seen,
}

impl Upstream {
    pub fn port(&self) -> u16 {
        self.addr.port()
    }
    pub fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

/// A plain HTTP upstream: `/redirect?to=URL` answers 302 to URL, anything else 200.
pub async fn http_upstream() -> Upstream {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Seen::default();
    let log = seen.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(answer(stream, log.clone()));
        }
    });
    Upstream { addr, seen }
}

/// An HTTPS upstream whose certificate names `name`; returns it and the CA's PEM.
pub async fn https_upstream(name: &str) -> (Upstream, String) {
    let (acceptor, ca_pem) = tls_acceptor(name);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Seen::default();
    let log = seen.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            let log = log.clone();
            tokio::spawn(async move {
                if let Ok(tls) = acceptor.accept(stream).await {
                    answer(tls, log).await;
                }
            });
        }
    });
    (Upstream { addr, seen }, ca_pem)
}

/// An HTTPS API upstream for `name` (its own test CA; returns it and the CA's PEM) that keeps
/// every request head it received, raw, and answers `hello from api` (never echoing a header).
pub async fn https_echo(name: &str) -> (Upstream, String) {
    let (acceptor, ca_pem) = tls_acceptor(name);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Seen::default();
    let log = seen.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            let log = log.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(stream).await else {
                    return;
                };
                let Some(head) = read_head(&mut tls).await else {
                    return;
                };
                log.lock()
                    .unwrap()
                    .push(String::from_utf8_lossy(&head).into_owned());
                let reply = "HTTP/1.1 200 OK\r\nContent-Length: 15\r\nConnection: close\r\n\r\nhello from api\n";
                let _ = tls.write_all(reply.as_bytes()).await;
                let _ = tls.shutdown().await;
            });
        }
    });
    (Upstream { addr, seen }, ca_pem)
}

/// A TLS acceptor presenting a leaf for `name` signed by a new test CA, and the CA's PEM.
fn tls_acceptor(name: &str) -> (tokio_rustls::TlsAcceptor, String) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    // Names of their own: a leaf whose subject is its issuer's looks self-signed to OpenSSL.
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, format!("test CA for {name}"));
    let ca = rcgen::CertifiedIssuer::self_signed(ca_params, ca_key).unwrap();
    let leaf_key = rcgen::KeyPair::generate().unwrap();
    let mut leaf_params = rcgen::CertificateParams::new(vec![name.to_owned()]).unwrap();
    leaf_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, name);
    let leaf = leaf_params.signed_by(&leaf_key, &ca).unwrap();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(leaf_key.serialize_der().into());
    let config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![leaf.der().clone()], key)
        .unwrap();
    (tokio_rustls::TlsAcceptor::from(Arc::new(config)), ca.pem())
}

pub fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A TLS client config trusting only `ca_pem`.
pub fn client_config(ca_pem: &str) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    let der = pem_der(ca_pem);
    roots
        .add(rustls::pki_types::CertificateDer::from(der))
        .unwrap();
    let config = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    Arc::new(config)
}

fn pem_der(pem: &str) -> Vec<u8> {
    use base64::Engine;
    let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    base64::engine::general_purpose::STANDARD
        .decode(body)
        .unwrap()
}

async fn answer<S: AsyncRead + AsyncWrite + Unpin>(mut stream: S, seen: Seen) {
    let Some(head) = read_head(&mut stream).await else {
        return;
    };
    let text = String::from_utf8_lossy(&head).into_owned();
    let mut lines = text.split("\r\n");
    let request_line = lines.next().unwrap_or_default().to_owned();
    let host = lines
        .find_map(|l| {
            l.strip_prefix("Host: ")
                .or_else(|| l.strip_prefix("host: "))
        })
        .unwrap_or("-")
        .to_owned();
    let mut parts = request_line.split(' ');
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    seen.lock()
        .unwrap()
        .push(format!("{method} {target} host={host}"));
    let response = match target.split_once("/redirect?to=") {
        Some((_, to)) => format!(
            "HTTP/1.1 302 Found\r\nLocation: {to}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        ),
        None => "HTTP/1.1 200 OK\r\nContent-Length: 20\r\nConnection: close\r\n\r\nhello from upstream\n"
            .to_owned(),
    };
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// The request head (through the blank line), or `None` if the peer closed first.
pub async fn read_head<S: AsyncRead + Unpin>(stream: &mut S) -> Option<Vec<u8>> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).await.ok()? == 0 || head.len() > 1 << 20 {
            return None;
        }
        head.push(byte[0]);
    }
    Some(head)
}

/// A proxy-mode policy: `allow` names, `deny` names, `cidrs`, `ports`, and `hosts` entries.
pub fn policy(
    allow: &[&str],
    deny: &[&str],
    cidrs: &[&str],
    ports: &[u16],
    hosts: &[(&str, &str)],
) -> EgressPolicy {
    let strings = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect();
    let config = NetworkConfig {
        mode: NetworkMode::Proxy,
        allow_domains: strings(allow),
        deny_domains: strings(deny),
        allow_ports: ports.to_vec(),
        allow_cidrs: strings(cidrs),
        hosts: hosts
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        ..NetworkConfig::default()
    };
    EgressPolicy::from_config(&config).unwrap()
}

pub struct Started {
    pub proxy: Proxy,
    pub http: SocketAddr,
    pub socks: SocketAddr,
}

/// The proxy serving an HTTP and a SOCKS5 listener on loopback.
pub async fn start(policy: EgressPolicy, limits: Limits) -> Started {
    let proxy = Proxy::new(policy, limits);
    let http = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let socks = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let (http_addr, socks_addr) = (http.local_addr().unwrap(), socks.local_addr().unwrap());
    proxy.serve_http(http);
    proxy.serve_socks(socks);
    Started {
        proxy,
        http: http_addr,
        socks: socks_addr,
    }
}

/// A reqwest client using the proxy for every URL, trusting `ca_pem` when given.
pub fn client(proxy: SocketAddr, ca_pem: Option<&str>) -> reqwest::Client {
    let mut builder = reqwest::Client::builder()
        .proxy(reqwest::Proxy::all(format!("http://{proxy}")).unwrap())
        .timeout(std::time::Duration::from_secs(10));
    if let Some(pem) = ca_pem {
        builder =
            builder.add_root_certificate(reqwest::Certificate::from_pem(pem.as_bytes()).unwrap());
    }
    builder.build().unwrap()
}

/// An upstream that keeps its connections alive and records every request it parses on them
/// (`METHOD target host=HOST body=N`, bodies framed by `Content-Length` or chunked) and every
/// byte it received: a smuggled request would show as a second line, or in the bytes.
pub struct Recording {
    pub addr: SocketAddr,
    pub seen: Seen,
    pub raw: Arc<Mutex<Vec<u8>>>,
}

impl Recording {
    pub fn port(&self) -> u16 {
        self.addr.port()
    }
    pub fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
    pub fn raw(&self) -> String {
        String::from_utf8_lossy(&self.raw.lock().unwrap()).into_owned()
    }
}

pub async fn recording_upstream() -> Recording {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (seen, raw) = (Seen::default(), Arc::<Mutex<Vec<u8>>>::default());
    let (log, bytes) = (seen.clone(), raw.clone());
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(record_requests(stream, log.clone(), bytes.clone()));
        }
    });
    Recording { addr, seen, raw }
}

async fn record_requests(stream: tokio::net::TcpStream, seen: Seen, raw: Arc<Mutex<Vec<u8>>>) {
    let mut stream = tokio::io::BufReader::new(stream);
    loop {
        let Some(head) = read_head(&mut stream).await else {
            return;
        };
        raw.lock().unwrap().extend_from_slice(&head);
        let text = String::from_utf8_lossy(&head).to_ascii_lowercase();
        let header = |name: &str| {
            text.split("\r\n")
                .find_map(|l| l.strip_prefix(&format!("{name}: ")).map(str::to_owned))
        };
        let mut body = Vec::new();
        if header("transfer-encoding").is_some_and(|te| te.contains("chunked")) {
            loop {
                let mut line = String::new();
                if tokio::io::AsyncBufReadExt::read_line(&mut stream, &mut line)
                    .await
                    .unwrap_or(0)
                    == 0
                {
                    return;
                }
                let size = usize::from_str_radix(line.trim(), 16).unwrap_or(0);
                let mut chunk = vec![0u8; size + 2];
                if stream.read_exact(&mut chunk).await.is_err() {
                    return;
                }
                body.extend_from_slice(&chunk[..size]);
                if size == 0 {
                    break;
                }
            }
        } else if let Some(len) = header("content-length").and_then(|l| l.trim().parse().ok()) {
            body = vec![0u8; len];
            if stream.read_exact(&mut body).await.is_err() {
                return;
            }
        }
        raw.lock().unwrap().extend_from_slice(&body);
        let first = text.split("\r\n").next().unwrap_or("").to_owned();
        let mut parts = first.split(' ');
        let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        let host = header("host").unwrap_or_else(|| "-".into());
        seen.lock().unwrap().push(format!(
            "{} {target} host={host} body={}",
            method.to_ascii_uppercase(),
            body.len()
        ));
        let reply = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n";
        if stream.get_mut().write_all(reply.as_bytes()).await.is_err() {
            return;
        }
    }
}

/// Sends `request` raw to `proxy` and reads everything until the proxy closes.
pub async fn exchange(proxy: SocketAddr, request: &[u8]) -> String {
    let mut s = tokio::net::TcpStream::connect(proxy).await.unwrap();
    s.write_all(request).await.unwrap();
    let mut out = Vec::new();
    // Bounded so a proxy that keeps the connection open fails the test instead of hanging it.
    let _ = tokio::time::timeout(std::time::Duration::from_secs(10), s.read_to_end(&mut out)).await;
    String::from_utf8_lossy(&out).into_owned()
}
