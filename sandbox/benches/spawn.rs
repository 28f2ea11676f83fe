//! Spawn overhead, measured in one run: bare `/bin/true` versus the launcher on each backend
//! available here, back to back and paced (a pause before each spawn, as between an agent's
//! tool calls: the namespace backend then finds a warm helper ready), and `zeroclaw sandbox
//! run -- true` versus `bwrap --ro-bind / / --unshare-all -- true` (taking turns, medians).
//! Prints time per spawn and ratios against the baselines of the same run.
//!
//! `cargo build --release --bin zeroclaw && cargo bench -p zeroclaw-sandbox --bench spawn`
//! (`ZEROCLAW_BIN` overrides the zeroclaw binary, `SPAWN_ITERATIONS` the count).

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use zeroclaw_sandbox::{BackendChoice, Profile, Sandbox};

fn iterations() -> u32 {
    std::env::var("SPAWN_ITERATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200)
}

fn mean(n: u32, mut f: impl FnMut()) -> Duration {
    for _ in 0..n / 10 {
        f();
    }
    let start = Instant::now();
    for _ in 0..n {
        f();
    }
    start.elapsed() / n
}

/// Pause before each paced spawn (not timed).
const PACE: Duration = Duration::from_millis(20);

/// Mean time of `f` with [`PACE`] before each call, only the calls timed.
fn mean_paced(n: u32, mut f: impl FnMut()) -> Duration {
    f();
    let mut total = Duration::ZERO;
    for _ in 0..n {
        std::thread::sleep(PACE);
        let start = Instant::now();
        f();
        total += start.elapsed();
    }
    total / n
}

fn run_quiet(cmd: &mut Command) {
    let status = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "{cmd:?} failed: {status}");
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() {
    let n = iterations();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let ws = tempfile::Builder::new()
        .prefix("zc-bench-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let profile = Profile::for_workspace(ws.path());
    let bare = mean(n, || run_quiet(&mut Command::new("/bin/true")));
    let paced = n.min(100);
    let bare_paced = mean_paced(paced, || run_quiet(&mut Command::new("/bin/true")));
    println!("{n} spawns each ({paced} paced, {PACE:?} apart); mean per spawn\n");
    println!("{:<34} {:>9.3} ms", "bare /bin/true", ms(bare));
    println!("{:<34} {:>9.3} ms", "bare /bin/true, paced", ms(bare_paced));
    for choice in [
        BackendChoice::Namespaces,
        BackendChoice::Bubblewrap,
        BackendChoice::Landlock,
    ] {
        let sandbox = match Sandbox::new(choice, false) {
            Ok(s) => s.with_helper(env!("CARGO_BIN_EXE_zeroclaw-sandbox-helper")),
            Err(e) => {
                println!("{:<34} skipped: {e}", format!("launcher {choice}"));
                continue;
            }
        };
        let once = || {
            let o = rt
                .block_on(sandbox.run(&profile, ["/bin/true"], std::future::pending()))
                .unwrap();
            assert_eq!(o.shell_code(), 0);
        };
        let t = mean(n, once);
        report(&format!("launcher {choice}"), t, bare);
        let t = mean_paced(paced, once);
        report(&format!("launcher {choice}, paced"), t, bare_paced);
    }
    cli_versus_bwrap(n, ws.path());
}

fn report(what: &str, t: Duration, base: Duration) {
    println!(
        "{what:<34} {:>9.3} ms  ratio {:>5.2}x  overhead {:+.3} ms",
        ms(t),
        t.as_secs_f64() / base.as_secs_f64(),
        ms(t) - ms(base)
    );
}

fn cli_versus_bwrap(n: u32, ws: &std::path::Path) {
    let zeroclaw = std::env::var_os("ZEROCLAW_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/release/zeroclaw")
        });
    if !zeroclaw.exists() {
        println!(
            "\nzeroclaw CLI skipped: {} missing (cargo build --release --bin zeroclaw)",
            zeroclaw.display()
        );
        return;
    }
    let mut bwrap = || {
        run_quiet(Command::new("bwrap").args([
            "--ro-bind",
            "/",
            "/",
            "--unshare-all",
            "--",
            "true",
        ]))
    };
    let mut cli = || {
        run_quiet(
            Command::new(&zeroclaw)
                // zeroclaw reads ZEROCLAW_* variables as configuration, and has no `bin` key.
                .env_remove("ZEROCLAW_BIN")
                .args(["sandbox", "run", "--workspace"])
                .arg(ws)
                .args(["--", "true"]),
        )
    };
    let (bwrap, cli) = medians_taking_turns(n, &mut bwrap, &mut cli);
    println!(
        "\n{:<34} {:>9.3} ms  (median, runs taking turns)",
        "bwrap --ro-bind / / --unshare-all",
        ms(bwrap)
    );
    println!(
        "{:<34} {:>9.3} ms  ratio {:>5.2}x vs bwrap",
        "zeroclaw sandbox run -- true",
        ms(cli),
        cli.as_secs_f64() / bwrap.as_secs_f64()
    );
}

/// The median time of `a` and of `b`, run in turns (`a`, `b`, `a`, ...) `n` times each, so
/// that both see the same moments of a noisy machine (and the work each leaves to the kernel,
/// such as tearing down a network namespace, falls on both).
fn medians_taking_turns(n: u32, a: &mut dyn FnMut(), b: &mut dyn FnMut()) -> (Duration, Duration) {
    let time = |f: &mut dyn FnMut()| {
        let start = Instant::now();
        f();
        start.elapsed()
    };
    for _ in 0..n / 10 {
        a();
        b();
    }
    let (mut ta, mut tb) = (Vec::new(), Vec::new());
    for _ in 0..n {
        ta.push(time(a));
        tb.push(time(b));
    }
    let median = |mut t: Vec<Duration>| {
        t.sort();
        t[t.len() / 2]
    };
    (median(ta), median(tb))
}
