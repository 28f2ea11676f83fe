//! Typed configuration: defaults <- `<config_dir>/config.toml` <- `ZEROCLAW_*` environment overlay
//! <- command-line flags ([`FlagOverride`]), all checked by the same validation.
//!
//! [`Config::load`] resolves the config directory, layers the sources in [`load`] (with the
//! overlay parsed in [`env`]), deserializes into the types below and checks them in
//! [`validate`]. Errors name the offending key and where it came from. [`mask`] hides secrets
//! for `config show`.

pub mod autonomy;
pub mod caches;
pub mod credential;
mod env;
pub mod listen;
mod load;
pub mod mask;
pub mod mcp;
pub mod models;
pub mod network;
pub mod origin;
mod sources;
pub mod umask;
mod validate;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use zeroclaw_sandbox::BackendChoice;

pub use autonomy::{AutonomyConfig, AutonomyLevel, AutonomyOverride, LimitsConfig};
pub use credential::{CredentialConfig, Inject};
pub use env::RESERVED_ENV_VARS;
pub use models::{ModelEntry, ModelTable, Prices};
pub use network::{NetworkConfig, NetworkMode, NetworkOverride};

/// The config file's name inside the config directory.
pub const CONFIG_FILE_NAME: &str = "config.toml";

/// The fully resolved configuration of one zeroclaw process.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Config {
    /// Where `config.toml` lives (not a config key; chosen by flag, variable or default).
    #[serde(skip)]
    pub config_dir: PathBuf,
    /// Daemon-level data directory; default `<config_dir>/workspace`.
    pub workspace_dir: PathBuf,
    pub acp: AcpConfig,
    pub providers: BTreeMap<String, ProviderConfig>,
    /// The effective agents: with no `[agents]` at all, the built-in `default` agent.
    pub agents: BTreeMap<String, AgentConfig>,
    pub sandbox: SandboxConfig,
    pub gateway: GatewayConfig,
    pub autonomy: AutonomyConfig,
    pub audit: AuditConfig,
    pub store: StoreConfig,
    pub mcp: mcp::McpConfig,
}

/// `[store]`: where sessions are kept. Without `url`, the embedded SQLite file under
/// `workspace_dir`; `postgres://…` shares one database between daemons (`crate::store`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StoreConfig {
    /// `sqlite:PATH` or `postgres://…` / `postgresql://…`; none: `<workspace_dir>/sessions/acp-sessions.db`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// How long a daemon's claim on a session (its lease) lasts without renewal.
    pub lease_secs: u64,
    /// PostgreSQL connections per daemon.
    pub pool_size: usize,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            url: None,
            lease_secs: 30,
            pool_size: 8,
        }
    }
}

/// `[audit]`: the tamper-evident audit log (`crate::audit`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AuditConfig {
    pub mode: AuditMode,
    /// A file holding the HMAC-SHA-256 key (keyed mode); relative to the config directory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_file: Option<PathBuf>,
    /// The Ed25519 private key (`zeroclaw audit keygen`) that signs the log's checkpoints;
    /// relative to the config directory. None: no checkpoints are signed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signing_key_file: Option<PathBuf>,
    /// How often, at most, a checkpoint is signed while records come in.
    pub checkpoint_interval_secs: u64,
}

impl Default for AuditConfig {
    fn default() -> Self {
        AuditConfig {
            mode: AuditMode::default(),
            key_file: None,
            signing_key_file: None,
            checkpoint_interval_secs: 60,
        }
    }
}

/// `audit.mode`: whether a record that cannot be written fails the event it describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditMode {
    /// A tool call whose record cannot be written fails (fail closed).
    #[default]
    Required,
    /// The failure is logged and the call runs (reported by `zeroclaw doctor`).
    BestEffort,
}

/// `[gateway]`: where `zeroclaw daemon` listens and how it admits clients.
///
/// `listen` entries are `"unix:PATH"` (a relative path is relative to the config directory) or
/// `"tcp:HOST:PORT"` ([`listen::Address`]); bound by `crate::gateway::listen`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GatewayConfig {
    pub listen: Vec<String>,
    pub require_auth: bool,
    pub allowed_uids: Vec<u32>,
    pub allowed_gids: Vec<u32>,
    /// Browser origins (`scheme://host[:port]`) whose pages may open `/acp` on TCP.
    pub allowed_origins: Vec<String>,
    pub max_connections: usize,
    pub max_frame_bytes: usize,
    pub idle_timeout_secs: u64,
    pub shutdown_grace_secs: u64,
}

/// The default Unix socket's name inside the config directory.
pub const DEFAULT_SOCKET_NAME: &str = "zeroclaw.sock";
/// The default TCP address of the gateway.
pub const DEFAULT_TCP_LISTEN: &str = "tcp:127.0.0.1:42617";

impl Default for GatewayConfig {
    fn default() -> Self {
        GatewayConfig {
            listen: vec![
                format!("unix:{DEFAULT_SOCKET_NAME}"),
                DEFAULT_TCP_LISTEN.to_owned(),
            ],
            require_auth: true,
            allowed_uids: Vec::new(),
            allowed_gids: Vec::new(),
            allowed_origins: Vec::new(),
            max_connections: 1024,
            max_frame_bytes: AcpConfig::default().max_line_bytes,
            idle_timeout_secs: 120,
            shutdown_grace_secs: 30,
        }
    }
}

/// `[acp]`: the ACP server's limits and default agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AcpConfig {
    pub default_agent: Option<String>,
    pub max_sessions: usize,
    pub session_timeout_secs: u64,
    pub max_line_bytes: usize,
}

impl Default for AcpConfig {
    fn default() -> Self {
        AcpConfig {
            default_agent: None,
            max_sessions: 10,
            session_timeout_secs: 3600,
            max_line_bytes: 32 * 1024 * 1024,
        }
    }
}

/// The wire protocol a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// OpenAI-compatible chat completions (OpenAI, OpenRouter, Ollama, vLLM, llama.cpp, ...).
    #[default]
    OpenAi,
    /// The Anthropic Messages API.
    Anthropic,
}

/// The Anthropic API's address, the default `base_url` of `kind = "anthropic"`.
pub const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com/v1";
/// The variable holding the key of an Anthropic provider that names none.
pub const ANTHROPIC_API_KEY_ENV: &str = "ANTHROPIC_API_KEY";
/// The `anthropic-version` header sent unless `anthropic_version` says otherwise.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// `[providers.<name>]`: where a model API lives and how to authenticate.
///
/// `Debug` masks `api_key`, so logging a config never leaks it.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    #[serde(default)]
    pub kind: ProviderKind,
    /// Required for `openai`; `anthropic` defaults to [`ANTHROPIC_BASE_URL`].
    #[serde(default)]
    pub base_url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    #[serde(default = "default_request_timeout_secs")]
    pub request_timeout_secs: u64,
    /// `anthropic` only: the `anthropic-version` header (default [`ANTHROPIC_VERSION`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anthropic_version: Option<String>,
    /// `anthropic` only: the `max_tokens` of each request (the API requires one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
}

/// The `max_tokens` an Anthropic request asks for when the config names none.
pub const DEFAULT_MAX_TOKENS: u32 = 16_384;

impl std::fmt::Debug for ProviderConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderConfig")
            .field("kind", &self.kind)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| mask::MASK))
            .field("api_key_env", &self.api_key_env)
            .field("request_timeout_secs", &self.request_timeout_secs)
            .field("anthropic_version", &self.anthropic_version)
            .field("max_tokens", &self.max_tokens)
            .finish()
    }
}

fn default_request_timeout_secs() -> u64 {
    120
}

/// `[agents.<alias>]`: a model on a provider, with its prompt and loop limits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    #[serde(default = "default_true")]
    pub enabled: bool,
    pub provider: String,
    pub model: String,
    /// More models a client may switch the agent's sessions to (`model` is always offered).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<ModelEntry>,
    /// Whether the provider's own model list (`GET <base_url>/models`) is offered too.
    #[serde(default)]
    pub discover_models: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    #[serde(default = "default_max_tool_iterations")]
    pub max_tool_iterations: u32,
    /// `[agents.<alias>.autonomy]`: overrides of `[autonomy]` for this agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub autonomy: Option<AutonomyOverride>,
    /// `[agents.<alias>.network]`: overrides of `[sandbox.network]` for this agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkOverride>,
}

impl AgentConfig {
    /// The configured entry of model `id`: `model` itself or an entry of `models`.
    pub fn model_entry(&self, id: &str) -> Option<&ModelEntry> {
        self.models.iter().find(|m| m.id() == id)
    }
}

fn default_true() -> bool {
    true
}

fn default_max_tool_iterations() -> u32 {
    25
}

/// `[sandbox]`: which confinement backend tool executions use.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SandboxConfig {
    /// Parsed here, once: a name that is no backend is a configuration error naming the key.
    pub backend: BackendChoice,
    pub allow_partial: bool,
    pub limits: LimitsConfig,
    /// `[sandbox.network]`: the egress policy of tool children.
    pub network: NetworkConfig,
    /// The umask of tool children (an octal string; default `"022"`), whatever the daemon's.
    pub umask: umask::Umask,
    /// `[sandbox.caches]`: the persistent package caches of tool children.
    pub caches: caches::CachesConfig,
    /// `[sandbox.git]`: what tool children see of git beyond the workspace.
    pub git: SandboxGitConfig,
}

/// `[sandbox.git]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SandboxGitConfig {
    /// A workspace that is a subdirectory of a larger repository: `"read-only"` (default) shows
    /// that repository's worktree read-only, its denied paths masked, and stages its git
    /// directory so `git status`, `git add` and `git commit` work; `"hidden"` shows nothing of
    /// it (git then sees no repository, and a shell result that says so tells why).
    pub parent_worktree: zeroclaw_sandbox::profile::ParentWorktree,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        SandboxConfig {
            backend: BackendChoice::Auto,
            allow_partial: false,
            limits: LimitsConfig::default(),
            network: NetworkConfig::default(),
            umask: umask::Umask::default(),
            caches: caches::CachesConfig::default(),
            git: SandboxGitConfig::default(),
        }
    }
}

/// Where a configuration value came from, for error messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    File(PathBuf),
    Env(String),
    /// A command-line flag, e.g. `--max-sessions`.
    Flag(String),
    Defaults,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::File(path) => write!(f, "in {}", path.display()),
            Source::Env(var) => write!(f, "from environment variable {var}"),
            Source::Flag(flag) => write!(f, "from command-line flag {flag}"),
            Source::Defaults => f.write_str("in the built-in defaults"),
        }
    }
}

/// Everything that can go wrong while loading or using the configuration.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    #[error(
        "cannot determine the config directory: pass --config-dir or set ZEROCLAW_CONFIG_DIR (HOME is not set)"
    )]
    NoConfigDir,
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not valid TOML: {message}")]
    Syntax { path: PathBuf, message: String },
    #[error("environment variable {var}: {message}")]
    EnvVar { var: String, message: String },
    #[error("config key `{key}` {origin}: {message}")]
    Invalid {
        key: String,
        origin: Source,
        message: String,
    },
    #[error("unknown provider `{0}`: add a [providers.{0}] section")]
    UnknownProvider(String),
    #[error("{0}")]
    MissingApiKey(String),
}

/// A command-line flag that sets one config key: it overrides the file and the environment and
/// goes through the same validation, whose errors then name the flag.
#[derive(Debug, Clone, PartialEq)]
pub struct FlagOverride {
    /// The flag as typed, e.g. `--max-sessions`.
    pub flag: &'static str,
    /// The dotted key it sets, e.g. `acp.max_sessions`.
    pub key: &'static str,
    pub value: toml::Value,
}

impl FlagOverride {
    /// A flag taking a whole number (clap has already parsed it as one).
    pub fn whole_number(flag: &'static str, key: &'static str, value: u64) -> Self {
        let value = toml::Value::Integer(i64::try_from(value).unwrap_or(i64::MAX));
        Self { flag, key, value }
    }
}

impl Config {
    /// `--config-dir`, else `ZEROCLAW_CONFIG_DIR`, else `~/.zeroclaw`; reads the process env overlay.
    pub fn load(cli_config_dir: Option<&Path>) -> Result<Config, ConfigError> {
        Self::load_with_flags(cli_config_dir, Vec::new())
    }

    /// [`Config::load`] with command-line flags layered over the file and the environment.
    pub fn load_with_flags(
        cli_config_dir: Option<&Path>,
        flags: Vec<FlagOverride>,
    ) -> Result<Config, ConfigError> {
        let config_dir = match cli_config_dir {
            Some(dir) => dir.to_path_buf(),
            None => default_config_dir()?,
        };
        let env = env::process_env()?;
        load::load(&config_dir, env, flags)
    }

    /// Same as [`Config::load`] with an explicit directory and environment (for tests).
    pub fn load_with_env(
        config_dir: &Path,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Config, ConfigError> {
        load::load(config_dir, env.into_iter().collect(), Vec::new())
    }

    /// `<config_dir>/config.toml`.
    pub fn config_file(&self) -> PathBuf {
        self.config_dir.join(CONFIG_FILE_NAME)
    }

    /// `<workspace_dir>/sessions/acp-sessions.db`.
    pub fn store_path(&self) -> PathBuf {
        self.workspace_dir.join("sessions").join("acp-sessions.db")
    }

    /// Where the session store is: `[store] url`, else the SQLite file of [`Config::store_path`].
    pub fn store_location(&self) -> crate::store::Location {
        match &self.store.url {
            Some(url) => crate::store::Location::parse(url, &self.config_dir)
                .unwrap_or_else(|_| crate::store::Location::Sqlite(self.store_path())),
            None => crate::store::Location::Sqlite(self.store_path()),
        }
    }

    /// `<workspace_dir>/sessions/audit.db`.
    pub fn audit_path(&self) -> PathBuf {
        self.workspace_dir.join("sessions").join("audit.db")
    }

    /// The API key of `provider`: `api_key`, else the variable named by `api_key_env`.
    ///
    /// A provider with neither configured needs no key (local servers) and gets `""`.
    /// The error says which variable or key to set.
    pub fn resolve_api_key(&self, provider: &str) -> Result<String, ConfigError> {
        let cfg = self
            .providers
            .get(provider)
            .ok_or_else(|| ConfigError::UnknownProvider(provider.to_owned()))?;
        if let Some(key) = cfg.api_key.as_deref().filter(|k| !k.is_empty()) {
            return Ok(key.to_owned());
        }
        let Some(var) = cfg.api_key_env.as_deref() else {
            return Ok(String::new());
        };
        match std::env::var(var) {
            Ok(key) if !key.trim().is_empty() => Ok(key),
            _ => Err(ConfigError::MissingApiKey(format!(
                "provider `{provider}` has no API key: set the environment variable {var}, \
                 or set providers.{provider}.api_key in {} (or ZEROCLAW_providers__{provider}__api_key)",
                self.config_file().display()
            ))),
        }
    }
}

fn default_config_dir() -> Result<PathBuf, ConfigError> {
    if let Some(dir) = std::env::var_os("ZEROCLAW_CONFIG_DIR").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty());
    home.map(|h| PathBuf::from(h).join(".zeroclaw"))
        .ok_or(ConfigError::NoConfigDir)
}

#[cfg(test)]
mod tests;
