//! The egress proxy over a link that is the bottleneck (issue 35's throughput decision): the
//! bench makes two network namespaces of its own, joined by a veth pair shaped to 1 Gbit/s
//! (`tc … tbf` on both ends), with addresses that exist only inside them. The upstream lives
//! in one; the client and the proxy live in the other, as a confined command and the daemon's
//! proxy do. Rows: 100 MiB fetched directly over the link, through the HTTP forward proxy and
//! through a CONNECT tunnel; the loss in % against direct. Then the relay's CPU per GiB: the
//! process CPU time of a proxied 100 MiB transfer on loopback minus a direct one.
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

fn far_side() -> Result<FarSide, String> {
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
    let listener = std::thread::scope(|s| {
        s.spawn(|| -> Result<std::net::TcpListener, String> {
            let ns = std::fs::File::open(&netns).map_err(|e| format!("{netns}: {e}"))?;
            nix::sched::setns(ns, CloneFlags::CLONE_NEWNET).map_err(|e| format!("setns: {e}"))?;
            std::net::TcpListener::bind((FAR, 0)).map_err(|e| format!("bind {FAR}: {e}"))
        })
        .join()
        .expect("bind thread")
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
    println!("over a veth link shaped to {RATE}/s (namespaces of the bench's own), medians");
    let direct = super::plain_get(up, up, "/big", false);
    let forward = super::plain_get(proxy, up, "/big", true);
    let connect = super::connect_with_hello(proxy, up, &client_hello());
    let mut rows = [
        ("direct", direct, Vec::new()),
        ("HTTP forward proxy", forward, Vec::new()),
        ("CONNECT tunnel", connect, Vec::new()),
    ];
    for _ in 0..BIG_RUNS {
        for (_, request, took) in rows.iter_mut() {
            took.push(fetch((request.0, request.1.clone()), BIG).await);
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

/// A proxy allowing [`NAME`] at `up` (and `cidr`), serving on loopback; its address.
pub async fn proxy_for(up: SocketAddr, cidr: &str) -> SocketAddr {
    let config = NetworkConfig {
        mode: NetworkMode::Proxy,
        allow_domains: vec![NAME.to_owned()],
        allow_ports: vec![up.port()],
        allow_cidrs: vec![cidr.to_owned()],
        hosts: BTreeMap::from([(NAME.to_owned(), up.ip().to_string())]),
        ..NetworkConfig::default()
    };
    let policy = EgressPolicy::from_config(&config).expect("policy");
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
