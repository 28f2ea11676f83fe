//! `zeroclaw token create [--name N] | list | revoke N`: the daemon's bearer tokens. A new
//! token is printed once, on stdout, alone; only its SHA-256 hash is kept.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::config::Config;
use crate::gateway::tokens::Tokens;

#[derive(Debug, Clone, clap::Args)]
pub struct TokenArgs {
    /// Configuration directory (default: $ZEROCLAW_CONFIG_DIR, else ~/.zeroclaw).
    #[arg(long, global = true)]
    pub config_dir: Option<PathBuf>,
    #[command(subcommand)]
    pub command: TokenCommand,
}

#[derive(Debug, Clone, clap::Subcommand)]
pub enum TokenCommand {
    /// Create a token and print it (it cannot be shown again).
    Create {
        /// A name for the token (default: token-<n>); sessions belong to `token:<name>`.
        #[arg(long)]
        name: Option<String>,
    },
    /// List the tokens: name and creation time (seconds since the epoch).
    List,
    /// Revoke the token with this name; connections presenting it are refused from now on.
    Revoke { name: String },
}

pub fn run(args: TokenArgs) -> anyhow::Result<ExitCode> {
    let config = Config::load(args.config_dir.as_deref())?;
    let tokens = Tokens::in_dir(&config.config_dir);
    match args.command {
        TokenCommand::Create { name } => {
            let (name, token) = tokens.create(name.as_deref())?;
            println!("{token}");
            eprintln!("zeroclaw: created token `{name}`; it is shown only this once");
        }
        TokenCommand::List => {
            for entry in tokens.list()? {
                println!("{}\t{}", entry.name, entry.created);
            }
        }
        TokenCommand::Revoke { name } => {
            if !tokens.revoke(&name)? {
                eprintln!("zeroclaw: no token named `{name}`");
                return Ok(ExitCode::FAILURE);
            }
            eprintln!("zeroclaw: revoked token `{name}`");
        }
    }
    Ok(ExitCode::SUCCESS)
}
