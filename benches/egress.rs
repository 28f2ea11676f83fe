//! The egress proxy's cost (run: `cargo bench --bench egress`): a 100 MiB body forwarded
//! (plain `http://`), 100 MiB through a `CONNECT` tunnel (after a real TLS ClientHello) and
//! 1,000 small requests (a fresh connection each: connection setup included) through the
//! proxy versus directly from a loopback upstream in the same run, with the process CPU per
//! GiB of each; the same transfers over a veth link shaped to 1 Gbit/s, and one taken by
//! transparent egress ([`link`]); an HTTPS
//! request to a host bound to a credential (intercepted) versus a plain tunnel
//! ([`intercept`]); `zeroclaw sandbox run --network proxy -- true` versus `--network deny`;
//! and, inside one `sandbox run --network proxy` on the namespaces rung, a small exchange with
//! a raw loopback echo on a new connection each time, taken by transparent egress versus
//! through `CONNECT` (same child, same upstream, interleaved). Medians; ratios printed,
//! nothing asserted. `ZEROCLAW_BIN` measures another build of `zeroclaw` in the `sandbox run`
//! rows.

#[allow(dead_code)]
mod common;
#[path = "egress/intercept.rs"]
mod intercept;
#[path = "egress/link.rs"]
mod link;

use std::net::SocketAddr;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{median, ms};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const BIG: usize = 100 << 20;
const BIG_RUNS: usize = 5;
const SMALL_RUNS: usize = 1000;
const SPAWN_RUNS: usize = 20;
const NAME: &str = "bench.example";

fn main() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(through_the_proxy());
    runtime.block_on(intercept::intercepted_vs_tunnel());
    drop(runtime);
    link::rows();
    sandbox_run();
    transparent_vs_connect();
}

async fn through_the_proxy() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("upstream");
    let up = listener.local_addr().expect("addr");
    serve_upstream(listener);
    let proxy_addr = link::proxy_for(up, "127.0.0.0/8").await;
    println!("egress proxy vs direct on loopback, medians");
    let (mut d, mut p) = (Vec::new(), Vec::new());
    let (mut cpu_direct, mut cpu_proxied) = (Duration::ZERO, Duration::ZERO);
    for _ in 0..BIG_RUNS {
        let before = link::cpu_time();
        d.push(fetch(plain_get(up, up, "/big", false), BIG).await);
        let between = link::cpu_time();
        p.push(fetch(plain_get(proxy_addr, up, "/big", true), BIG).await);
        cpu_direct += between - before;
        cpu_proxied += link::cpu_time() - between;
    }
    throughput("100 MiB body", &mut d, &mut p);
    let gib = (BIG * BIG_RUNS) as f64 / (1u64 << 30) as f64;
    let per_gib = |cpu: Duration| ms(cpu) / gib;
    println!(
        "CPU per GiB (whole process): direct {:.0} ms, proxied {:.0} ms; the relay's share \
         {:.0} ms per GiB ({:.2}x a direct transfer)",
        per_gib(cpu_direct),
        per_gib(cpu_proxied),
        per_gib(cpu_proxied.saturating_sub(cpu_direct)),
        cpu_proxied.saturating_sub(cpu_direct).as_secs_f64() / cpu_direct.as_secs_f64()
    );
    // The upstream answers a TLS record with the 100 MiB raw; the CONNECT and the ClientHello
    // go in one write (the proxy gets the ClientHello with the request head).
    let hello = client_hello();
    let (mut d, mut p) = (Vec::new(), Vec::new());
    for _ in 0..BIG_RUNS {
        d.push(fetch((up, hello.clone()), BIG).await);
        p.push(fetch(connect_with_hello(proxy_addr, up, &hello), BIG).await);
    }
    throughput("100 MiB through CONNECT", &mut d, &mut p);
    let (mut d, mut p) = (Vec::new(), Vec::new());
    for _ in 0..SMALL_RUNS {
        d.push(fetch(plain_get(up, up, "/small", false), 5).await);
        p.push(fetch(plain_get(proxy_addr, up, "/small", true), 5).await);
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

/// A `GET path` of [`NAME`] at `up`, sent to `to`: in absolute form when `proxied`.
fn plain_get(to: SocketAddr, up: SocketAddr, path: &str, proxied: bool) -> (SocketAddr, Vec<u8>) {
    let port = up.port();
    let target = if proxied {
        format!("http://{NAME}:{port}{path}")
    } else {
        path.to_owned()
    };
    let head = format!("GET {target} HTTP/1.1\r\nHost: {NAME}:{port}\r\nConnection: close\r\n\r\n");
    (to, head.into_bytes())
}

/// A `CONNECT` to [`NAME`] at `up` through `proxy`, with `hello` in the same write.
fn connect_with_hello(proxy: SocketAddr, up: SocketAddr, hello: &[u8]) -> (SocketAddr, Vec<u8>) {
    let port = up.port();
    let mut request =
        format!("CONNECT {NAME}:{port} HTTP/1.1\r\nHost: {NAME}:{port}\r\n\r\n").into_bytes();
    request.extend_from_slice(hello);
    (proxy, request)
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
    let stream = TcpStream::connect(addr).await.expect("connect");
    fetch_over(stream, &request, body, started).await
}

/// Sends `request` on `stream` and reads the answer to its end; checks the body length; the
/// time since `started`.
async fn fetch_over(
    mut stream: TcpStream,
    request: &[u8],
    body: usize,
    started: Instant,
) -> Duration {
    stream.write_all(request).await.expect("request");
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

/// Serves the upstream on `listener`: `/big` answers a 100 MiB body, anything else `hello`;
/// a TLS record (a tunnel's ClientHello) is answered with the 100 MiB raw.
fn serve_upstream(listener: TcpListener) {
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
        let status = Command::new(common::binary())
            .env("ZEROCLAW_CONFIG_DIR", config_dir.path())
            // zeroclaw reads ZEROCLAW_* variables as configuration, and has no `bin` key.
            .env_remove("ZEROCLAW_BIN")
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

/// Exchanges per method in [`transparent_vs_connect`].
const EXCHANGE_RUNS: usize = 500;

/// The child's side of [`transparent_vs_connect`]: 5 bytes echoed on a fresh connection,
/// through transparent egress (the name resolved once by the DNS stub) and through `CONNECT`
/// (the `HTTP_PROXY` listener), interleaved; prints both medians in ms.
const EXCHANGE: &str = r#"
import os, socket, statistics, time
port, runs = @PORT@, @RUNS@
proxy = int(os.environ['HTTP_PROXY'].rsplit(':', 1)[1])
addr = socket.gethostbyname('bench.example')
def echo(s):
    s.sendall(b'hello')
    got = b''
    while len(got) < 5:
        got += s.recv(5 - len(got))
    s.close()
def transparent():
    echo(socket.create_connection((addr, port)))
def connect():
    s = socket.create_connection(('127.0.0.1', proxy))
    s.sendall(b'CONNECT bench.example:%d HTTP/1.1\r\nHost: bench.example:%d\r\n\r\n' % (port, port))
    head = b''
    while b'\r\n\r\n' not in head:
        head += s.recv(4096)
    assert b' 200 ' in head.split(b'\r\n')[0], head
    echo(s)
t, c = [], []
for _ in range(runs):
    a = time.perf_counter(); transparent(); t.append(time.perf_counter() - a)
    a = time.perf_counter(); connect(); c.append(time.perf_counter() - a)
print('%.3f %.3f' % (statistics.median(t) * 1e3, statistics.median(c) * 1e3))
"#;

/// Transparent egress against `CONNECT` for one small exchange on a new connection, from
/// inside a `sandbox run --network proxy` child (namespaces rung; skipped without python3).
fn transparent_vs_connect() {
    let python = Command::new("python3").arg("--version").output();
    if !python.is_ok_and(|o| o.status.success()) {
        println!("transparent vs CONNECT: skipped (no python3)");
        return;
    }
    let echo = std::net::TcpListener::bind("127.0.0.1:0").expect("echo");
    let port = echo.local_addr().expect("echo addr").port();
    // Detached: it ends with the bench process.
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for mut stream in echo.incoming().flatten() {
            std::thread::spawn(move || {
                let mut buf = [0u8; 64];
                while let Ok(n) = stream.read(&mut buf) {
                    if n == 0 || stream.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            });
        }
    });
    let dir = tempfile::tempdir().expect("dir");
    let config_dir = tempfile::tempdir().expect("config dir");
    std::fs::write(
        config_dir.path().join("config.toml"),
        format!(
            "[sandbox.network]\nallow_cidrs = [\"127.0.0.0/8\"]\nallow = [\"{NAME}:{port}\"]\n\
             hosts = {{ \"{NAME}\" = \"127.0.0.1\" }}\n"
        ),
    )
    .expect("config");
    let script = EXCHANGE
        .replace("@PORT@", &port.to_string())
        .replace("@RUNS@", &EXCHANGE_RUNS.to_string());
    let out = Command::new(common::binary())
        .env("ZEROCLAW_CONFIG_DIR", config_dir.path())
        .env_remove("ZEROCLAW_BIN")
        .args([
            "sandbox",
            "run",
            "--backend",
            "namespaces",
            "--network",
            "proxy",
        ])
        .arg("--workspace")
        .arg(dir.path())
        .args(["--", "python3", "-c", &script])
        .output()
        .expect("sandbox run");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let medians: Vec<f64> = stdout
        .split_whitespace()
        .filter_map(|v| v.parse().ok())
        .collect();
    let [t, c] = medians[..] else {
        panic!(
            "transparent vs CONNECT: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    println!(
        "{EXCHANGE_RUNS} small exchanges in a proxy-mode child (new connection each): \
         transparent {t:.3} ms, CONNECT {c:.3} ms ({:+.3} ms per connection)",
        t - c
    );
}
