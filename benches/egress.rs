//! The egress proxy's cost (run: `cargo bench --bench egress`): a 100 MiB body and 1,000
//! small requests (a fresh connection each: connection setup included) fetched through the
//! proxy versus directly from a loopback upstream in the same run, and `zeroclaw sandbox run
//! --network proxy -- true` versus `--network deny`. Medians; ratios printed, nothing asserted.

#[allow(dead_code)]
mod common;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::process::Command;
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
            ),
        )
    };
    let proxied = |path: &str| {
        (
            proxy_addr,
            format!(
                "GET http://{NAME}:{port}{path} HTTP/1.1\r\nHost: {NAME}:{port}\r\n\
                 Connection: close\r\n\r\n",
                port = up.port()
            ),
        )
    };
    println!("egress proxy vs direct on loopback, medians");
    let (mut d, mut p) = (Vec::new(), Vec::new());
    for _ in 0..BIG_RUNS {
        d.push(fetch(direct("/big"), BIG).await);
        p.push(fetch(proxied("/big"), BIG).await);
    }
    let mib = BIG as f64 / (1 << 20) as f64;
    let (d, p) = (median(&mut d), median(&mut p));
    let (dt, pt) = (mib / d.as_secs_f64(), mib / p.as_secs_f64());
    println!(
        "100 MiB body: direct {dt:.0} MiB/s, proxy {pt:.0} MiB/s ({:+.1}% throughput)",
        (pt / dt - 1.0) * 100.0
    );
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

/// Sends `request` to `addr` and reads the answer to its end; checks the body length.
async fn fetch((addr, request): (SocketAddr, String), body: usize) -> Duration {
    let started = Instant::now();
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream.write_all(request.as_bytes()).await.expect("request");
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

/// A loopback upstream: `/big` answers a 100 MiB body, anything else `hello`.
async fn upstream() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("upstream");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
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
                    let chunk = vec![b'x'; 1 << 20];
                    for _ in 0..(BIG >> 20) {
                        if stream.write_all(&chunk).await.is_err() {
                            return;
                        }
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

/// `zeroclaw sandbox run --backend namespaces --network MODE -- true`, interleaved.
fn sandbox_run() {
    let dir = tempfile::tempdir().expect("dir");
    let run = |network: &str| {
        let started = Instant::now();
        let status = Command::new(env!("CARGO_BIN_EXE_zeroclaw"))
            .env("ZEROCLAW_CONFIG_DIR", dir.path())
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
