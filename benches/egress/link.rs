//! The egress proxy over a link that is the bottleneck (issue 35's throughput decision): the
//! bench makes two network namespaces of its own, joined by a veth pair shaped to 1 Gbit/s
//! (`tc … tbf` on both ends), with addresses that exist only inside them. The upstream lives
//! in one; the client and the proxy live in the other, as a confined command and the daemon's
//! proxy do. Rows: 100 MiB fetched directly over the link, through the HTTP forward proxy,
//! through a CONNECT tunnel, and taken by transparent egress (the client in a third namespace
//! made as a proxy-mode call's is: `lo` only, every IPv4 address local to it, the proxy's
//! transparent listener, DNS stub and refused-connection watch there; it looks the name up
//! through the stub and connects to the synthetic address, sending a ClientHello); the loss
//! in % against direct. Then the relay's CPU per GiB: the process CPU time of a proxied
//! 100 MiB transfer on loopback minus a direct one.
//!
//! Needs root (or `CAP_NET_ADMIN`), `ip` and `tc`; prints why and skips otherwise.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

use nix::sched::{CloneFlags, unshare};
use zeroclaw::config::{NetworkConfig, NetworkMode};
use zeroclaw::egress::EgressPolicy;
use zeroclaw::egress::proxy::{Limits, Proxy};
use zeroclaw_sandbox::egress::refused_watch::RefusedWatch;

use super::{BIG, BIG_RUNS, NAME, client_hello, fetch, serve_upstream};

/// The client/proxy side's address and the upstream's, on the shaped link.
const NEAR: &str = "10.231.0.1";
const FAR: &str = "10.231.0.2";
const RATE: &str = "1gbit";

/// Runs the link rows in a thread of their own (a network namespace is per thread, and the
/// runtime's workers inherit it), then the CPU-per-GiB figure.
pub fn rows() {
    let outcome = std::thread::spawn(|| -> Result<(), String> {
        unshare(CloneFlags::CLONE_NEWNET).map_err(|e| format!("unshare(CLONE_NEWNET): {e}"))?;
        let upstream = far_side()?;
        shape_link(&upstream)?;
        let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
        runtime.block_on(over_the_link(upstream.listener));
        drop(upstream.keep);
        Ok(())
    })
    .join()
    .expect("link thread");
    if let Err(why) = outcome {
        println!("shaped 1 Gbit/s link: skipped ({why})");
    }
}

/// The upstream's namespace: a thread that enters a new one, binds the upstream's listener
/// there, and stays until `keep` is dropped (so `/proc/<tid>/ns/net` names it while the link
/// is set up).
struct FarSide {
    listener: std::net::TcpListener,
    tid: i32,
    keep: mpsc::Sender<()>,
}

/// A thread in a new network namespace of its own, staying until the sender is dropped; its
/// id (`/proc/<tid>/ns/net` names the namespace).
fn namespace_thread() -> Result<(i32, mpsc::Sender<()>), String> {
    let (ready_tx, ready_rx) = mpsc::channel();
    let (keep, stay) = mpsc::channel::<()>();
    std::thread::spawn(move || {
        let made = unshare(CloneFlags::CLONE_NEWNET)
            .map_err(|e| format!("unshare(CLONE_NEWNET): {e}"))
            .map(|()| nix::unistd::gettid().as_raw());
        let _ = ready_tx.send(made);
        let _ = stay.recv();
    });
    let tid = ready_rx.recv().map_err(|e| e.to_string())??;
    Ok((tid, keep))
}

/// Runs `f` in a thread that entered the network namespace `netns` (a socket made there keeps
/// it).
fn in_netns<T: Send>(
    netns: &str,
    f: impl FnOnce() -> Result<T, String> + Send,
) -> Result<T, String> {
    std::thread::scope(|s| {
        s.spawn(|| -> Result<T, String> {
            let ns = std::fs::File::open(netns).map_err(|e| format!("{netns}: {e}"))?;
            nix::sched::setns(ns, CloneFlags::CLONE_NEWNET).map_err(|e| format!("setns: {e}"))?;
            f()
        })
        .join()
        .expect("namespace thread")
    })
}

fn far_side() -> Result<FarSide, String> {
    let (tid, keep) = namespace_thread()?;
    let netns = format!("/proc/{tid}/ns/net");
    run(
        "ip",
        &[
            "link", "add", "zcb0", "type", "veth", "peer", "name", "zcb1",
        ],
    )?;
    run("ip", &["link", "set", "zcb1", "netns", &tid.to_string()])?;
    for (args, inside) in [
        (vec!["link", "set", "lo", "up"], false),
        (
            vec!["addr", "add", &format!("{NEAR}/24"), "dev", "zcb0"],
            false,
        ),
        (vec!["link", "set", "zcb0", "up"], false),
        (vec!["link", "set", "lo", "up"], true),
        (
            vec!["addr", "add", &format!("{FAR}/24"), "dev", "zcb1"],
            true,
        ),
        (vec!["link", "set", "zcb1", "up"], true),
    ] {
        if inside {
            let mut full = vec![format!("--net={netns}"), "ip".to_owned()];
            full.extend(args.iter().map(|a| a.to_string()));
            run(
                "nsenter",
                &full.iter().map(String::as_str).collect::<Vec<_>>(),
            )?;
        } else {
            run("ip", &args)?;
        }
    }
    // The listener is bound in the far namespace: a socket keeps the namespace it was made in.
    let listener = in_netns(&netns, || {
        std::net::TcpListener::bind((FAR, 0)).map_err(|e| format!("bind {FAR}: {e}"))
    })?;
    Ok(FarSide {
        listener,
        tid,
        keep,
    })
}

/// Shapes both ends of the veth pair to [`RATE`].
fn shape_link(far: &FarSide) -> Result<(), String> {
    let tbf = [
        "root", "tbf", "rate", RATE, "burst", "256kb", "latency", "20ms",
    ];
    let mut near = vec!["qdisc", "add", "dev", "zcb0"];
    near.extend(tbf);
    run("tc", &near)?;
    let netns = format!("--net=/proc/{}/ns/net", far.tid);
    let mut far_args = vec![netns.as_str(), "tc", "qdisc", "add", "dev", "zcb1"];
    far_args.extend(tbf);
    run("nsenter", &far_args)
}

fn run(program: &str, args: &[&str]) -> Result<(), String> {
    let out = Command::new(program)
        .args(args)
        .output()
        .map_err(|e| format!("{program}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{program} {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

async fn over_the_link(listener: std::net::TcpListener) {
    listener.set_nonblocking(true).expect("nonblocking");
    let listener = tokio::net::TcpListener::from_std(listener).expect("upstream listener");
    let up = listener.local_addr().expect("upstream addr");
    serve_upstream(listener);
    let proxy = proxy_for(up, "10.231.0.0/24").await;
    let child = match ChildSide::start(up).await {
        Ok(child) => Some(child),
        Err(why) => {
            println!("  transparent egress: skipped ({why})");
            None
        }
    };
    println!("over a veth link shaped to {RATE}/s (namespaces of the bench's own), medians");
    let direct = super::plain_get(up, up, "/big", false);
    let forward = super::plain_get(proxy, up, "/big", true);
    let connect = super::connect_with_hello(proxy, up, &client_hello());
    // `None`: a connection of the child side's, to the synthetic address, with a ClientHello.
    let mut rows = vec![
        ("direct", Some(direct), Vec::new()),
        ("HTTP forward proxy", Some(forward), Vec::new()),
        ("CONNECT tunnel", Some(connect), Vec::new()),
    ];
    if child.is_some() {
        rows.push(("transparent egress", None, Vec::new()));
    }
    let hello = client_hello();
    for _ in 0..BIG_RUNS {
        for (_, request, took) in rows.iter_mut() {
            let fetched = match (request, &child) {
                (Some(request), _) => fetch((request.0, request.1.clone()), BIG).await,
                (None, Some(child)) => {
                    let started = std::time::Instant::now();
                    let stream = child.connect().expect("transparent connect");
                    super::fetch_over(stream, &hello, BIG, started).await
                }
                (None, None) => unreachable!("no transparent row without a child side"),
            };
            took.push(fetched);
        }
    }
    let mib = BIG as f64 / (1 << 20) as f64;
    let rate = |took: &mut Vec<Duration>| mib / super::median(took).as_secs_f64();
    let base = rate(&mut rows[0].2);
    for (what, _, took) in rows.iter_mut() {
        let r = rate(took);
        println!(
            "  {what}: {r:.0} MiB/s ({:+.1}% against direct)",
            (r / base - 1.0) * 100.0
        );
    }
}

/// The client side of transparent egress: a namespace with `lo` only and every IPv4 address
/// local to it, the proxy's transparent listener at the upstream's port, its DNS stub and
/// refused-connection watch there (as a proxy-mode call's namespace has them), and the
/// synthetic address the stub gave for [`NAME`].
struct ChildSide {
    netns: String,
    dest: SocketAddr,
    _keep: mpsc::Sender<()>,
}

impl ChildSide {
    async fn start(up: SocketAddr) -> Result<ChildSide, String> {
        let (tid, keep) = namespace_thread()?;
        let netns = format!("/proc/{tid}/ns/net");
        for args in [
            &["link", "set", "lo", "up"][..],
            &[
                "route",
                "add",
                "local",
                "0.0.0.0/0",
                "dev",
                "lo",
                "table",
                "local",
            ],
        ] {
            let mut full = vec![format!("--net={netns}"), "ip".to_owned()];
            full.extend(args.iter().map(|a| a.to_string()));
            run(
                "nsenter",
                &full.iter().map(String::as_str).collect::<Vec<_>>(),
            )?;
        }
        let (listener, dns, watch) = in_netns(&netns, || {
            let listener = std::net::TcpListener::bind(("0.0.0.0", up.port()))
                .map_err(|e| format!("transparent listener: {e}"))?;
            let dns = std::net::UdpSocket::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
            let watch = zeroclaw_sandbox::egress::refused_watch::open()
                .map_err(|e| format!("refused-connection watch: {e}"))?;
            Ok((listener, dns, watch))
        })?;
        let stub = dns.local_addr().map_err(|e| e.to_string())?;
        listener.set_nonblocking(true).map_err(|e| e.to_string())?;
        dns.set_nonblocking(true).map_err(|e| e.to_string())?;
        let proxy = Proxy::new(policy_for(up, "10.231.0.0/24"), Limits::default());
        let watch = RefusedWatch::new(watch).map_err(|e| e.to_string())?;
        let tasks = proxy.serve_transparent(
            tokio::net::UdpSocket::from_std(dns).map_err(|e| e.to_string())?,
            vec![tokio::net::TcpListener::from_std(listener).map_err(|e| e.to_string())?],
            Some(watch),
        );
        // The serving tasks live as long as the runtime.
        std::mem::forget(tasks);
        let synthetic = tokio::task::spawn_blocking({
            let netns = netns.clone();
            move || in_netns(&netns, || lookup(stub))
        })
        .await
        .map_err(|e| e.to_string())??;
        Ok(ChildSide {
            netns,
            dest: SocketAddr::from((synthetic, up.port())),
            _keep: keep,
        })
    }

    /// A connection from the child side to the synthetic address (taken by the listener).
    fn connect(&self) -> Result<tokio::net::TcpStream, String> {
        let stream = in_netns(&self.netns, || {
            std::net::TcpStream::connect(self.dest).map_err(|e| e.to_string())
        })?;
        stream.set_nonblocking(true).map_err(|e| e.to_string())?;
        tokio::net::TcpStream::from_std(stream).map_err(|e| e.to_string())
    }
}

/// [`NAME`]'s `A` record from the DNS stub at `stub` (run in the child side's namespace).
fn lookup(stub: SocketAddr) -> Result<std::net::Ipv4Addr, String> {
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    socket
        .set_read_timeout(Some(Duration::from_secs(5)))
        .map_err(|e| e.to_string())?;
    let mut query = vec![0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
    for label in NAME.split('.') {
        query.push(label.len() as u8);
        query.extend_from_slice(label.as_bytes());
    }
    query.extend_from_slice(&[0, 0, 1, 0, 1]);
    socket.send_to(&query, stub).map_err(|e| e.to_string())?;
    let mut answer = [0u8; 512];
    let n = socket
        .recv(&mut answer)
        .map_err(|e| format!("DNS stub: {e}"))?;
    let ancount = u16::from_be_bytes([answer[6], answer[7]]);
    if n < query.len() + 16 || ancount != 1 {
        return Err(format!("DNS stub gave no address for {NAME}"));
    }
    let a = &answer[n - 4..n];
    Ok(std::net::Ipv4Addr::new(a[0], a[1], a[2], a[3]))
}

/// The policy allowing [`NAME`] at `up` (and `cidr`).
fn policy_for(up: SocketAddr, cidr: &str) -> EgressPolicy {
    let config = NetworkConfig {
        mode: NetworkMode::Proxy,
        allow_domains: vec![NAME.to_owned()],
        allow_ports: vec![up.port()],
        allow_cidrs: vec![cidr.to_owned()],
        hosts: BTreeMap::from([(NAME.to_owned(), up.ip().to_string())]),
        ..NetworkConfig::default()
    };
    EgressPolicy::from_config(&config).expect("policy")
}

/// A proxy allowing [`NAME`] at `up` (and `cidr`), serving on loopback; its address.
pub async fn proxy_for(up: SocketAddr, cidr: &str) -> SocketAddr {
    let policy = policy_for(up, cidr);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("proxy listener");
    let addr = listener.local_addr().expect("proxy addr");
    let proxy = Proxy::new(policy, Limits::default());
    // The serving task lives as long as the runtime.
    std::mem::forget(proxy.serve_http(listener));
    addr
}

/// The process's CPU time (user + system) so far.
pub fn cpu_time() -> Duration {
    use nix::sys::resource::{UsageWho, getrusage};
    let usage = getrusage(UsageWho::RUSAGE_SELF).expect("getrusage");
    let tv = |t: nix::sys::time::TimeVal| {
        Duration::from_secs(t.tv_sec() as u64) + Duration::from_micros(t.tv_usec() as u64)
    };
    tv(usage.user_time()) + tv(usage.system_time())
}
