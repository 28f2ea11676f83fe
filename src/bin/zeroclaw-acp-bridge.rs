//! `zeroclaw-acp-bridge`: stdio ACP relayed to a running `zeroclaw daemon` (see
//! `zeroclaw::gateway::bridge`). stdout carries ACP only; messages go to stderr.

#![forbid(unsafe_code)]

use std::process::ExitCode;

use clap::Parser;
use zeroclaw::gateway::bridge::{self, BridgeArgs};

fn main() -> ExitCode {
    let filter = tracing_subscriber::EnvFilter::try_from_env("ZEROCLAW_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .init();
    bridge::run(BridgeArgs::parse())
}
