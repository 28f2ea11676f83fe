//! `zeroclaw store migrate | copy`: bring the configured session store to this version's
//! schema, and move an installation's sessions from one store to another
//! (`--from sqlite:PATH --to postgres://…`), its audit log with it.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

use super::terminal;
use crate::audit::db::{self, Db, Target};
use crate::config::Config;
use crate::store::{Location, Store, copy};

/// `zeroclaw store ...`.
#[derive(Debug, Clone, clap::Args)]
pub struct StoreArgs {
    /// Configuration directory (default: $ZEROCLAW_CONFIG_DIR, else ~/.zeroclaw).
    #[arg(long, global = true)]
    pub config_dir: Option<PathBuf>,
    #[command(subcommand)]
    pub command: StoreCommand,
}

#[derive(Debug, Clone, clap::Subcommand)]
pub enum StoreCommand {
    /// Create or migrate the configured store (`[store] url`) and print where it is.
    Migrate,
    /// Copy every session with its history from one store to another; the target must not
    /// hold any of the sessions yet.
    Copy {
        /// `sqlite:PATH` or `postgres://…` (default: the configured store).
        #[arg(long)]
        from: Option<String>,
        /// `sqlite:PATH` or `postgres://…`.
        #[arg(long)]
        to: String,
    },
}

pub fn run(args: StoreArgs) -> anyhow::Result<ExitCode> {
    let config = Config::load(args.config_dir.as_deref())?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        match args.command {
            StoreCommand::Migrate => {
                let location = config.store_location();
                Store::open_location_async(&location, 1).await?;
                terminal::stdout().line(format_args!("session store ready: {location}"))?;
                Ok(ExitCode::SUCCESS)
            }
            StoreCommand::Copy { from, to } => {
                let from = match from {
                    Some(url) => parse(&url, &config, "--from")?,
                    None => config.store_location(),
                };
                let to = parse(&to, &config, "--to")?;
                anyhow::ensure!(from != to, "--from and --to name the same store ({to})");
                if let Location::Sqlite(path) = &from {
                    anyhow::ensure!(path.is_file(), "no session store at {}", path.display());
                }
                let source = Store::open_location_async(&from, 2)
                    .await
                    .with_context(|| format!("opening {from}"))?;
                let target = Store::open_location_async(&to, 2)
                    .await
                    .with_context(|| format!("opening {to}"))?;
                let (audit_from, audit_to) = (Target::beside(&from), Target::beside(&to));
                let audit_to_check = audit_to.clone();
                let audit_empty = tokio::task::spawn_blocking(move || {
                    Db::open(&audit_to_check)
                        .map_err(|e| e.to_string())?
                        .rows()
                        .map(|rows| rows.is_empty())
                })
                .await?
                .map_err(|e| anyhow::anyhow!("{e}"))?;
                anyhow::ensure!(
                    audit_empty,
                    "the audit log {} is not empty; copy into a new store",
                    audit_to.describe()
                );
                let copied = copy::copy_all(&source, &target)
                    .await
                    .with_context(|| format!("copying {from} to {to}"))?;
                let sessions = format!(
                    "copied {} sessions ({} turns, {} entries, {} file records, {} agent approvals) \
                     from {from} to {to}",
                    copied.sessions, copied.turns, copied.entries, copied.files, copied.approvals
                );
                // Reported once everything is copied: a closed stdout stops no copy.
                let audit = if audit_from.exists() {
                    let (described, into) = (audit_from.describe(), audit_to.describe());
                    let records =
                        tokio::task::spawn_blocking(move || db::copy(&audit_from, &audit_to))
                            .await?
                            .map_err(|e| anyhow::anyhow!("copying the audit log: {e}"))?;
                    format!("copied {records} audit records from {described} to {into}")
                } else {
                    format!("no audit log at {} to copy", audit_from.describe())
                };
                let mut out = terminal::stdout();
                out.line(sessions)?;
                out.line(audit)?;
                Ok(ExitCode::SUCCESS)
            }
        }
    })
}

fn parse(url: &str, config: &Config, flag: &str) -> anyhow::Result<Location> {
    Location::parse(url, &config.config_dir).map_err(|message| anyhow::anyhow!("{flag}: {message}"))
}
