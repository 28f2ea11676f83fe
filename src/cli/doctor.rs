//! `zeroclaw doctor`: prints the sandbox capability report (a table, or JSON with `--json`)
//! and exits non-zero when the configured sandbox cannot be applied.

use std::io::Write;
use std::process::ExitCode;

use zeroclaw_sandbox::BackendChoice;
use zeroclaw_sandbox::detect::{Report, report};

/// Arguments of `zeroclaw doctor`.
#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Backend to check (overrides the config): auto, namespaces, bubblewrap, landlock, seatbelt, none.
    #[arg(long)]
    pub backend: Option<BackendChoice>,
    /// Accept a partially enforced Landlock ruleset.
    #[arg(long)]
    pub allow_partial: bool,
}

/// Checks `backend = auto`, `allow_partial = false` unless flags say otherwise.
pub fn run(args: DoctorArgs) -> ExitCode {
    run_with(args, BackendChoice::Auto, false)
}

/// Checks the config's `[sandbox] backend` and `allow_partial`; flags override them.
pub fn run_with(args: DoctorArgs, backend: BackendChoice, allow_partial: bool) -> ExitCode {
    let r = report(
        args.backend.unwrap_or(backend),
        args.allow_partial || allow_partial,
    );
    let text = if args.json {
        serde_json::to_string_pretty(&r).unwrap_or_default() + "\n"
    } else {
        table(&r)
    };
    // A closed pipe (`| head`) is not an error worth a panic.
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
    if r.chosen.is_some() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn yes(ok: bool) -> &'static str {
    if ok { "ok" } else { "no" }
}

/// The human-readable report.
pub fn table(r: &Report) -> String {
    let p = &r.probes;
    let mut s = String::new();
    s += &format!(
        "requested backend  {} (allow_partial = {})\n",
        r.requested, r.allow_partial
    );
    match (&r.chosen, &r.error) {
        (Some(b), _) => s += &format!("chosen backend     {b}\n"),
        (None, Some(e)) => s += &format!("chosen backend     NONE USABLE: {e}\n"),
        (None, None) => s += "chosen backend     none\n",
    }
    s += &format!("kernel             {}\n\nprobes\n", p.kernel);
    let landlock = if p.landlock_abi > 0 {
        format!("ABI {}", p.landlock_abi)
    } else {
        "unavailable".into()
    };
    s += &format!(
        "  {:<16} {:<3} {}\n",
        "landlock",
        yes(p.landlock_abi > 0),
        landlock
    );
    for (name, c) in [
        ("seccomp", &p.seccomp),
        ("user namespaces", &p.user_namespaces),
        ("bubblewrap", &p.bubblewrap),
        ("cgroup v2", &p.cgroup_v2),
        ("memory cgroup", &p.memory_cgroup),
        ("sandbox-exec", &p.sandbox_exec),
    ] {
        s += &format!("  {:<16} {:<3} {}\n", name, yes(c.ok), c.detail);
    }
    s += "\nbackends\n";
    for b in &r.backends {
        let state = match (b.available, b.partial) {
            (true, false) => "available".to_string(),
            (true, true) => "partial (needs allow_partial)".to_string(),
            (false, _) => format!("unavailable: {}", b.reason),
        };
        s += &format!("  {:<11} {state}\n", b.backend.name());
    }
    if !r.guarantees.is_empty() {
        s += "\nguarantees\n";
        for g in &r.guarantees {
            s += &format!("  - {}  [{}]\n", g.what, g.mechanism);
        }
    }
    if !r.missing.is_empty() {
        s += "\nmissing\n";
        for m in &r.missing {
            s += &format!("  - {m}\n");
        }
    }
    s
}
