//! `zeroclaw doctor`'s "root-only files" section: when zeroclaw runs as root (its children then
//! run as uid 0), what of a session's read-only roots a child can read that the host's other
//! users cannot, on the chosen rung (`zeroclaw_sandbox::detect::root_readable`, a bounded
//! scan), with the fix.

use std::path::Path;

use zeroclaw_sandbox::Backend;
use zeroclaw_sandbox::detect::{RootReadable, SCAN_CAP, root_readable};

use crate::policy::Policy;

/// Paths the table shows (`--json` lists up to `LIST_CAP`).
const SHOWN: usize = 20;

/// The scan for a session of `policy` on `backend`; `None` unless zeroclaw runs as root on
/// a rung that confines reads.
pub fn scan(backend: Option<Backend>, policy: &Policy) -> Option<RootReadable> {
    if !nix::unistd::geteuid().is_root() {
        return None;
    }
    let cwd = std::env::current_dir().unwrap_or_else(|_| "/".into());
    let profile = policy.profile(&cwd, &[]);
    root_readable(backend?, &profile, SCAN_CAP)
}

/// The human-readable section.
pub fn table(r: &RootReadable) -> String {
    let mut s = format!(
        "\nroot-only files readable on {} (zeroclaw runs as root: a child is uid 0)\n",
        r.backend
    );
    s += &format!("  covered by the rung: {}\n", r.covered);
    let roots: Vec<_> = r.roots.iter().map(|p| p.display().to_string()).collect();
    s += &format!("  scanned: {}\n", roots.join(", "));
    if !r.not_scanned.is_empty() {
        let rest: Vec<_> = r
            .not_scanned
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        s += &format!(
            "  NOT scanned (the scan stopped first): {}\n",
            rest.join(", ")
        );
    }
    let found = if r.complete {
        format!("  {} readable only by root, NOT masked:\n", r.count)
    } else {
        format!(
            "  {} readable only by root, NOT masked, before the scan stopped after {SCAN_CAP} \
             entries, in {} (more may remain):\n",
            r.count,
            r.roots
                .last()
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        )
    };
    s += &found;
    for p in r.paths.iter().take(SHOWN) {
        s += &format!("    {}{}\n", p.display(), dir_mark(p));
    }
    if r.count > SHOWN {
        s += &format!("    ... and {} more (--json lists more)\n", r.count - SHOWN);
    }
    if r.count > 0 || !r.complete {
        s += "  fix: run zeroclaw as a non-root user (the packaged service's User=zeroclaw)\n";
    }
    s
}

fn dir_mark(p: &Path) -> &'static str {
    if p.is_dir() {
        "/ (and everything below)"
    } else {
        ""
    }
}
