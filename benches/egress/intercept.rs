//! The cost of credential injection: HTTPS requests to a host bound to a credential (the
//! proxy terminates TLS with the session CA's leaf, verifies the upstream, puts the secret in
//! and relays) versus the same requests through a plain `CONNECT` tunnel (a proxy without
//! credentials), to a loopback TLS upstream; a new connection per request, and many requests
//! on one connection. Medians; ratios printed, nothing asserted.

use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::rustls;
use zeroclaw::config::{CredentialConfig, Inject, NetworkConfig, NetworkMode};
use zeroclaw::egress::EgressPolicy;
use zeroclaw::egress::credentials::Session;
use zeroclaw::egress::proxy::{Limits, Proxy};

use crate::common::{median, ms};

const NAME: &str = "api.bench.example";
const FRESH_RUNS: usize = 300;
const KEPT_RUNS: usize = 2000;

pub async fn intercepted_vs_tunnel() {
    let (up, up_ca) = tls_upstream().await;
    let mut ca_file = tempfile::NamedTempFile::new().expect("ca file");
    ca_file.write_all(up_ca.as_bytes()).expect("write ca");
    let mut config = NetworkConfig {
        mode: NetworkMode::Proxy,
        allow_domains: vec![NAME.to_owned()],
        allow_ports: vec![up.port()],
        allow_cidrs: vec!["127.0.0.0/8".to_owned()],
        hosts: [(NAME.to_owned(), "127.0.0.1".to_owned())].into(),
        ..NetworkConfig::default()
    };
    let plain = EgressPolicy::from_config(&config).expect("policy");
    config.extra_ca_files = vec![ca_file.path().display().to_string()];
    config.credentials = vec![CredentialConfig {
        name: "bench".into(),
        hosts: vec![NAME.into()],
        env: None,
        inject: Inject::Header,
        header: None,
        format: None,
        username: None,
        value_env: None,
        value_file: None,
        inline_secret: Some("bench-secret".into()),
    }];
    let bound = EgressPolicy::from_config(&config).expect("policy with a credential");
    let session = Session::start(bound.credentials(), bound.extra_cas())
        .expect("session")
        .expect("credentials");
    let tunnel = serve(Proxy::new(plain, Limits::default())).await;
    let limits = Limits::default();
    let intercepting = serve(Proxy::credentialed(
        bound,
        limits,
        None,
        None,
        Some(session.clone()),
    ))
    .await;
    let tunnel_client = client_config(&up_ca);
    let intercept_client = client_config(&session.ca_pem());
    let port = up.port();

    println!("credential interception vs plain CONNECT tunnel on loopback (HTTPS), medians");
    let (mut t, mut i) = (Vec::new(), Vec::new());
    for _ in 0..FRESH_RUNS {
        let started = Instant::now();
        let mut s = connect(tunnel, port, &tunnel_client).await;
        request(&mut s).await;
        t.push(started.elapsed());
        let started = Instant::now();
        let mut s = connect(intercepting, port, &intercept_client).await;
        request(&mut s).await;
        i.push(started.elapsed());
    }
    report("new connection each", FRESH_RUNS, &mut t, &mut i);
    let mut a = connect(tunnel, port, &tunnel_client).await;
    let mut b = connect(intercepting, port, &intercept_client).await;
    let (mut t, mut i) = (Vec::new(), Vec::new());
    for _ in 0..KEPT_RUNS {
        let started = Instant::now();
        request(&mut a).await;
        t.push(started.elapsed());
        let started = Instant::now();
        request(&mut b).await;
        i.push(started.elapsed());
    }
    report("one kept-alive connection", KEPT_RUNS, &mut t, &mut i);
}

fn report(what: &str, runs: usize, tunnel: &mut [Duration], intercepted: &mut [Duration]) {
    let (t, i) = (median(tunnel), median(intercepted));
    println!(
        "{runs} requests, {what}: tunnel {:.3} ms, intercepted {:.3} ms ({:.2}x, +{:.3} ms)",
        ms(t),
        ms(i),
        i.as_secs_f64() / t.as_secs_f64(),
        ms(i.saturating_sub(t))
    );
}

async fn serve(proxy: Proxy) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("proxy");
    let addr = listener.local_addr().expect("addr");
    std::mem::forget(proxy.serve_http(listener));
    addr
}

/// A TLS connection to [`NAME`] through the proxy at `proxy` (`CONNECT`).
async fn connect(
    proxy: SocketAddr,
    port: u16,
    config: &Arc<rustls::ClientConfig>,
) -> tokio_rustls::client::TlsStream<TcpStream> {
    let mut stream = TcpStream::connect(proxy).await.expect("proxy connect");
    let _ = stream.set_nodelay(true);
    let connect = format!("CONNECT {NAME}:{port} HTTP/1.1\r\nHost: {NAME}:{port}\r\n\r\n");
    stream.write_all(connect.as_bytes()).await.expect("CONNECT");
    let head = read_head(&mut stream).await;
    assert!(
        head.starts_with(b"HTTP/1.1 200"),
        "CONNECT answered {head:?}"
    );
    let name = rustls::pki_types::ServerName::try_from(NAME).expect("name");
    tokio_rustls::TlsConnector::from(config.clone())
        .connect(name, stream)
        .await
        .expect("TLS through the proxy")
}

/// One `GET` and its 5-byte answer.
async fn request<S: AsyncRead + AsyncWrite + Unpin>(stream: &mut S) {
    let req = format!("GET /user HTTP/1.1\r\nHost: {NAME}\r\n\r\n");
    stream.write_all(req.as_bytes()).await.expect("request");
    let head = read_head(stream).await;
    assert!(head.starts_with(b"HTTP/1.1 200"), "answered {head:?}");
    let mut body = [0u8; 5];
    stream.read_exact(&mut body).await.expect("body");
}

async fn read_head<S: AsyncRead + Unpin>(stream: &mut S) -> Vec<u8> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).await.expect("read") == 0 {
            break;
        }
        head.push(byte[0]);
    }
    head
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn client_config(ca_pem: &str) -> Arc<rustls::ClientConfig> {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls::pki_types::CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(cert.expect("PEM")).expect("root");
    }
    let mut config = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Arc::new(config)
}

/// A keep-alive TLS upstream for [`NAME`] answering every request `hello`; and its CA's PEM.
async fn tls_upstream() -> (SocketAddr, String) {
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "bench CA");
    let ca_key = rcgen::KeyPair::generate().expect("key");
    let ca = rcgen::CertifiedIssuer::self_signed(ca_params, ca_key).expect("CA");
    let key = rcgen::KeyPair::generate().expect("key");
    let leaf = rcgen::CertificateParams::new(vec![NAME.to_owned()])
        .expect("params")
        .signed_by(&key, &ca)
        .expect("leaf");
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into());
    let config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(vec![leaf.der().clone()], key)
        .expect("server config");
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("upstream");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let _ = stream.set_nodelay(true);
                let Ok(mut tls) = acceptor.accept(stream).await else {
                    return;
                };
                loop {
                    let head = read_head_or_end(&mut tls).await;
                    if head.is_empty() {
                        return;
                    }
                    let reply = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
                    if tls.write_all(reply.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (addr, ca.pem())
}

async fn read_head_or_end<S: AsyncRead + Unpin>(stream: &mut S) -> Vec<u8> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte).await {
            Ok(1) => head.push(byte[0]),
            _ => return Vec::new(),
        }
    }
    head
}
