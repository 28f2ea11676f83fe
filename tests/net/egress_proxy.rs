//! zeroclaw's egress proxy driven over loopback: what reaches the upstream (judged at the
//! upstream) and what the client is told, for HTTP forwarding, CONNECT with TLS, and SOCKS5.

use crate::egress_support;

use egress_support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::rustls::pki_types::ServerName;
use zeroclaw::egress::proxy::Limits;

const NAME: &str = "registry.example";

#[tokio::test]
async fn an_allowed_name_is_forwarded_in_origin_form() {
    let up = http_upstream().await;
    let p = policy(
        &[NAME],
        &[],
        &["127.0.0.1/32"],
        &[up.port()],
        &[(NAME, "127.0.0.1")],
    );
    let proxy = start(p, Limits::default()).await;
    let url = format!("http://{NAME}:{}/simple/pkg/", up.port());
    let resp = client(proxy.http, None).get(&url).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.text().await.unwrap(), "hello from upstream\n");
    assert_eq!(
        up.seen(),
        [format!("GET /simple/pkg/ host={NAME}:{}", up.port())]
    );
    assert!(proxy.proxy.refusals().is_empty());
}

#[tokio::test]
async fn a_name_outside_the_allowlist_or_on_the_denylist_is_refused_with_its_rule() {
    let up = http_upstream().await;
    let hosts = [
        ("other.example", "127.0.0.1"),
        ("upload.registry.example", "127.0.0.1"),
    ];
    let p = policy(
        &["*.registry.example"],
        &["upload.registry.example"],
        &["127.0.0.1/32"],
        &[up.port()],
        &hosts,
    );
    let proxy = start(p, Limits::default()).await;
    let c = client(proxy.http, None);
    let resp = c
        .get(format!("http://other.example:{}/", up.port()))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403);
    assert!(resp.text().await.unwrap().contains("not in allow_domains"));
    let resp = c
        .get(format!("http://upload.registry.example:{}/", up.port()))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403);
    assert_eq!(
        resp.headers()["x-zeroclaw-egress"],
        "matches deny_domains entry `upload.registry.example`"
    );
    assert!(up.seen().is_empty(), "upstream saw {:?}", up.seen());
    let told: Vec<String> = proxy
        .proxy
        .refusals()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        told,
        [
            format!(
                "network: refused other.example:{} — not in allow_domains",
                up.port()
            ),
            format!(
                "network: refused upload.registry.example:{} — matches deny_domains entry `upload.registry.example`",
                up.port()
            ),
        ]
    );
}

#[tokio::test]
async fn a_name_resolving_to_loopback_or_private_is_refused_unless_a_cidr_allows_it() {
    let up = http_upstream().await;
    let hosts = [(NAME, "127.0.0.1"), ("files.registry.example", "10.0.0.1")];
    let p = policy(
        &[NAME, "files.registry.example"],
        &[],
        &[],
        &[up.port()],
        &hosts,
    );
    let proxy = start(p, Limits::default()).await;
    let c = client(proxy.http, None);
    let resp = c
        .get(format!("http://{NAME}:{}/", up.port()))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403);
    let body = resp.text().await.unwrap();
    assert!(
        body.contains("resolves to 127.0.0.1 (loopback), refused unless allow_cidrs names it"),
        "{body}"
    );
    let resp = c
        .get(format!("http://files.registry.example:{}/", up.port()))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403);
    assert!(resp.text().await.unwrap().contains("10.0.0.1 (private)"));
    assert!(up.seen().is_empty());
}

#[tokio::test]
async fn an_ip_literal_outside_allow_cidrs_is_refused() {
    let up = http_upstream().await;
    let p = policy(&[NAME], &[], &["10.0.0.0/8"], &[up.port()], &[]);
    let proxy = start(p, Limits::default()).await;
    let resp = client(proxy.http, None)
        .get(format!("http://127.0.0.1:{}/", up.port()))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403);
    assert!(
        resp.text()
            .await
            .unwrap()
            .contains("IP address not in allow_cidrs")
    );
    assert!(up.seen().is_empty());
}

#[tokio::test]
async fn a_port_outside_allow_ports_is_refused() {
    let up = http_upstream().await;
    let p = policy(
        &[NAME],
        &[],
        &["127.0.0.1/32"],
        &[443],
        &[(NAME, "127.0.0.1")],
    );
    let proxy = start(p, Limits::default()).await;
    let resp = client(proxy.http, None)
        .get(format!("http://{NAME}:{}/", up.port()))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403);
    assert!(resp.text().await.unwrap().contains("not in allow_ports"));
    assert!(up.seen().is_empty());
}

#[tokio::test]
async fn a_redirect_to_a_denied_host_is_refused_when_the_client_follows_it() {
    let up = http_upstream().await;
    let hosts = [(NAME, "127.0.0.1"), ("denied.example", "127.0.0.1")];
    let p = policy(&[NAME], &[], &["127.0.0.1/32"], &[up.port()], &hosts);
    let proxy = start(p, Limits::default()).await;
    let port = up.port();
    let url = format!("http://{NAME}:{port}/redirect?to=http://denied.example:{port}/secret");
    let resp = client(proxy.http, None).get(&url).send().await.unwrap();
    assert_eq!(resp.status(), 403, "the followed redirect is refused");
    let seen = up.seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert!(seen[0].contains("/redirect"), "{seen:?}");
}

#[tokio::test]
async fn a_host_header_naming_another_host_is_refused() {
    let up = http_upstream().await;
    let p = policy(
        &[NAME],
        &[],
        &["127.0.0.1/32"],
        &[up.port()],
        &[(NAME, "127.0.0.1")],
    );
    let proxy = start(p, Limits::default()).await;
    let mut s = TcpStream::connect(proxy.http).await.unwrap();
    let req = format!(
        "GET http://{NAME}:{}/ HTTP/1.1\r\nHost: denied.example\r\n\r\n",
        up.port()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let head = String::from_utf8(read_head(&mut s).await.unwrap()).unwrap();
    assert!(head.starts_with("HTTP/1.1 403"), "{head}");
    assert!(
        head.contains("Host header `denied.example` differs"),
        "{head}"
    );
    assert!(up.seen().is_empty());
}

#[tokio::test]
async fn connect_reaches_an_https_upstream_end_to_end() {
    let (up, ca) = https_upstream(NAME).await;
    let p = policy(
        &[NAME],
        &[],
        &["127.0.0.1/32"],
        &[up.port()],
        &[(NAME, "127.0.0.1")],
    );
    let proxy = start(p, Limits::default()).await;
    let url = format!("https://{NAME}:{}/index/", up.port());
    let resp = client(proxy.http, Some(&ca))
        .get(&url)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.text().await.unwrap(), "hello from upstream\n");
    assert_eq!(
        up.seen(),
        [format!("GET /index/ host={NAME}:{}", up.port())]
    );
}

/// A client that sends its ClientHello in the same write as the `CONNECT` head, before the
/// 200, is served: what the proxy read along with the head reaches the upstream first.
#[tokio::test]
async fn a_client_hello_sent_with_the_connect_head_reaches_the_upstream() {
    use std::io::{Read, Write};
    let (up, ca) = https_upstream(NAME).await;
    let p = policy(
        &[NAME],
        &[],
        &["127.0.0.1/32"],
        &[up.port()],
        &[(NAME, "127.0.0.1")],
    );
    let proxy = start(p, Limits::default()).await;
    let target = format!("{NAME}:{}", up.port());
    let name = ServerName::try_from(NAME).unwrap();
    let mut tls = tokio_rustls::rustls::ClientConnection::new(client_config(&ca), name).unwrap();
    let mut first = format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n").into_bytes();
    tls.write_tls(&mut first).unwrap();
    let mut s = TcpStream::connect(proxy.http).await.unwrap();
    s.write_all(&first).await.unwrap();
    let head = String::from_utf8(read_head(&mut s).await.unwrap()).unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let s = s.into_std().unwrap();
    let out = tokio::task::spawn_blocking(move || {
        let mut s = s;
        s.set_nonblocking(false).unwrap();
        let mut stream = tokio_rustls::rustls::Stream::new(&mut tls, &mut s);
        stream
            .write_all(format!("GET / HTTP/1.1\r\nHost: {NAME}\r\n\r\n").as_bytes())
            .unwrap();
        let mut out = Vec::new();
        let _ = stream.read_to_end(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    })
    .await
    .unwrap();
    assert!(out.ends_with("hello from upstream\n"), "{out}");
}

/// CONNECT to `target`, then a TLS handshake naming `sni`; the upstream's response, if any.
async fn connect_then_tls(
    proxy: std::net::SocketAddr,
    target: &str,
    sni: &str,
    ca: &str,
) -> Option<String> {
    let mut s = TcpStream::connect(proxy).await.unwrap();
    s.write_all(format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let head = String::from_utf8(read_head(&mut s).await.unwrap()).unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    tls_get(s, sni, ca).await
}

async fn tls_get(s: TcpStream, sni: &str, ca: &str) -> Option<String> {
    let connector = tokio_rustls::TlsConnector::from(client_config(ca));
    let name = ServerName::try_from(sni.to_owned()).unwrap();
    let mut tls = connector.connect(name, s).await.ok()?;
    tls.write_all(format!("GET / HTTP/1.1\r\nHost: {sni}\r\n\r\n").as_bytes())
        .await
        .ok()?;
    let mut out = String::new();
    tls.read_to_string(&mut out).await.ok()?;
    Some(out)
}

#[tokio::test]
async fn connect_carrying_the_sni_of_another_host_is_refused() {
    let (up, ca) = https_upstream("denied.example").await;
    let p = policy(
        &[NAME],
        &[],
        &["127.0.0.1/32"],
        &[up.port()],
        &[(NAME, "127.0.0.1")],
    );
    let proxy = start(p, Limits::default()).await;
    let target = format!("{NAME}:{}", up.port());
    assert_eq!(
        connect_then_tls(proxy.http, &target, "denied.example", &ca).await,
        None
    );
    assert!(up.seen().is_empty(), "upstream saw {:?}", up.seen());
    let refusals = proxy.proxy.refusals();
    assert_eq!(refusals.len(), 1, "{refusals:?}");
    assert!(
        refusals[0]
            .to_string()
            .contains("TLS server name `denied.example` differs from the requested host")
    );
}

#[tokio::test]
async fn a_tunnel_that_does_not_start_with_tls_is_refused() {
    let up = http_upstream().await;
    let p = policy(
        &[NAME],
        &[],
        &["127.0.0.1/32"],
        &[up.port()],
        &[(NAME, "127.0.0.1")],
    );
    let proxy = start(p, Limits::default()).await;
    let mut s = TcpStream::connect(proxy.http).await.unwrap();
    let target = format!("{NAME}:{}", up.port());
    s.write_all(format!("CONNECT {target} HTTP/1.1\r\n\r\n").as_bytes())
        .await
        .unwrap();
    read_head(&mut s).await.unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nHost: denied.example\r\n\r\n")
        .await
        .unwrap();
    let mut rest = Vec::new();
    let _ = s.read_to_end(&mut rest).await;
    assert!(rest.is_empty());
    assert!(up.seen().is_empty());
    assert!(
        proxy.proxy.refusals()[0]
            .to_string()
            .contains("tunnels carry TLS only")
    );
}

/// A SOCKS5 CONNECT by name; the reply code.
async fn socks_connect(proxy: std::net::SocketAddr, name: &str, port: u16) -> (TcpStream, u8) {
    let mut s = TcpStream::connect(proxy).await.unwrap();
    s.write_all(&[5, 1, 0]).await.unwrap();
    let mut choice = [0u8; 2];
    s.read_exact(&mut choice).await.unwrap();
    assert_eq!(choice, [5, 0]);
    let mut req = vec![5, 1, 0, 3, name.len() as u8];
    req.extend_from_slice(name.as_bytes());
    req.extend_from_slice(&port.to_be_bytes());
    s.write_all(&req).await.unwrap();
    let mut reply = [0u8; 10];
    s.read_exact(&mut reply).await.unwrap();
    (s, reply[1])
}

#[tokio::test]
async fn socks5_reaches_an_allowed_name_and_refuses_the_others() {
    let (up, ca) = https_upstream(NAME).await;
    let hosts = [(NAME, "127.0.0.1"), ("denied.example", "127.0.0.1")];
    let p = policy(&[NAME], &[], &["127.0.0.1/32"], &[up.port()], &hosts);
    let proxy = start(p, Limits::default()).await;
    let (s, code) = socks_connect(proxy.socks, NAME, up.port()).await;
    assert_eq!(code, 0);
    let out = tls_get(s, NAME, &ca).await.expect("TLS through SOCKS5");
    assert!(
        out.starts_with("HTTP/1.1 200") && out.ends_with("hello from upstream\n"),
        "{out}"
    );
    let (_s, code) = socks_connect(proxy.socks, "denied.example", up.port()).await;
    assert_eq!(code, 2, "connection not allowed by ruleset");
    assert_eq!(up.seen().len(), 1);
    assert!(
        proxy.proxy.refusals()[0]
            .to_string()
            .contains("denied.example")
    );
}
