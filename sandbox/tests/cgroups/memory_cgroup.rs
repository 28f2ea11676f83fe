//! The memory cgroup of a call (as root, on every confining backend) bounds the call and is
//! gone once the call has ended, also when its `Sandbox`, and with it the zygote that reaps
//! the helper, goes right after. It holds `cgroup_support::exclusive()`, so that no other test
//! makes cgroups meanwhile.

use std::cell::Cell;
use std::path::Path;

use crate::cgroup_support;
use crate::support;

use cgroup_support::{call_cgroups, new_cgroups};
use zeroclaw_sandbox::{BackendChoice, End, Profile, Sandbox};

const HELPER: &str = env!("CARGO_BIN_EXE_zeroclaw-sandbox-helper");

#[tokio::test(flavor = "current_thread")]
async fn no_memory_cgroup_outlives_its_call_or_its_sandbox() {
    let _exclusive = cgroup_support::exclusive().await;
    let parent = match cgroup_support::parent("memory") {
        Some(p) if nix::unistd::geteuid().is_root() => p,
        _ => {
            support::require_feature("needs root and a memory cgroup controller");
            return;
        }
    };
    let ws = tempfile::Builder::new()
        .prefix("zc-memcg-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let mut profile = Profile::for_workspace(ws.path());
    profile.limits.memory_bytes = 300 << 20;
    let limit = |dir: &Path| {
        ["memory.limit_in_bytes", "memory.max"]
            .iter()
            .find_map(|f| std::fs::read_to_string(dir.join(f)).ok())
            .map(|v| v.trim().to_owned())
    };
    for choice in [
        BackendChoice::Namespaces,
        BackendChoice::Bubblewrap,
        BackendChoice::Landlock,
    ] {
        for cancelled in [false, true] {
            let sandbox = match Sandbox::new(choice, false) {
                Ok(s) => s.with_helper(HELPER),
                Err(e) => {
                    support::require_feature(&format!("backend {choice}: {e}"));
                    break;
                }
            };
            let case = format!("{choice}, cancelled: {cancelled}");
            let before = call_cgroups(&parent);
            let seen = Cell::new(Vec::new());
            let watch = async {
                let new = new_cgroups(&parent, &before, |n| n > 0).await;
                let limits: Vec<Option<String>> =
                    new.iter().map(|n| limit(&parent.join(n))).collect();
                seen.set(limits);
            };
            let outcome = if cancelled {
                sandbox.run(&profile, ["sleep", "30"], watch).await
            } else {
                let argv = ["sh", "-c", "sleep 0.5; exit 3"];
                let run = sandbox.run(&profile, argv, std::future::pending());
                tokio::join!(run, watch).0
            };
            let outcome = outcome.unwrap_or_else(|e| panic!("{case}: {e}"));
            if cancelled {
                assert_eq!(outcome.end, End::Cancelled, "{case}");
            } else {
                assert_eq!(outcome.shell_code(), 3, "{case}");
            }
            assert_eq!(
                seen.take(),
                [Some((300u64 << 20).to_string())],
                "{case}: the call had no memory cgroup with its limit"
            );
            drop(sandbox);
            let left = new_cgroups(&parent, &before, |n| n == 0).await;
            assert!(
                left.is_empty(),
                "{case}: {left:?} left in {}",
                parent.display()
            );
        }
    }
}
