//! `zeroclaw sandbox run`: runs one command confined with exactly the defaults a supervised
//! session's shell tool uses: the configuration's `[sandbox]` backend, `allow_partial` and
//! `[sandbox.limits]` (loaded as every other command loads it), flags overriding them, and a
//! session's denied paths (`[autonomy] forbidden_paths`, the config directory,
//! `workspace_dir`, ...), and the persistent package caches a stdio session of the default
//! agent gets in that workspace (`crate::caches`; `--no-caches`: none). Exit code: the
//! command's (128 + signal when killed); 124 wall-time limit; 123 output limit; 125 the sandbox could not be set up (a workspace or extra root
//! that does not exist, a workspace or writable root inside a denied path, an invalid
//! configuration); 126/127 the command could not be executed / was not found inside the
//! sandbox; 2 bad arguments (clap).

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::builder::TypedValueParser;
use zeroclaw_sandbox::{
    BackendChoice, End, Network, Profile, Sandbox, SandboxError, SetupError, Stage, Stream,
};

use crate::config::Config;
use crate::policy::Policy;

/// Exit code when the sandbox itself failed.
pub const EXIT_SETUP: u8 = 125;
/// Exit code when the wall-time limit killed the command.
pub const EXIT_TIMEOUT: u8 = 124;
/// Exit code when the output limit killed the command.
pub const EXIT_OUTPUT_LIMIT: u8 = 123;
/// Exit code when the command exists but cannot be executed.
pub const EXIT_NOT_EXECUTABLE: u8 = 126;
/// Exit code when the command is not found inside the sandbox.
pub const EXIT_NOT_FOUND: u8 = 127;

/// `zeroclaw sandbox <subcommand>`.
#[derive(Debug, clap::Subcommand)]
pub enum SandboxCommand {
    /// Run a command confined (exit code: the command's; 125 when the sandbox fails).
    Run(SandboxRunArgs),
}

/// Arguments of `zeroclaw sandbox run`.
#[derive(Debug, clap::Args)]
pub struct SandboxRunArgs {
    /// Configuration directory (default: $ZEROCLAW_CONFIG_DIR, else ~/.zeroclaw).
    #[arg(long)]
    pub config_dir: Option<PathBuf>,
    /// Workspace (read-write, cwd); defaults to the current directory.
    #[arg(long)]
    pub workspace: Option<PathBuf>,
    /// Network policy (`proxy`: only the names the egress policy allows, through zeroclaw's
    /// proxy; the policy is the configuration's `[sandbox.network]`).
    #[arg(
        long,
        default_value = "deny",
        value_parser = clap::builder::PossibleValuesParser::new(["deny", "proxy", "allow"]).map(network)
    )]
    pub network: Network,
    /// With `--network proxy`: a name (or `*.suffix`) the proxy admits (repeatable; replaces
    /// `[sandbox.network] allow_domains`).
    #[arg(long = "allow-domain", value_name = "NAME")]
    pub allow_domain: Vec<String>,
    /// With `--network proxy`: a name (or `*.suffix`) refused even when allowed (repeatable;
    /// replaces `[sandbox.network] deny_domains`).
    #[arg(long = "deny-domain", value_name = "NAME")]
    pub deny_domain: Vec<String>,
    /// Backend: auto, namespaces, bubblewrap, landlock, seatbelt, none (overrides the config).
    #[arg(long)]
    pub backend: Option<BackendChoice>,
    /// Accept a partially enforced Landlock ruleset (old kernels).
    #[arg(long)]
    pub allow_partial: bool,
    /// Wall-time limit in seconds (overrides [sandbox.limits].wall_time_secs).
    #[arg(long)]
    pub timeout: Option<u64>,
    /// Memory limit in MiB: per process (`RLIMIT_DATA`) and, where a memory cgroup is
    /// available (root), the whole execution's.
    #[arg(long = "memory-mb", value_name = "MIB")]
    pub memory_mb: Option<u64>,
    /// What the run may write into the workspace in MiB (its layer, on the namespaces and
    /// bubblewrap backends; overrides [sandbox.limits].written_mb; 0: no bound).
    #[arg(long = "written-mb", value_name = "MIB")]
    pub written_mb: Option<u64>,
    /// A workspace inside a larger repository: read-only (that repository's worktree visible
    /// read-only, its git directory staged) or hidden (overrides [sandbox.git]
    /// parent_worktree).
    #[arg(long = "parent-worktree", value_name = "read-only|hidden")]
    pub parent_worktree: Option<zeroclaw_sandbox::profile::ParentWorktree>,
    /// Extra read-only root (repeatable; must exist).
    #[arg(long = "allow-read", value_name = "PATH")]
    pub allow_read: Vec<PathBuf>,
    /// Extra read-write root (repeatable; must exist).
    #[arg(long = "allow-write", value_name = "PATH")]
    pub allow_write: Vec<PathBuf>,
    /// Run through the launcher tool calls take (a zygote, and on the namespaces backend a
    /// helper prepared after a first `true`) instead of forking in place. A test hook: the
    /// escape suite runs every attack this way too.
    #[arg(long, hide = true)]
    pub through_launcher: bool,
    /// Without the persistent package caches (`[sandbox.caches]`): the HOME is all private.
    #[arg(long)]
    pub no_caches: bool,
    /// The command and its arguments (after `--`).
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

/// Loads the configuration (`--config-dir`, else `ZEROCLAW_CONFIG_DIR`, else `~/.zeroclaw`, and
/// the `ZEROCLAW_*` overlay) and runs with its `[sandbox]` settings and the denied paths of
/// its `[autonomy]` (a session's: [`Policy::for_config`]); flags override the settings.
/// Must be called before any other thread exists: the command is confined by a child forked
/// from this process ([`Sandbox::run_foreground`]), not by a re-executed helper.
pub fn run(args: SandboxRunArgs) -> ExitCode {
    let config = match Config::load(args.config_dir.as_deref()) {
        Ok(config) => config,
        Err(e) => return fail(&e.to_string()),
    };
    let policy = Policy::for_config(&config);
    let egress = match super::sandbox_network::policy(
        args.network,
        &args.allow_domain,
        &args.deny_domain,
        &config.sandbox.network,
    ) {
        Ok(egress) => egress,
        Err(e) => return fail(&e),
    };
    // The caches a stdio session of the default agent in this workspace gets.
    let agent = crate::acp::agents::resolve_for_new(&config, None, None)
        .unwrap_or_else(|_| "default".to_owned());
    run_with(args, &policy, egress, &agent)
}

/// Runs with the policy's backend, `allow_partial`, limits, denied paths and the persistent
/// caches of the local user's `agent` (unless `--no-caches`); flags override the first three.
pub fn run_with(
    args: SandboxRunArgs,
    policy: &Policy,
    egress: Option<crate::egress::EgressPolicy>,
    agent: &str,
) -> ExitCode {
    let backend = args.backend.unwrap_or(policy.backend);
    let allow_partial = args.allow_partial || policy.allow_partial;
    let profile = match profile(&args, policy, agent) {
        Ok(p) => Ok(p.egress_ports(egress.as_ref().map(|e| e.ports()).unwrap_or_default())),
        Err(e) => Err(e),
    };
    let profile = match profile {
        Ok(p) => p,
        Err(e) => return fail(&e),
    };
    // The run itself tries user namespaces (no probe child first) and bwrap (no preflight
    // run). When `auto` finds namespaces blocked there, or bwrap fails, nothing has run yet:
    // the probed choice takes over, or explains what is unavailable.
    // One shot: the process exits right after, so each call waits for its helper's clean-up.
    let sandbox = match Sandbox::new_unprobed(backend, allow_partial) {
        Ok(s) => s.settling(),
        Err(e) => return explain(e),
    };
    let result = run_once(&sandbox, &profile, &args, egress.as_ref());
    let failed_at = |stage: Stage| matches!(&result, Err(SandboxError::Setup(SetupError { stage: s, .. })) if *s == stage);
    let trial_failed = (failed_at(Stage::Namespaces) && backend == BackendChoice::Auto)
        || failed_at(Stage::Bubblewrap);
    if trial_failed {
        match Sandbox::new(backend, allow_partial) {
            Ok(probed) if probed.backend() != sandbox.backend() => {
                let probed = probed.settling();
                return report(run_once(&probed, &profile, &args, egress.as_ref()));
            }
            Ok(_) => {}
            Err(e) => return explain(e),
        }
    }
    report(result)
}

fn run_once(
    sandbox: &Sandbox,
    profile: &Profile,
    args: &SandboxRunArgs,
    egress: Option<&crate::egress::EgressPolicy>,
) -> Result<zeroclaw_sandbox::Outcome, SandboxError> {
    if sandbox.backend() == zeroclaw_sandbox::Backend::None {
        eprintln!("zeroclaw sandbox: WARNING backend = none, the command runs unconfined");
    }
    let on_output = |stream: Stream, bytes: &[u8]| {
        let _ = match stream {
            Stream::Stdout => std::io::stdout()
                .lock()
                .write_all(bytes)
                .and_then(|_| std::io::stdout().flush()),
            Stream::Stderr => std::io::stderr().lock().write_all(bytes),
        };
    };
    if let Some(policy) = egress {
        return super::sandbox_network::run(
            sandbox,
            profile,
            &args.command,
            policy,
            args.through_launcher,
            on_output,
        );
    }
    if args.through_launcher {
        return through_launcher(sandbox, profile, &args.command, on_output);
    }
    sandbox.run_foreground(profile, &args.command, on_output)
}

/// `--through-launcher`: `true`, then the command, through the async launcher (stdin closed).
fn through_launcher(
    sandbox: &Sandbox,
    profile: &Profile,
    command: &[OsString],
    on_output: impl FnMut(Stream, &[u8]),
) -> Result<zeroclaw_sandbox::Outcome, SandboxError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        sandbox
            .run(profile, ["true"], std::future::pending())
            .await?;
        let mut child = sandbox.spawn(profile, command).await?;
        drop(child.take_stdin());
        child.wait(on_output, std::future::pending()).await
    })
}

fn report(result: Result<zeroclaw_sandbox::Outcome, SandboxError>) -> ExitCode {
    if let Ok(o) = &result
        && !o.findings.discarded.is_empty()
    {
        eprintln!(
            "zeroclaw sandbox: the files the command left in {} were discarded (private to the run)",
            o.findings.discarded.join(" and ")
        );
    }
    if result.as_ref().is_ok_and(|o| o.findings.git_config_changed) {
        eprintln!(
            "zeroclaw sandbox: the command changed the global git config (a copy private to \
             the run; ~/.gitconfig is unchanged)"
        );
    }
    match result {
        Ok(o) => match o.end {
            End::TimedOut => {
                eprintln!("zeroclaw sandbox: wall-time limit reached; the process tree was killed");
                ExitCode::from(EXIT_TIMEOUT)
            }
            End::OutputLimit => {
                eprintln!("zeroclaw sandbox: output limit reached; the process tree was killed");
                ExitCode::from(EXIT_OUTPUT_LIMIT)
            }
            End::WriteLimit => {
                eprintln!(
                    "zeroclaw sandbox: write limit reached ([sandbox.limits] written_mb); the \
                     process tree was killed and nothing it wrote reached the workspace"
                );
                ExitCode::from(EXIT_OUTPUT_LIMIT)
            }
            End::Cancelled => ExitCode::from(130),
            End::Exited => ExitCode::from((o.shell_code() & 0xff) as u8),
        },
        Err(e) => explain(e),
    }
}

/// The profile a session in the workspace would get (its denied paths: the policy's, through
/// [`Policy::deny_forbidden`]), with this run's network, roots and limits. A workspace inside
/// a denied path is refused as a session's cwd is ([`Policy::check_cwd`]); a denied path
/// inside it is masked. The persistent caches are a stdio session's of `agent`.
fn profile(args: &SandboxRunArgs, policy: &Policy, agent: &str) -> Result<Profile, String> {
    let workspace = match &args.workspace {
        Some(w) => existing_dir("--workspace", w)?,
        None => std::env::current_dir().map_err(|e| format!("current directory: {e}"))?,
    };
    let workspace = crate::policy::resolve::normalize(&workspace);
    policy.check_cwd(&workspace)?;
    let mut p = Profile::for_workspace(&workspace)
        .network(args.network)
        .limits(crate::policy::profile::limits(&policy.limits))
        .umask(policy.umask)
        .parent_worktree(args.parent_worktree.unwrap_or(policy.parent_worktree));
    for r in &args.allow_read {
        p = p.allow_read(existing_path("--allow-read", r)?);
    }
    for w in &args.allow_write {
        p = p.allow_write(existing_path("--allow-write", w)?);
    }
    if let Some(layers) = policy.layers_for(&workspace) {
        p = p.land_through(layers);
    }
    let mut p = policy.deny_forbidden(p);
    if let Some((root, denied)) = p.root_inside_denied() {
        return Err(format!(
            "--allow-write {} is refused: it lies inside the denied path {}",
            root.display(),
            denied.display()
        ));
    }
    if let Some(t) = args.timeout {
        p.limits.wall_time = Duration::from_secs(t);
    }
    if let Some(mib) = args.memory_mb {
        p.limits.memory_bytes = mib.saturating_mul(1 << 20);
    }
    if let Some(mib) = args.written_mb {
        p.limits.written_bytes = mib.saturating_mul(1 << 20);
    }
    if !args.no_caches {
        p = policy.caches.bind(p, None, agent, &workspace);
    }
    Ok(p)
}

fn network(value: String) -> Network {
    match value.as_str() {
        "allow" => Network::Allow,
        "proxy" => Network::Proxy,
        _ => Network::Deny,
    }
}

/// `--allow-read` / `--allow-write`: a root that does not exist is a mistake, not a no-op.
fn existing_path<'a>(flag: &str, path: &'a Path) -> Result<&'a Path, String> {
    match std::fs::metadata(path) {
        Ok(_) => Ok(path),
        Err(e) => Err(missing(flag, path, e)),
    }
}

/// `--workspace`: an existing directory.
fn existing_dir(flag: &str, path: &Path) -> Result<PathBuf, String> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => Ok(path.to_owned()),
        Ok(_) => Err(format!("{flag} {} is not a directory", path.display())),
        Err(e) => Err(missing(flag, path, e)),
    }
}

fn missing(flag: &str, path: &Path, e: std::io::Error) -> String {
    if e.kind() == std::io::ErrorKind::NotFound {
        format!("{flag} {} does not exist", path.display())
    } else {
        format!("{flag} {}: {e}", path.display())
    }
}

fn fail(msg: &str) -> ExitCode {
    eprintln!("zeroclaw sandbox: {msg}");
    ExitCode::from(EXIT_SETUP)
}

fn explain(e: SandboxError) -> ExitCode {
    eprintln!("zeroclaw sandbox: {e}");
    match &e {
        SandboxError::Setup(SetupError {
            stage: Stage::Exec,
            errno,
            ..
        }) => {
            if errno.is_none() || *errno == Some(libc::ENOENT) {
                ExitCode::from(EXIT_NOT_FOUND)
            } else {
                ExitCode::from(EXIT_NOT_EXECUTABLE)
            }
        }
        SandboxError::Unavailable { .. } | SandboxError::Partial { .. } => {
            eprintln!(
                "zeroclaw sandbox: run `zeroclaw doctor` for what is missing and how to fix it"
            );
            ExitCode::from(EXIT_SETUP)
        }
        _ => ExitCode::from(EXIT_SETUP),
    }
}
