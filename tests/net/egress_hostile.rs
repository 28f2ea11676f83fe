//! The egress proxy under 10,000 hostile requests — malformed CONNECT lines, huge headers,
//! slowloris connections, garbage SOCKS greetings — keeps its memory bounded, closes slow
//! clients after its header timeout, and still serves an honest client afterwards.

use crate::egress_support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use egress_support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use zeroclaw::egress::proxy::Limits;

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

fn limits() -> Limits {
    Limits {
        header_timeout: Duration::from_millis(500),
        max_header_bytes: 16 * 1024,
        max_connections: 128,
        ..Limits::default()
    }
}

/// Sends one hostile request of kind `i % 5` and reads until the proxy closes.
async fn hostile(http: SocketAddr, socks: SocketAddr, i: usize) {
    let target = if i % 5 == 4 { socks } else { http };
    let Ok(mut s) = TcpStream::connect(target).await else {
        return;
    };
    let payload: Vec<u8> = match i % 5 {
        0 => b"CONNECT \r\n\r\n".to_vec(),
        1 => format!("CONNECT a:b:c:{i} HTTP/1.1\r\n\r\n").into_bytes(),
        2 => {
            let mut v = b"GET http://registry.example/ HTTP/1.1\r\nX-Big: ".to_vec();
            v.resize(v.len() + 256 * 1024, b'a');
            v
        }
        3 => vec![0xff; 512],
        _ => vec![5, 255, 1, 2, 3],
    };
    let _ = s.write_all(&payload).await;
    let mut sink = [0u8; 4096];
    let _ = tokio::time::timeout(Duration::from_secs(5), async {
        while let Ok(n) = s.read(&mut sink).await {
            if n == 0 {
                break;
            }
        }
    })
    .await;
}

/// Set in the process of its own that the memory test runs in.
const ALONE: &str = "ZC_TEST_HOSTILE_ALONE";

/// Runs the memory test in a process of its own (this test binary, filtered to it): the
/// other tests of the binary run beside it, and their allocations would count as the
/// proxy's.
#[test]
fn ten_thousand_hostile_requests_leave_memory_bounded_and_service_intact() {
    if std::env::var_os(ALONE).is_some() {
        return tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap()
            .block_on(hostile_requests_alone());
    }
    let name =
        "egress_hostile::ten_thousand_hostile_requests_leave_memory_bounded_and_service_intact";
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(ALONE, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "the test in its own process: {}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

async fn hostile_requests_alone() {
    let up = http_upstream().await;
    let name = "registry.example";
    let p = policy(
        &[name],
        &[],
        &["127.0.0.1/32"],
        &[up.port()],
        &[(name, "127.0.0.1")],
    );
    let proxy = start(p, limits()).await;
    let before = rss_kib();

    // Slowloris: a head that never ends, one byte at a time; the proxy must hang up.
    let mut slow = Vec::new();
    for _ in 0..64 {
        let http = proxy.http;
        slow.push(tokio::spawn(async move {
            let mut s = TcpStream::connect(http).await.unwrap();
            let started = Instant::now();
            s.write_all(b"GET http://registry.example/ HTTP/1.1\r\n")
                .await
                .unwrap();
            loop {
                tokio::time::sleep(Duration::from_millis(100)).await;
                if s.write_all(b"X").await.is_err() {
                    break;
                }
                let mut b = [0u8; 1];
                match tokio::time::timeout(Duration::from_millis(1), s.read(&mut b)).await {
                    Ok(Ok(0)) | Ok(Err(_)) => break,
                    _ => {}
                }
                assert!(
                    started.elapsed() < Duration::from_secs(5),
                    "slowloris kept open"
                );
            }
            started.elapsed()
        }));
    }

    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..10_000 {
        while tasks.len() >= 64 {
            tasks.join_next().await;
        }
        tasks.spawn(hostile(proxy.http, proxy.socks, i));
    }
    while tasks.join_next().await.is_some() {}
    for task in slow {
        let held = task.await.unwrap();
        assert!(held < Duration::from_secs(3), "slowloris held for {held:?}");
    }

    let grown_mib = rss_kib().saturating_sub(before) / 1024;
    assert!(grown_mib < 64, "memory grew by {grown_mib} MiB");
    assert!(
        up.seen().is_empty(),
        "hostile requests reached the upstream: {:?}",
        up.seen()
    );
    let resp = client(proxy.http, None)
        .get(format!("http://{name}:{}/after", up.port()))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(up.seen().len(), 1);
}
