//! The `zeroclaw` command line: `acp` (the ACP server on stdio), `daemon` (ACP over
//! WebSocket), `token`, `config`, `sessions`, `audit`, `sandbox run`, `doctor`.

#![forbid(unsafe_code)]

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use zeroclaw::cli::acp_cmd::{self, AcpArgs};
use zeroclaw::cli::attest_cmd::{self, AttestArgs};
use zeroclaw::cli::audit_cmd::{self, AuditArgs};
use zeroclaw::cli::config_cmd::{self, ConfigArgs};
use zeroclaw::cli::sessions_cmd::{self, SessionsArgs};
use zeroclaw::cli::store_cmd::{self, StoreArgs};
use zeroclaw::cli::token_cmd::{self, TokenArgs};
use zeroclaw::cli::{doctor, sandbox, terminal};
use zeroclaw::gateway::daemon::{self, DaemonArgs};

#[derive(Parser)]
#[command(
    name = "zeroclaw",
    version,
    about = "A hardened agent host driven over ACP"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the Agent Client Protocol on stdin/stdout.
    Acp(AcpArgs),
    /// Serve ACP over WebSocket (`/acp`) on Unix and TCP sockets, for many clients.
    Daemon(DaemonArgs),
    /// Create, list or revoke the daemon's bearer tokens.
    Token(TokenArgs),
    /// Show or check the resolved configuration (secrets masked).
    Config(ConfigArgs),
    /// List, show or delete the stored ACP sessions.
    Sessions(SessionsArgs),
    /// Migrate the session store, or copy its sessions to another (SQLite <-> PostgreSQL).
    Store(StoreArgs),
    /// List, show, verify, export or prune the tamper-evident audit log.
    Audit(AuditArgs),
    /// Check a session attestation (`zeroclaw sessions attest`) offline.
    Attest(AttestArgs),
    /// Run a command confined exactly as a supervised session's shell tool would.
    #[command(subcommand)]
    Sandbox(sandbox::SandboxCommand),
    /// Print the sandbox capability report; non-zero when the configured sandbox cannot apply.
    Doctor(doctor::DoctorArgs),
}

/// `zeroclaw sandbox ...` parsed on its own: the same subcommand (name, help and arguments) as
/// in [`Cli`], without building the parser of every other subcommand first. A one-shot `sandbox
/// run` spends its start-up time here (issue 3's benchmark).
#[derive(Parser)]
#[command(name = "zeroclaw")]
struct SandboxCli {
    #[command(subcommand)]
    command: SandboxOnly,
}

#[derive(Subcommand)]
enum SandboxOnly {
    /// Run a command confined exactly as a supervised session's shell tool would.
    #[command(subcommand)]
    Sandbox(sandbox::SandboxCommand),
}

fn main() -> ExitCode {
    // First statement: the re-executed confined helper branches off here, before argument
    // parsing, logging or any runtime thread exists.
    zeroclaw_sandbox::helper::run_if_helper_with(zeroclaw::tools::ops::OPS);

    if std::env::args_os().nth(1).as_deref() == Some(std::ffi::OsStr::new("sandbox")) {
        // Nothing on this path logs (the command's own output is relayed, setup failures are
        // explained on stderr), so no subscriber is set up either.
        let SandboxOnly::Sandbox(sandbox::SandboxCommand::Run(args)) = SandboxCli::parse().command;
        return sandbox::run(args);
    }
    let cli = Cli::parse();
    #[cfg(not(feature = "otel"))]
    init_logging();
    // Held to the end: dropping it flushes the spans not yet exported.
    #[cfg(feature = "otel")]
    let _traces = init_logging();
    let result = match cli.command {
        Command::Acp(args) => acp_cmd::run(args),
        Command::Daemon(args) => daemon::run(args),
        Command::Token(args) => token_cmd::run(args),
        Command::Config(args) => config_cmd::run(args),
        Command::Sessions(args) => sessions_cmd::run(args),
        Command::Store(args) => store_cmd::run(args),
        Command::Audit(args) => audit_cmd::run(args),
        Command::Attest(args) => attest_cmd::run(args),
        Command::Sandbox(sandbox::SandboxCommand::Run(args)) => Ok(sandbox::run(args)),
        Command::Doctor(args) => {
            let (json, config_dir) = (args.json, args.config_dir.clone());
            doctor::run(args).and_then(|code| {
                if !json && let Some(line) = audit_cmd::doctor_line(config_dir.as_deref()) {
                    terminal::stdout().line(line)?;
                }
                Ok(code)
            })
        }
    };
    finish(result)
}

/// The command's exit status; an error is reported on stderr, except a closed stdout (`| head`),
/// which ends it quietly.
fn finish(result: anyhow::Result<ExitCode>) -> ExitCode {
    match result {
        Ok(code) => code,
        Err(error) if terminal::is_stdout_closed(&error) => {
            ExitCode::from(terminal::EXIT_STDOUT_CLOSED)
        }
        Err(error) => {
            eprintln!("zeroclaw: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// Logs go to stderr (stdout carries ACP only); the filter comes from `ZEROCLAW_LOG`.
#[cfg(not(feature = "otel"))]
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("ZEROCLAW_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .init();
}

/// [`init_logging`] with the `otel` feature: the same log, plus the trace exporter when an
/// OTLP endpoint is configured; the returned guard flushes it when `main` ends.
#[cfg(feature = "otel")]
fn init_logging() -> Option<zeroclaw::telemetry::otlp::Guard> {
    use tracing_subscriber::prelude::*;
    let filter = tracing_subscriber::EnvFilter::try_from_env("ZEROCLAW_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"))
        .add_directive(
            format!("{}=off", zeroclaw::telemetry::TARGET)
                .parse()
                .expect("a valid directive"),
        );
    let log = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_filter(filter);
    let (traces, guard) = match zeroclaw::telemetry::otlp::layer() {
        Ok(Some((layer, guard))) => (Some(layer), Some(guard)),
        Ok(None) => (None, None),
        Err(error) => {
            eprintln!("zeroclaw: traces are not exported: {error:#}");
            (None, None)
        }
    };
    tracing_subscriber::registry().with(traces).with(log).init();
    guard
}
