//! Layering: built-in defaults <- `config.toml` <- environment overlay <- command-line flags,
//! then typed deserialization and validation, with every error traced back to its source (and
//! serde's Rust type names put in plain words).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::{Table, Value};

use super::env::{self, EnvEntry};
use super::sources::Sources;
use super::validate;
use super::{
    AcpConfig, AgentConfig, CONFIG_FILE_NAME, Config, ConfigError, FlagOverride, GatewayConfig,
    ProviderConfig, SandboxConfig,
};

/// The built-in provider and agent a fresh install runs with.
const DEFAULT_PROVIDER: &str = "openrouter";
const DEFAULT_AGENT: &str = "default";
const DEFAULT_MODEL: &str = "anthropic/claude-sonnet-4.6";

/// The file-level shape, before paths are resolved and defaults filled in.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    workspace_dir: Option<PathBuf>,
    #[serde(default)]
    acp: AcpConfig,
    #[serde(default)]
    providers: BTreeMap<String, ProviderConfig>,
    #[serde(default)]
    agents: BTreeMap<String, AgentConfig>,
    #[serde(default)]
    sandbox: SandboxConfig,
    #[serde(default)]
    gateway: GatewayConfig,
    #[serde(default)]
    autonomy: super::AutonomyConfig,
    #[serde(default)]
    audit: super::AuditConfig,
    #[serde(default)]
    store: super::StoreConfig,
    #[serde(default)]
    mcp: super::mcp::McpConfig,
}

pub(super) fn load(
    config_dir: &Path,
    vars: Vec<(String, String)>,
    flags: Vec<FlagOverride>,
) -> Result<Config, ConfigError> {
    let file_path = config_dir.join(CONFIG_FILE_NAME);
    let file = read_file(&file_path)?;
    let entries = env::overlay(vars)?;
    let sources = Sources::new(file.as_ref().map(|_| file_path.clone()), &entries, &flags);
    let mut merged = defaults();
    if let Some(file) = file {
        merge(&mut merged, file);
    }
    for entry in entries {
        apply(&mut merged, entry)?;
    }
    for flag in flags {
        apply(
            &mut merged,
            EnvEntry {
                var: flag.flag.to_owned(),
                path: flag.key.split('.').map(str::to_owned).collect(),
                literal: flag.value.to_string(),
                value: flag.value,
            },
        )?;
    }
    add_default_agent(&mut merged);
    let raw = deserialize(merged, &sources)?;
    let config = resolve(config_dir, raw);
    validate::validate(&config, &sources)?;
    Ok(config)
}

/// Deserializes the merged tree. A variable whose text parsed as a number or boolean where a
/// string is expected (a model called `4`, a numeric key) is taken literally and retried.
fn deserialize(mut tree: Table, sources: &Sources) -> Result<RawConfig, ConfigError> {
    let mut taken_literally = BTreeSet::new();
    loop {
        let err = match serde_path_to_error::deserialize(Value::Table(tree.clone())) {
            Ok(raw) => return Ok(raw),
            Err(err) => err,
        };
        let key = err.path().to_string();
        let wants_string = err.inner().to_string().contains("expected a string");
        match sources.env_entry(&key) {
            Some(entry) if wants_string && taken_literally.insert(key) => {
                let value = Value::String(entry.literal.clone());
                apply(
                    &mut tree,
                    EnvEntry {
                        value,
                        ..entry.clone()
                    },
                )?;
            }
            _ => return Err(deserialize_error(err, sources)),
        }
    }
}

/// The parsed file, or `None` when it does not exist.
fn read_file(path: &Path) -> Result<Option<Table>, ConfigError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(ConfigError::Read {
                path: path.to_owned(),
                source,
            });
        }
    };
    text.parse::<Table>()
        .map(Some)
        .map_err(|e| ConfigError::Syntax {
            path: path.to_owned(),
            message: e.to_string().trim_end().to_owned(),
        })
}

fn defaults() -> Table {
    let mut provider = Table::new();
    provider.insert("kind".into(), "openai".into());
    provider.insert("base_url".into(), "https://openrouter.ai/api/v1".into());
    provider.insert("api_key_env".into(), "OPENROUTER_API_KEY".into());
    let mut providers = Table::new();
    providers.insert(DEFAULT_PROVIDER.into(), Value::Table(provider));
    let mut root = Table::new();
    root.insert("providers".into(), Value::Table(providers));
    root
}

fn default_agent() -> Table {
    let mut agent = Table::new();
    agent.insert("provider".into(), DEFAULT_PROVIDER.into());
    agent.insert("model".into(), DEFAULT_MODEL.into());
    agent
}

/// With no (or an empty) `[agents]`, the built-in `default` agent. A configured agent named `default`
/// takes the built-in's provider and model unless it sets them, so one variable
/// (`ZEROCLAW_agents__default__model=…`) can change just the model.
fn add_default_agent(root: &mut Table) {
    let agents = root
        .entry("agents")
        .or_insert_with(|| Value::Table(Table::new()));
    let Some(agents) = agents.as_table_mut() else {
        return; // ill-typed: deserialization reports it
    };
    if !agents.is_empty() && !agents.contains_key(DEFAULT_AGENT) {
        return;
    }
    let slot = agents
        .entry(DEFAULT_AGENT)
        .or_insert_with(|| Value::Table(Table::new()));
    if let Value::Table(configured) = slot {
        let mut agent = default_agent();
        merge(&mut agent, std::mem::take(configured));
        *configured = agent;
    }
}

/// Deep merge: tables merge key by key, anything else replaces.
fn merge(base: &mut Table, over: Table) {
    for (key, value) in over {
        match (base.get_mut(&key), value) {
            (Some(Value::Table(b)), Value::Table(o)) => merge(b, o),
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

fn apply(root: &mut Table, entry: EnvEntry) -> Result<(), ConfigError> {
    let (last, parents) = entry.path.split_last().expect("paths are never empty");
    let mut table = root;
    for segment in parents {
        let slot = table
            .entry(segment.clone())
            .or_insert_with(|| Value::Table(Table::new()));
        table = match slot {
            Value::Table(t) => t,
            _ => {
                return Err(ConfigError::EnvVar {
                    var: entry.var,
                    message: format!("`{segment}` is not a table"),
                });
            }
        };
    }
    table.insert(last.clone(), entry.value);
    Ok(())
}

fn deserialize_error(
    err: serde_path_to_error::Error<toml::de::Error>,
    sources: &Sources,
) -> ConfigError {
    let path = err.path().to_string();
    // The toml error appends "in `table`" on a second line; the key says that better.
    let full = err.inner().to_string();
    let message = plain_types(full.lines().next().unwrap_or_default().trim_end());
    let key = match unknown_field(&message) {
        Some(field) if !path.ends_with(field) => join_key(&path, field),
        _ => path,
    };
    ConfigError::Invalid {
        origin: sources.of(&key),
        key,
        message,
    }
}

/// serde names the Rust type it expected (`expected usize`); say what a user has to write.
fn plain_types(message: &str) -> String {
    let Some((head, expected)) = message.rsplit_once("expected ") else {
        return message.to_owned();
    };
    let plain = match (expected, whole_number_range(expected)) {
        (_, Some((min, max))) if head.starts_with("invalid value: integer") => {
            format!("a whole number from {min} to {max}")
        }
        (_, Some(_)) => "a whole number".to_owned(),
        ("f64" | "f32", None) => "a number".to_owned(),
        ("a boolean", None) => "true or false".to_owned(),
        _ => return message.to_owned(),
    };
    format!("{head}expected {plain}")
}

fn whole_number_range(rust_type: &str) -> Option<(i128, i128)> {
    Some(match rust_type {
        "u8" => (0, u8::MAX.into()),
        "u16" => (0, u16::MAX.into()),
        "u32" => (0, u32::MAX.into()),
        // A TOML integer is an i64: nothing larger can be written.
        "u64" | "usize" => (0, i64::MAX.into()),
        "i8" => (i8::MIN.into(), i8::MAX.into()),
        "i16" => (i16::MIN.into(), i16::MAX.into()),
        "i32" => (i32::MIN.into(), i32::MAX.into()),
        "i64" | "isize" => (i64::MIN.into(), i64::MAX.into()),
        _ => return None,
    })
}

/// The field named by serde's "unknown field `x`, expected ..." message.
fn unknown_field(message: &str) -> Option<&str> {
    let rest = message.strip_prefix("unknown field `")?;
    rest.split('`').next()
}

fn join_key(path: &str, field: &str) -> String {
    if path.is_empty() || path == "." {
        field.to_owned()
    } else {
        format!("{path}.{field}")
    }
}

fn resolve(config_dir: &Path, raw: RawConfig) -> Config {
    let workspace_dir = match raw.workspace_dir {
        Some(dir) => absolute(config_dir, expand_home(dir)),
        None => config_dir.join("workspace"),
    };
    Config {
        config_dir: config_dir.to_path_buf(),
        workspace_dir,
        acp: raw.acp,
        providers: raw
            .providers
            .into_iter()
            .map(|(name, provider)| (name, resolve_provider(provider)))
            .collect(),
        agents: raw.agents,
        sandbox: raw.sandbox,
        gateway: resolve_gateway(config_dir, raw.gateway),
        autonomy: raw.autonomy,
        audit: super::AuditConfig {
            key_file: raw
                .audit
                .key_file
                .map(|f| absolute(config_dir, expand_home(f))),
            signing_key_file: raw
                .audit
                .signing_key_file
                .map(|f| absolute(config_dir, expand_home(f))),
            ..raw.audit
        },
        store: raw.store,
        mcp: raw.mcp,
    }
}

/// The defaults that depend on the provider's kind, filled in so `config show` prints them.
fn resolve_provider(mut provider: ProviderConfig) -> ProviderConfig {
    if provider.kind == super::ProviderKind::Anthropic {
        if provider.base_url.is_empty() {
            provider.base_url = super::ANTHROPIC_BASE_URL.to_owned();
        }
        if provider.api_key.as_deref().is_none_or(str::is_empty) && provider.api_key_env.is_none() {
            provider.api_key_env = Some(super::ANTHROPIC_API_KEY_ENV.to_owned());
        }
        provider
            .anthropic_version
            .get_or_insert_with(|| super::ANTHROPIC_VERSION.to_owned());
        provider.max_tokens.get_or_insert(super::DEFAULT_MAX_TOKENS);
    }
    provider
}

/// Relative `unix:` paths are relative to the config directory (like `workspace_dir`).
fn resolve_gateway(config_dir: &Path, mut gateway: GatewayConfig) -> GatewayConfig {
    for address in &mut gateway.listen {
        if let Some(path) = address.strip_prefix("unix:") {
            let path = absolute(config_dir, expand_home(PathBuf::from(path)));
            *address = format!("unix:{}", path.display());
        }
    }
    gateway
}

fn expand_home(path: PathBuf) -> PathBuf {
    let Ok(rest) = path.strip_prefix("~") else {
        return path;
    };
    match std::env::var_os("HOME") {
        Some(home) => PathBuf::from(home).join(rest),
        None => path,
    }
}

fn absolute(base: &Path, path: PathBuf) -> PathBuf {
    if path.is_absolute() {
        path
    } else {
        base.join(path)
    }
}
