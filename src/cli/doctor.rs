//! `zeroclaw doctor`: prints the sandbox capability report (a table, or JSON with `--json`),
//! and when zeroclaw runs as root what root-only files a child could read on the chosen rung
//! (`root_readable`), and what the configured `[autonomy]` level's tool children read, write
//! and reach (`crate::policy::describe`), with a warning when `full_host_writes` is on, and
//! the persistent caches' sizes (`doctor_caches`).
//! Exit codes: 0 the configured sandbox applies; 1 it cannot be applied; 78 (`EX_CONFIG`) the
//! configuration is invalid (with `--json`, a JSON error object on stdout); 2 bad arguments.

use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::json;
use zeroclaw_sandbox::BackendChoice;
use zeroclaw_sandbox::detect::{Report, report};

use super::{doctor_caches, doctor_network, doctor_root_files, terminal};
use crate::config::{Config, NetworkConfig};
use crate::policy::{Policy, describe};

/// Exit code when the configuration is invalid (sysexits' `EX_CONFIG`, clear of clap's 2).
pub const EXIT_CONFIG_INVALID: u8 = 78;

/// Arguments of `zeroclaw doctor`.
#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// Configuration directory (default: $ZEROCLAW_CONFIG_DIR, else ~/.zeroclaw).
    #[arg(long)]
    pub config_dir: Option<PathBuf>,
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

/// Loads the configuration and checks its `[sandbox] backend` and `allow_partial`; flags
/// override them. An invalid configuration is reported (as JSON with `--json`) and exits 78.
pub fn run(args: DoctorArgs) -> anyhow::Result<ExitCode> {
    match Config::load(args.config_dir.as_deref()) {
        Ok(config) => run_with_network(args, &Policy::for_config(&config), Some(&config)),
        Err(e) => config_invalid(args.json, &e.to_string()),
    }
}

fn config_invalid(as_json: bool, message: &str) -> anyhow::Result<ExitCode> {
    if as_json {
        let error = json!({"error": {"kind": "config_invalid", "message": message}});
        let text = serde_json::to_string_pretty(&error).unwrap_or_default() + "\n";
        terminal::stdout().raw(&text)?;
    } else {
        eprintln!("zeroclaw: {message}");
    }
    Ok(ExitCode::from(EXIT_CONFIG_INVALID))
}

/// Checks the config's `[sandbox] backend` and `allow_partial`; flags override them.
pub fn run_with(
    args: DoctorArgs,
    backend: BackendChoice,
    allow_partial: bool,
) -> anyhow::Result<ExitCode> {
    let policy = Policy {
        backend,
        allow_partial,
        ..Policy::default()
    };
    run_with_network(args, &policy, None)
}

/// [`run_with`] for a session of `policy` (its backend, `allow_partial` and read-only roots),
/// also showing the effective `[sandbox.network]` policy when the configuration is given.
fn run_with_network(
    args: DoctorArgs,
    policy: &Policy,
    config: Option<&Config>,
) -> anyhow::Result<ExitCode> {
    let r = report(
        args.backend.unwrap_or(policy.backend),
        args.allow_partial || policy.allow_partial,
    );
    let network: Option<&NetworkConfig> = config.map(|c| &c.sandbox.network);
    let network = network.map(|n| doctor_network::describe(n, &r));
    let root_files = doctor_root_files::scan(r.chosen, policy);
    // What the configured level's children get, when there is a configuration.
    let session = config.map(|_| policy);
    if args.json {
        let mut value = serde_json::to_value(&r).unwrap_or_default();
        if let (Some(map), Some(n)) = (value.as_object_mut(), &network) {
            map.insert("network".into(), n.to_json());
        }
        if let (Some(map), Some(files)) = (value.as_object_mut(), &root_files) {
            map.insert(
                "root_readable".into(),
                serde_json::to_value(files).unwrap_or_default(),
            );
        }
        if let (Some(map), Some(policy)) = (value.as_object_mut(), session) {
            map.insert("policy".into(), policy_json(policy, &r));
            map.insert("caches".into(), doctor_caches::json(&policy.caches));
        }
        terminal::stdout()
            .raw(&(serde_json::to_string_pretty(&value).unwrap_or_default() + "\n"))?;
    } else {
        let mut text = table(&r, session.is_some());
        if let Some(files) = &root_files {
            text += &doctor_root_files::table(files);
        }
        if let Some(n) = &network {
            text += &n.table();
        }
        if let Some(policy) = session {
            text += &policy_table(policy, &r);
            text += &doctor_caches::table(&policy.caches);
        }
        terminal::stdout().lines(&text)?;
    }
    Ok(if r.chosen.is_some() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn yes(ok: bool) -> &'static str {
    if ok { "ok" } else { "no" }
}

/// The configured level's reads, writes, network and what is not enforced, and the warning
/// of `full_host_writes`.
fn policy_table(policy: &Policy, r: &Report) -> String {
    let level = crate::acp::modes::id(policy.level);
    let mut s =
        format!("\nsession policy ([autonomy] level = {level}; an agent's override may differ)\n");
    for line in policy_warnings(policy) {
        s += &format!("  {line}\n");
    }
    for line in describe::lines(policy, None, r.chosen) {
        s += &format!("  - {line}\n");
    }
    s
}

fn policy_json(policy: &Policy, r: &Report) -> serde_json::Value {
    json!({
        "level": crate::acp::modes::id(policy.level),
        "lines": describe::lines(policy, None, r.chosen),
        "warnings": policy_warnings(policy),
    })
}

fn policy_warnings(policy: &Policy) -> Vec<String> {
    let mut out = Vec::new();
    if policy.full_host_writes {
        out.push(
            "WARNING: [autonomy] full_host_writes = true: a full session's children write the \
             host outside their workspace (never the never-writable paths)"
                .to_owned(),
        );
    }
    out
}

/// The human-readable report; with `session`, the report's lines on reads, writes and the
/// network (its default profile's) are left to the session policy section.
pub fn table(r: &Report, session: bool) -> String {
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
        ("pids cgroup", &p.process_limit.pids_cgroup),
        ("pid_max per ns", &p.process_limit.pid_namespace_pid_max),
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
        for g in r
            .guarantees
            .iter()
            .filter(|g| !(session && describe::replaces(&g.what)))
        {
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
