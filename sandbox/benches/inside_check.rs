//! The inside check's cost (`helper/inside_check.rs`): each confined call times its own check
//! and reports it (`Enforcement::checked.nanos`); this runs paced calls of `/bin/true` on each
//! backend available here and prints, in the same run, the mean check time against the mean
//! call time, apart for calls served by a warm helper (which checked while it was prepared,
//! before the call arrived) and cold ones.
//!
//! `cargo bench -p zeroclaw-sandbox --bench inside_check` (`SPAWN_ITERATIONS`: the count).

use std::time::{Duration, Instant};

use zeroclaw_sandbox::{BackendChoice, Profile, Sandbox};

fn main() {
    let n: u32 = std::env::var("SPAWN_ITERATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let ws = tempfile::Builder::new()
        .prefix("zc-bench-inside-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let profile = Profile::for_workspace(ws.path());
    println!("{n} paced calls of /bin/true per backend (20 ms apart); means\n");
    for choice in [
        BackendChoice::Namespaces,
        BackendChoice::Bubblewrap,
        BackendChoice::Landlock,
    ] {
        let sandbox = match Sandbox::new(choice, false) {
            Ok(s) => s.with_helper(env!("CARGO_BIN_EXE_zeroclaw-sandbox-helper")),
            Err(e) => {
                println!("{choice:<11} skipped: {e}");
                continue;
            }
        };
        // (calls, call time, check time) for warm and cold calls.
        let mut rows = [(0u32, Duration::ZERO, Duration::ZERO); 2];
        for _ in 0..n {
            std::thread::sleep(Duration::from_millis(20));
            let start = Instant::now();
            let o = rt
                .block_on(sandbox.run(&profile, ["/bin/true"], std::future::pending()))
                .unwrap();
            let took = start.elapsed();
            assert_eq!(o.shell_code(), 0);
            let checked = o.enforcement.checked.expect("no inside check reported");
            let row = &mut rows[usize::from(!o.enforcement.warm)];
            row.0 += 1;
            row.1 += took;
            row.2 += Duration::from_nanos(checked.nanos);
        }
        for (row, kind) in rows.iter().zip(["warm", "cold"]) {
            if row.0 == 0 {
                continue;
            }
            let (call, check) = (row.1 / row.0, row.2 / row.0);
            println!(
                "{choice:<11} {kind}: {:>4} calls  call {:>8.3} ms  inside check {:>7.1} us  ({:.2}% of the call)",
                row.0,
                call.as_secs_f64() * 1e3,
                check.as_secs_f64() * 1e6,
                100.0 * check.as_secs_f64() / call.as_secs_f64()
            );
        }
    }
}
