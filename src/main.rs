//! The `zeroclaw` command line.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use zeroclaw::cli::{doctor, sandbox};

/// A hardened agent host.
#[derive(Debug, Parser)]
#[command(name = "zeroclaw", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run commands in the sandbox.
    #[command(subcommand)]
    Sandbox(sandbox::SandboxCommand),
    /// Print the sandbox capability report.
    Doctor(doctor::DoctorArgs),
}

fn main() -> ExitCode {
    // First statement: the sandbox helper must run before any thread or runtime exists.
    zeroclaw_sandbox::helper::run_if_helper();
    match Cli::parse().command {
        Command::Sandbox(sandbox::SandboxCommand::Run(args)) => sandbox::run(args),
        Command::Doctor(args) => doctor::run(args),
    }
}
