//! `zeroclaw store migrate | copy`: bring the configured session store to this version's
//! schema, and move an installation's sessions from one store to another
//! (`--from sqlite:PATH --to postgres://…`), its audit log with it.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

use super::terminal;
use crate::audit::db::Target;
use crate::audit::import::{self, Brought};
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
    /// Copy every session with its history from one store to another (the target must not
    /// hold any of the sessions yet), and the audit log beside it (into a log that already has
    /// records, as an `audit.import` segment).
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
                let key = crate::audit::load_key(&config)?;
                if audit_from.exists() {
                    // Refused before any session moves: a source log that would not verify
                    // in the target, or one already brought there.
                    let (from_log, to_log, key) = (audit_from.clone(), audit_to.clone(), key.clone());
                    tokio::task::spawn_blocking(move || {
                        import::check(&from_log, &to_log, key.as_deref())
                    })
                    .await?
                    .map_err(|e| anyhow::anyhow!("copying the audit log: {e}"))?;
                }
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
                    let brought = tokio::task::spawn_blocking(move || {
                        import::bring(&audit_from, &audit_to, key.as_deref())
                    })
                    .await?
                    .map_err(|e| anyhow::anyhow!("copying the audit log: {e}"))?;
                    match brought {
                        Brought::Copied(records) => {
                            format!("copied {records} audit records from {described} to {into}")
                        }
                        Brought::Imported { records, at } => format!(
                            "imported {records} audit records from {described} into {into} \
                             after its record {at} (audit.import)"
                        ),
                    }
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
