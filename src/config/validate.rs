//! Checks that need the whole configuration: positive limits, a wall-time maximum not below
//! its default, parsable gateway addresses and browser origins, well-formed network patterns
//! (`crate::egress`), usable provider URLs, agents that name an existing provider, and a
//! `workspace_dir` that is a directory (or does not exist yet).

use std::path::Path;

use super::sources::Sources;
use super::{AgentConfig, Config, ConfigError, NetworkConfig, ProviderConfig};

pub(super) fn validate(config: &Config, sources: &Sources) -> Result<(), ConfigError> {
    let invalid = |key: String, message: String| ConfigError::Invalid {
        origin: sources.of(&key),
        key,
        message,
    };
    let positive = [
        ("acp.max_sessions", config.acp.max_sessions as u64),
        ("acp.session_timeout_secs", config.acp.session_timeout_secs),
        ("acp.max_line_bytes", config.acp.max_line_bytes as u64),
        (
            "gateway.max_connections",
            config.gateway.max_connections as u64,
        ),
        (
            "gateway.max_frame_bytes",
            config.gateway.max_frame_bytes as u64,
        ),
        (
            "gateway.idle_timeout_secs",
            config.gateway.idle_timeout_secs,
        ),
        ("store.lease_secs", config.store.lease_secs),
        ("store.pool_size", config.store.pool_size as u64),
        (
            "audit.checkpoint_interval_secs",
            config.audit.checkpoint_interval_secs,
        ),
    ];
    for (key, value) in positive {
        if value == 0 {
            return Err(invalid(key.into(), "must be greater than 0".into()));
        }
    }
    let limits = &config.sandbox.limits;
    if limits.max_wall_time_secs < limits.wall_time_secs {
        return Err(invalid(
            "sandbox.limits.max_wall_time_secs".into(),
            format!(
                "{} is below `sandbox.limits.wall_time_secs` ({}): the maximum a `shell` call \
                 may ask for cannot be less than the default",
                limits.max_wall_time_secs, limits.wall_time_secs
            ),
        ));
    }
    if let Some(problem) = workspace_problem(&config.workspace_dir) {
        return Err(invalid("workspace_dir".into(), problem));
    }
    if let Some(url) = &config.store.url
        && let Err(message) = crate::store::Location::parse(url, &config.config_dir)
    {
        return Err(invalid("store.url".into(), message));
    }
    if let Err((field, message)) = check_network(&config.sandbox.network) {
        return Err(invalid(format!("sandbox.network.{field}"), message));
    }
    for (i, address) in config.gateway.listen.iter().enumerate() {
        if let Err(message) = super::listen::Address::parse(address) {
            return Err(invalid(format!("gateway.listen[{i}]"), message));
        }
    }
    for (i, origin) in config.gateway.allowed_origins.iter().enumerate() {
        if let Some(message) = super::origin::entry_problem(origin) {
            return Err(invalid(format!("gateway.allowed_origins[{i}]"), message));
        }
    }
    for (name, provider) in &config.providers {
        validate_provider(name, provider)
            .map_err(|(field, msg)| invalid(format!("providers.{name}.{field}"), msg))?;
    }
    for (alias, agent) in &config.agents {
        let network = config.sandbox.network.with_override(agent.network.as_ref());
        if let Err((field, message)) = check_network(&network) {
            let key = format!("agents.{alias}.network.{field}");
            return Err(invalid(key, message));
        }
        validate_agent(config, agent)
            .map_err(|(field, msg)| invalid(format!("agents.{alias}.{field}"), msg))?;
    }
    if let Some((i, field, message)) = config.mcp.problem(&config.agents) {
        return Err(invalid(format!("mcp.servers[{i}].{field}"), message));
    }
    Ok(())
}

/// Why `dir` cannot be the workspace: it exists and is not a directory. Anything else (missing,
/// or not reachable) is left to the session store, which creates it or says why it cannot
/// (and runs in memory then).
fn workspace_problem(dir: &Path) -> Option<String> {
    match std::fs::metadata(dir) {
        Ok(meta) if !meta.is_dir() => {
            Some(format!("{} exists and is not a directory", dir.display()))
        }
        _ => None,
    }
}

type FieldError = (&'static str, String);

/// Well-formed entries. (Whether the chosen backend can route a child through the egress
/// proxy is the sandbox's to say, at the call: a rung that cannot refuses it.)
fn check_network(network: &NetworkConfig) -> Result<(), (String, String)> {
    crate::egress::EgressPolicy::from_config(network)?;
    Ok(())
}

fn validate_provider(_name: &str, provider: &ProviderConfig) -> Result<(), FieldError> {
    let url = provider.base_url.as_str();
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err((
            "base_url",
            format!("`{url}` is not an http:// or https:// URL"),
        ));
    }
    if provider.max_tokens == Some(0) {
        return Err(("max_tokens", "must be greater than 0".into()));
    }
    if provider.request_timeout_secs == 0 {
        return Err(("request_timeout_secs", "must be greater than 0".into()));
    }
    Ok(())
}

fn validate_agent(config: &Config, agent: &AgentConfig) -> Result<(), FieldError> {
    if !config.providers.contains_key(&agent.provider) {
        let known: Vec<&str> = config.providers.keys().map(String::as_str).collect();
        let message = format!(
            "no provider named `{}` (configured: {})",
            agent.provider,
            known.join(", ")
        );
        return Err(("provider", message));
    }
    if agent.model.trim().is_empty() {
        return Err(("model", "must not be empty".into()));
    }
    if agent.models.iter().any(|m| m.id().trim().is_empty()) {
        return Err(("models", "an entry has an empty model id".into()));
    }
    if agent.max_tool_iterations == 0 {
        return Err(("max_tool_iterations", "must be greater than 0".into()));
    }
    Ok(())
}
