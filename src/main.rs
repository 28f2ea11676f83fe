//! The `zeroclaw` command line: `acp` (the ACP server on stdio), `config`, `sessions`.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use zeroclaw::cli::acp_cmd::{self, AcpArgs};
use zeroclaw::cli::config_cmd::{self, ConfigArgs};
use zeroclaw::cli::sessions_cmd::{self, SessionsArgs};

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
    /// Show or check the resolved configuration (secrets masked).
    Config(ConfigArgs),
    /// List, show or delete the stored ACP sessions.
    Sessions(SessionsArgs),
}

fn main() -> ExitCode {
    // Sandbox helper hook: the re-executed confined helper must branch off here, before
    // argument parsing, logging or any runtime thread exists.

    let cli = Cli::parse();
    init_logging();
    let result = match cli.command {
        Command::Acp(args) => acp_cmd::run(args),
        Command::Config(args) => config_cmd::run(args),
        Command::Sessions(args) => sessions_cmd::run(args),
    };
    match result {
        Ok(code) => code,
        Err(error) => {
            eprintln!("zeroclaw: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// Logs go to stderr (stdout carries ACP only); the filter comes from `ZEROCLAW_LOG`.
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("ZEROCLAW_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .init();
}
