//! The egress proxy's cost (run: `cargo bench --bench egress`): a 100 MiB body forwarded
//! (plain `http://`), 100 MiB through a `CONNECT` tunnel (after a real TLS ClientHello) and
//! 1,000 small requests (a fresh connection each: connection setup included) through the
//! proxy versus directly from a loopback upstream in the same run, and `zeroclaw sandbox run
//! --network proxy -- true` versus `--network deny`; and an HTTPS request to a host bound to a
//! credential (intercepted) versus a plain tunnel ([`intercept`]). Medians; ratios printed,
//! nothing asserted.

#[allow(dead_code)]
mod common;
#[path = "egress/intercept.rs"]
mod intercept;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{median, ms};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use zeroclaw::config::{NetworkConfig, NetworkMode};
use zeroclaw::egress::EgressPolicy;
use zeroclaw::egress::proxy::{Limits, Proxy};

const BIG: usize = 100 << 20;
const BIG_RUNS: usize = 5;
const SMALL_RUNS: usize = 1000;
const SPAWN_RUNS: usize = 20;
const NAME: &str = "bench.example";

fn main() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(through_the_proxy());
    runtime.block_on(intercept::intercepted_vs_tunnel());
    sandbox_run();
}

async fn through_the_proxy() {
    let up = upstream().await;
    let config = NetworkConfig {
        mode: NetworkMode::Proxy,
        allow_domains: vec![NAME.to_owned()],
        allow_ports: vec![up.port()],
        allow_cidrs: vec!["127.0.0.0/8".to_owned()],
        hosts: BTreeMap::from([(NAME.to_owned(), "127.0.0.1".to_owned())]),
        ..NetworkConfig::default()
    };
    let policy = EgressPolicy::from_config(&config).expect("policy");
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("proxy listener");
    let proxy_addr = listener.local_addr().expect("proxy addr");
    let proxy = Proxy::new(policy, Limits::default());
    let _serving = proxy.serve_http(listener);
    let direct = |path: &str| {
        (
            up,
            format!(
                "GET {path} HTTP/1.1\r\nHost: {NAME}:{}\r\nConnection: close\r\n\r\n",
                up.port()
            )
            .into_bytes(),
        )
    };
    let proxied = |path: &str| {
        (
            proxy_addr,
            format!(
                "GET http://{NAME}:{port}{path} HTTP/1.1\r\nHost: {NAME}:{port}\r\n\
                 Connection: close\r\n\r\n",
                port = up.port()
            )
            .into_bytes(),
        )
    };
    println!("egress proxy vs direct on loopback, medians");
    let (mut d, mut p) = (Vec::new(), Vec::new());
    for _ in 0..BIG_RUNS {
        d.push(fetch(direct("/big"), BIG).await);
        p.push(fetch(proxied("/big"), BIG).await);
    }
    throughput("100 MiB body", &mut d, &mut p);
    // The upstream answers a TLS record with the 100 MiB raw; the CONNECT and the ClientHello
    // go in one write (the proxy gets the ClientHello with the request head).
    let hello = client_hello();
    let tunnel_direct = || (up, hello.clone());
    let tunnel_proxied = || {
        let mut request = format!(
            "CONNECT {NAME}:{port} HTTP/1.1\r\nHost: {NAME}:{port}\r\n\r\n",
            port = up.port()
        )
        .into_bytes();
        request.extend_from_slice(&hello);
        (proxy_addr, request)
    };
    let (mut d, mut p) = (Vec::new(), Vec::new());
    for _ in 0..BIG_RUNS {
        d.push(fetch(tunnel_direct(), BIG).await);
        p.push(fetch(tunnel_proxied(), BIG).await);
    }
    throughput("100 MiB through CONNECT", &mut d, &mut p);
    let (mut d, mut p) = (Vec::new(), Vec::new());
    for _ in 0..SMALL_RUNS {
        d.push(fetch(direct("/small"), 5).await);
        p.push(fetch(proxied("/small"), 5).await);
    }
    let (d, p) = (median(&mut d), median(&mut p));
    println!(
        "{SMALL_RUNS} small requests (new connection each): direct {:.3} ms, proxy {:.3} ms \
         (+{:.3} ms per request)",
        ms(d),
        ms(p),
        ms(p.saturating_sub(d))
    );
}

/// Prints the median throughputs of `direct` and `proxied` fetches of [`BIG`] bytes.
fn throughput(what: &str, direct: &mut [Duration], proxied: &mut [Duration]) {
    let mib = BIG as f64 / (1 << 20) as f64;
    let (d, p) = (median(direct), median(proxied));
    let (dt, pt) = (mib / d.as_secs_f64(), mib / p.as_secs_f64());
    println!(
        "{what}: direct {dt:.0} MiB/s, proxy {pt:.0} MiB/s ({:+.1}% throughput)",
        (pt / dt - 1.0) * 100.0
    );
}

/// A TLS ClientHello naming [`NAME`] (what a tunnel must start with).
fn client_hello() -> Vec<u8> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from(NAME).expect("server name");
    let mut client = rustls::ClientConnection::new(Arc::new(config), name).expect("client");
    let mut hello = Vec::new();
    client.write_tls(&mut hello).expect("ClientHello");
    hello
}

/// Sends `request` to `addr` and reads the answer to its end; checks the body length.
async fn fetch((addr, request): (SocketAddr, Vec<u8>), body: usize) -> Duration {
    let started = Instant::now();
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream.write_all(&request).await.expect("request");
    let mut buf = vec![0u8; 256 * 1024];
    let mut total = 0usize;
    loop {
        let n = stream.read(&mut buf).await.expect("read");
        if n == 0 {
            break;
        }
        total += n;
    }
    let took = started.elapsed();
    assert!(total >= body, "short answer: {total} bytes");
    took
}

/// A loopback upstream: `/big` answers a 100 MiB body, anything else `hello`; a TLS record
/// (a tunnel's ClientHello) is answered with the 100 MiB raw.
async fn upstream() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("upstream");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut byte = [0u8; 1];
                if stream.read_exact(&mut byte).await.is_err() {
                    return;
                }
                if byte[0] == 0x16 {
                    let mut header = [0u8; 4];
                    if stream.read_exact(&mut header).await.is_err() {
                        return;
                    }
                    let mut record = vec![0u8; u16::from_be_bytes([header[2], header[3]]).into()];
                    if stream.read_exact(&mut record).await.is_err() {
                        return;
                    }
                    let _ = send_big(&mut stream).await;
                    let _ = stream.shutdown().await;
                    return;
                }
                let mut head = byte.to_vec();
                while !head.ends_with(b"\r\n\r\n") {
                    if stream.read(&mut byte).await.unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(byte[0]);
                }
                let big = head.starts_with(b"GET /big ");
                let len = if big { BIG } else { 5 };
                let reply = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {len}\r\nConnection: close\r\n\r\n"
                );
                if stream.write_all(reply.as_bytes()).await.is_err() {
                    return;
                }
                if big {
                    if send_big(&mut stream).await.is_err() {
                        return;
                    }
                } else {
                    let _ = stream.write_all(b"hello").await;
                }
                let _ = stream.shutdown().await;
            });
        }
    });
    addr
}

/// Writes [`BIG`] bytes in 1 MiB writes.
async fn send_big(stream: &mut TcpStream) -> std::io::Result<()> {
    let chunk = vec![b'x'; 1 << 20];
    for _ in 0..(BIG >> 20) {
        stream.write_all(&chunk).await?;
    }
    Ok(())
}

/// `zeroclaw sandbox run --backend namespaces --network MODE -- true`, interleaved.
fn sandbox_run() {
    let dir = tempfile::tempdir().expect("dir");
    // Apart from the workspace: `sandbox run` refuses a workspace inside its config dir.
    let config_dir = tempfile::tempdir().expect("config dir");
    let run = |network: &str| {
        let started = Instant::now();
        let status = Command::new(env!("CARGO_BIN_EXE_zeroclaw"))
            .env("ZEROCLAW_CONFIG_DIR", config_dir.path())
            .args([
                "sandbox",
                "run",
                "--backend",
                "namespaces",
                "--network",
                network,
            ])
            .arg("--workspace")
            .arg(dir.path())
            .args(["--", "true"])
            .status()
            .expect("sandbox run");
        assert!(
            status.success(),
            "sandbox run --network {network}: {status}"
        );
        started.elapsed()
    };
    let (mut deny, mut proxy) = (Vec::new(), Vec::new());
    for _ in 0..SPAWN_RUNS {
        deny.push(run("deny"));
        proxy.push(run("proxy"));
    }
    let (d, p) = (median(&mut deny), median(&mut proxy));
    println!(
        "sandbox run -- true: --network deny {:.2} ms, --network proxy {:.2} ms ({:.2}x)",
        ms(d),
        ms(p),
        p.as_secs_f64() / d.as_secs_f64()
    );
}
