//! The Linux backends under test and whether this machine has them.
//!
//! Availability is probed once per test binary by running `zeroclaw sandbox run --backend B --
//! /bin/true` for real: a backend counts as available only when a confined command runs.
//! A missing backend is a printed skip on a developer machine and a test failure when `CI=true`.

use std::collections::HashMap;
use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;

use super::run::{Runner, zeroclaw};

/// A confinement backend of `zeroclaw sandbox run --backend NAME`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Backend {
    Namespaces,
    /// The namespaces backend through the launcher tool calls take, the attack served by a
    /// helper prepared ahead of it (`--through-launcher`).
    NamespacesWarm,
    Bubblewrap,
    Landlock,
}

impl Backend {
    /// Every backend that must be tested on Linux (Seatbelt is macOS-only).
    pub const ALL: [Backend; 4] = [
        Backend::Namespaces,
        Backend::NamespacesWarm,
        Backend::Bubblewrap,
        Backend::Landlock,
    ];

    /// The name the CLI takes.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Namespaces | Backend::NamespacesWarm => "namespaces",
            Backend::Bubblewrap => "bubblewrap",
            Backend::Landlock => "landlock",
        }
    }

    /// Flags of `zeroclaw sandbox run` beside `--backend NAME`.
    pub fn flags(self) -> &'static [&'static str] {
        match self {
            Backend::NamespacesWarm => &["--through-launcher"],
            _ => &[],
        }
    }

    /// Whether the backend has its own network and PID namespaces (Landlock-only does not).
    pub fn has_namespaces(self) -> bool {
        !matches!(self, Backend::Landlock)
    }

    /// `true` when tests should run on this backend; `false` (after printing why) on a
    /// developer machine without it. Panics when `CI=true` and the backend is missing.
    pub fn available(self, test: &str) -> bool {
        if selftest() {
            return true;
        }
        let Err(reason) = probe_all()[&self].clone() else {
            return true;
        };
        crate::support::require_feature(&format!(
            "backend {} unavailable for {test}: {reason}",
            self.name()
        ));
        false
    }
}

/// `ZC_ESCAPE_SELFTEST=1` runs every "confined" attempt unconfined instead: each attack test
/// must then fail with `ESCAPE` — the proof that the suite can fail. Never set on CI.
pub fn selftest() -> bool {
    std::env::var("ZC_ESCAPE_SELFTEST").is_ok_and(|v| v == "1")
}

fn probe_all() -> &'static HashMap<Backend, Result<(), String>> {
    static PROBES: OnceLock<HashMap<Backend, Result<(), String>>> = OnceLock::new();
    PROBES.get_or_init(|| Backend::ALL.iter().map(|&b| (b, probe(b))).collect())
}

fn probe(backend: Backend) -> Result<(), String> {
    let dir = super::world::scratch_dir();
    let ws = dir.path();
    let run = Runner::new(zeroclaw(), ws)
        .args(["sandbox", "run", "--backend", backend.name()])
        .args(backend.flags())
        .arg("--workspace")
        .arg(ws)
        .args(["--", "/bin/sh", "-c", "echo probe-ok"])
        .deadline(Duration::from_secs(60))
        .run();
    if run.status_code() == Some(0) && run.stdout.contains("probe-ok") {
        return Ok(());
    }
    Err(format!(
        "probe exited {:?}; stderr: {}; doctor: {}",
        run.status_code(),
        run.stderr.trim(),
        doctor_summary(ws)
    ))
}

fn doctor_summary(cwd: &Path) -> String {
    let run = Runner::new(zeroclaw(), cwd)
        .args(["doctor", "--json"])
        .deadline(Duration::from_secs(60))
        .run();
    run.stdout.trim().chars().take(2000).collect()
}
