//! Harness shared by the sandbox escape and functional suites (`tests/sandbox/`).
//!
//! It owns everything a confinement test needs around the real `zeroclaw` binary:
//! - [`backend`]: which Linux backends exist here (`support::require_feature` when one is
//!   missing: skip with a reason, fail when `CI=true`);
//! - [`world`]: a temporary workspace beside "outside" places (a fake `$HOME` full of canary
//!   secrets, another workspace, a daemon config dir) that a confined child must not reach;
//! - [`run`]: runs a shell script confined (`zeroclaw sandbox run`) or unconfined (the positive
//!   control) with a deadline, and prints command, cwd, status and output when a test fails;
//! - [`procs`]: background processes the tests start outside (killed and reaped on drop) and a
//!   `/proc` scan for survivors carrying a unique marker.
//!
//! Every attack is judged from outside and proves, with its unconfined twin, that it could fail.
//!
//! Running: `cargo test --test sandbox` (add `-- sandbox_escape_fs::` for one file's attacks,
//! `CI=true` to turn a missing backend into a failure). Test names are
//! `<file>::<attack>::<backend>`.
//! `ZC_ESCAPE_SELFTEST=1` runs the confined half unconfined instead: every
//! attack must then fail with `ESCAPE` (it flips a harmless sysctl and lets the memory test
//! touch 4.5 GiB, so skip `memory_limit` on a shared machine).
#![allow(dead_code)]

/// Generates one `#[test]` per backend for the attack function of the same name:
/// `per_backend!(read_ssh_keys);` gives `read_ssh_keys::{namespaces, namespaces_warm,
/// bubblewrap, landlock}`, each skipping (or failing on CI) when its backend is missing
/// (`namespaces_warm`: the namespaces backend through the launcher, served by a warm helper). What the reduced Landlock-only rung
/// (which `auto` never picks) cannot guarantee is marked
/// `per_backend!(name, landlock: "reduced rung (chosen only by name): ...")`, which ignores
/// that test only.
#[allow(unused_macros)]
macro_rules! per_backend {
    ($name:ident $(, namespaces: $ns:literal)? $(, bubblewrap: $bw:literal)? $(, landlock: $ll:literal)?) => {
        mod $name {
            use $crate::sandbox_support::{Backend, attempt};

            #[test]
            $(#[ignore = $ns])?
            fn namespaces() {
                attempt(Backend::Namespaces, stringify!($name), super::$name);
            }

            #[test]
            $(#[ignore = $ns])?
            fn namespaces_warm() {
                attempt(Backend::NamespacesWarm, stringify!($name), super::$name);
            }

            #[test]
            $(#[ignore = $bw])?
            fn bubblewrap() {
                attempt(Backend::Bubblewrap, stringify!($name), super::$name);
            }

            #[test]
            $(#[ignore = $ll])?
            fn landlock() {
                attempt(Backend::Landlock, stringify!($name), super::$name);
            }
        }
    };
}

pub mod backend;
pub mod judge;
pub mod procs;
pub mod py;
pub mod run;
pub mod world;

pub use backend::Backend;
pub use world::World;

/// Runs `attack` on `backend` in a fresh [`World`] unless the backend is missing here.
pub fn attempt(backend: Backend, name: &str, attack: fn(&World, Backend)) {
    if backend.available(name) {
        attack(&World::new(), backend);
    }
}

/// Printed by every attack script before it attempts anything: a run without it never reached
/// the attack (missing binary, sandbox setup failure) and must not count as "blocked".
pub const ATTEMPT: &str = "ZC_ATTEMPT_REACHED";

/// Printed by attack scripts when the forbidden action succeeded.
pub const ESCAPED: &str = "ZC_ESCAPED";

/// The system Python (not a pyenv shim under `$HOME`, which a confined child cannot see).
pub const PYTHON: &str = "/usr/bin/python3";

/// Whether `backend` gives a call the transactional workspace's layer here whatever the
/// workspace holds: the namespace backends, and bubblewrap when the tests run as root (bwrap
/// launched by another user has one only in a workspace without `.git`:
/// `sandbox_layer::clone_into_an_empty_workspace_as_nobody`). A test of the layer returns
/// early, saying so, where it has none.
pub fn has_layer(backend: Backend) -> bool {
    if !layered(backend) {
        eprintln!("skipped: bubblewrap launched by a non-root user has no layer (see doctor)");
        return false;
    }
    true
}

/// [`has_layer`], quietly: for a test whose expectation differs with the layer.
pub fn layered(backend: Backend) -> bool {
    use std::os::unix::fs::MetadataExt;
    let root = std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0);
    backend != Backend::Bubblewrap || root
}
