//! `zeroclaw token create [--name N] [--output PATH [--force]] | list | revoke N`: the daemon's
//! bearer tokens. A new token is shown once — on stdout, alone, or written to `--output` (mode
//! 0600 from its creation, put in place by a rename) — and only its SHA-256 hash is kept.
//! Everything that can refuse (a taken name, an existing PATH) does before anything is written.

use std::io::{ErrorKind, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;

use super::terminal;
use super::time::format_time;
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
        /// Write the token to this file (mode 0600) instead of stdout; an existing file is
        /// refused unless --force.
        #[arg(long, value_name = "PATH")]
        output: Option<PathBuf>,
        /// Replace an existing --output file.
        #[arg(long, requires = "output")]
        force: bool,
    },
    /// List the tokens: name and creation time (UTC).
    List,
    /// Revoke the token with this name; connections presenting it are refused from now on.
    Revoke { name: String },
}

pub fn run(args: TokenArgs) -> anyhow::Result<ExitCode> {
    let config = Config::load(args.config_dir.as_deref())?;
    let tokens = Tokens::in_dir(&config.config_dir);
    match args.command {
        TokenCommand::Create {
            name,
            output,
            force,
        } => create(&tokens, name.as_deref(), output.as_deref(), force)?,
        TokenCommand::List => {
            let mut out = terminal::stdout();
            for entry in tokens.list()? {
                let created = i64::try_from(entry.created)
                    .unwrap_or(i64::MAX)
                    .saturating_mul(1000);
                let name = terminal::escape(&entry.name);
                out.raw(&format!("{name}\t{}\n", format_time(created)))?;
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

fn create(
    tokens: &Tokens,
    name: Option<&str>,
    output: Option<&Path>,
    force: bool,
) -> anyhow::Result<()> {
    let new = tokens.prepare(name)?;
    let Some(path) = output else {
        tokens.commit(&new)?;
        if let Err(error) = terminal::stdout().line(&new.token) {
            // Shown to no one: take it back.
            let _ = tokens.revoke(&new.name);
            return Err(error);
        }
        eprintln!(
            "zeroclaw: created token `{}`; it is shown only this once",
            new.name
        );
        return Ok(());
    };
    if !force && std::fs::symlink_metadata(path).is_ok() {
        anyhow::bail!(
            "{} exists; pass --force to replace it (no token was created)",
            path.display()
        );
    }
    let staged = Staged::write(path, &new.token)?;
    tokens.commit(&new)?;
    if let Err(error) = staged.place(force) {
        // The token exists nowhere else: take it back so nothing half-made is left.
        let _ = tokens.revoke(&new.name);
        return Err(error.context("no token was created"));
    }
    eprintln!(
        "zeroclaw: created token `{}` in {} (mode 0600)",
        new.name,
        path.display()
    );
    Ok(())
}

/// The token in a 0600 temp file beside its destination, removed unless placed.
struct Staged {
    tmp: PathBuf,
    path: PathBuf,
}

impl Staged {
    fn write(path: &Path, token: &str) -> anyhow::Result<Staged> {
        let file_name = path
            .file_name()
            .with_context(|| format!("--output {}: not a file path", path.display()))?;
        let dir = match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => Path::new("."),
        };
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let tmp = dir.join(format!(
            ".{}.{}.tmp",
            file_name.to_string_lossy(),
            std::process::id()
        ));
        let mut out = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .with_context(|| format!("creating {}", tmp.display()))?;
        let staged = Staged {
            tmp,
            path: path.to_owned(),
        };
        out.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        writeln!(out, "{token}")?;
        out.sync_all()
            .with_context(|| format!("writing {}", staged.tmp.display()))?;
        Ok(staged)
    }

    /// Renames over the destination with `force`; else links it in, which fails if the
    /// destination appeared meanwhile (never replacing it).
    fn place(&self, force: bool) -> anyhow::Result<()> {
        let placed = if force {
            std::fs::rename(&self.tmp, &self.path)
        } else {
            std::fs::hard_link(&self.tmp, &self.path)
        };
        placed.map_err(|e| match e.kind() {
            ErrorKind::AlreadyExists => {
                anyhow::anyhow!("{} exists; pass --force to replace it", self.path.display())
            }
            _ => anyhow::Error::new(e).context(format!("writing {}", self.path.display())),
        })
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.tmp);
    }
}
