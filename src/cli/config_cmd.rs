//! `zeroclaw config show | check`: the resolved configuration with secrets masked, and its
//! validation.

use std::path::PathBuf;
use std::process::ExitCode;

use super::terminal;
use crate::config::mask::mask_secrets;
use crate::config::{AutonomyLevel, Config, ConfigError};

/// `zeroclaw config ...`.
#[derive(Debug, Clone, clap::Args)]
pub struct ConfigArgs {
    /// Configuration directory (default: $ZEROCLAW_CONFIG_DIR, else ~/.zeroclaw).
    #[arg(long, global = true)]
    pub config_dir: Option<PathBuf>,
    #[command(subcommand)]
    pub command: ConfigCommand,
}

#[derive(Debug, Clone, clap::Subcommand)]
pub enum ConfigCommand {
    /// Print the resolved configuration (defaults, file and environment) with secrets masked.
    Show,
    /// Validate the configuration; exits non-zero with the error when it is invalid.
    Check,
}

pub fn run(args: ConfigArgs) -> anyhow::Result<ExitCode> {
    let loaded = Config::load(args.config_dir.as_deref());
    match args.command {
        ConfigCommand::Show => show(loaded?),
        ConfigCommand::Check => check(loaded),
    }
}

fn show(config: Config) -> anyhow::Result<ExitCode> {
    let mut tree = toml::Value::try_from(&config)?;
    mask_secrets(&mut tree);
    let mut out = terminal::stdout();
    out.line("# zeroclaw configuration, resolved from the built-in defaults,")?;
    out.line(format_args!(
        "# {} ({}),",
        config.config_file().display(),
        file_state(&config)
    ))?;
    out.line("# and the ZEROCLAW_* environment. Secrets are shown as \"***\".")?;
    out.line("")?;
    let text = not_enforced_noted(&toml::to_string_pretty(&tree)?, &config);
    out.raw(&terminal::structured_for_terminal(&text))?;
    Ok(ExitCode::SUCCESS)
}

/// The note on a `workspace_only = true` that the policy does not apply.
const WORKSPACE_ONLY_OFF: &str =
    "  # off at level \"full\"; kept for a session whose client lowers the level";

/// `text` (the shown TOML) with [`WORKSPACE_ONLY_OFF`] after each `workspace_only = true` of
/// `[autonomy]` or an `[agents.<alias>.autonomy]` whose level, as the agent gets it, is
/// `full`: the policy turns `workspace_only` off there (`Policy::for_session`).
fn not_enforced_noted(text: &str, config: &Config) -> String {
    let mut out = String::with_capacity(text.len());
    let mut full = false;
    for line in text.lines() {
        if line.starts_with('[') {
            full = table_level(line, config) == Some(AutonomyLevel::Full);
        }
        out.push_str(line);
        if full && line == "workspace_only = true" {
            out.push_str(WORKSPACE_ONLY_OFF);
        }
        out.push('\n');
    }
    out
}

/// The level an `[autonomy]` or `[agents.<alias>.autonomy]` header's table has in effect;
/// `None` for any other header.
fn table_level(header: &str, config: &Config) -> Option<AutonomyLevel> {
    if header == "[autonomy]" {
        return Some(config.autonomy.level);
    }
    let path: toml::Table = toml::from_str(header).ok()?;
    let agents = path.get("agents")?.as_table()?;
    let (alias, table) = agents.iter().next()?;
    // The override itself, not a table beneath it (`[[agents.a.autonomy.allowed_roots]]`).
    let own = table.as_table()?.get("autonomy")?.as_table()?.is_empty();
    if !own || path.len() != 1 || agents.len() != 1 {
        return None;
    }
    let agent = config.agents.get(alias)?;
    Some(config.autonomy.with_override(agent.autonomy.as_ref()).level)
}

fn check(loaded: Result<Config, ConfigError>) -> anyhow::Result<ExitCode> {
    let config = match loaded {
        Ok(config) => config,
        Err(error) => {
            eprintln!("error: {error}");
            return Ok(ExitCode::FAILURE);
        }
    };
    let mut out = terminal::stdout();
    for warning in warnings(&config) {
        out.line(format_args!("warning: {warning}"))?;
    }
    out.line(format_args!(
        "OK: {} ({}; {} agent(s), {} provider(s))",
        config.config_file().display(),
        file_state(&config),
        config.agents.len(),
        config.providers.len()
    ))?;
    Ok(ExitCode::SUCCESS)
}

fn file_state(config: &Config) -> &'static str {
    if config.config_file().exists() {
        "found"
    } else {
        "not found, defaults"
    }
}

/// Things that do not stop the server from starting but will fail a session or a prompt.
fn warnings(config: &Config) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(alias) = &config.acp.default_agent {
        match config.agents.get(alias) {
            None => out.push(format!(
                "acp.default_agent `{alias}` is not a configured agent"
            )),
            Some(agent) if !agent.enabled => {
                out.push(format!("acp.default_agent `{alias}` is disabled"));
            }
            Some(_) => {}
        }
    }
    for (alias, agent) in config.agents.iter().filter(|(_, a)| a.enabled) {
        if let Err(e) = config.resolve_api_key(&agent.provider) {
            out.push(format!("agent `{alias}`: {e}"));
        }
    }
    out
}
