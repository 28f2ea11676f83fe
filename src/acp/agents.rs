//! Which configured agent a session uses: the alias precedence of `session/new` and the
//! dispatchable-owner fallback of `session/load` / `session/resume`.

use crate::config::{AgentConfig, Config};
use crate::rpc::RpcError;

/// The alias for a new session: explicit, then the connection's default (the gateway's
/// `?agent=`), then `[acp].default_agent`, then the sole configured agent.
pub fn resolve_for_new(
    config: &Config,
    explicit: Option<&str>,
    connection_default: Option<&str>,
) -> Result<String, RpcError> {
    let chosen = non_blank(explicit)
        .or_else(|| non_blank(connection_default))
        .or(config.acp.default_agent.as_deref())
        .map(str::to_owned)
        .or_else(|| sole_agent(config));
    match chosen {
        Some(alias) => dispatchable(config, &alias).map(|_| alias),
        None => Err(no_agent(config)),
    }
}

/// The alias for a restored session: the stored one if still dispatchable, else
/// `[acp].default_agent`, else the sole enabled agent.
pub fn resolve_for_restore(config: &Config, stored: &str) -> Result<String, RpcError> {
    let candidates = [Some(stored.to_owned()), config.acp.default_agent.clone()];
    if let Some(alias) = candidates
        .into_iter()
        .flatten()
        .find(|alias| dispatchable(config, alias).is_ok())
    {
        return Ok(alias);
    }
    let mut enabled = config.agents.iter().filter(|(_, a)| a.enabled);
    match (enabled.next(), enabled.next()) {
        (Some((alias, _)), None) => Ok(alias.clone()),
        _ => Err(RpcError::invalid_params(format!(
            "the session's agent `{stored}` is no longer available and no default agent is configured"
        ))),
    }
}

/// The alias a client would get without naming one (for `initialize`'s `defaultModel`).
pub fn default_agent(config: &Config) -> Option<&AgentConfig> {
    let alias = resolve_for_new(config, None, None).ok()?;
    config.agents.get(&alias)
}

/// The agent config, if the alias names an enabled agent; -32602 otherwise.
pub fn dispatchable<'a>(config: &'a Config, alias: &str) -> Result<&'a AgentConfig, RpcError> {
    match config.agents.get(alias) {
        Some(agent) if agent.enabled => Ok(agent),
        Some(_) => Err(RpcError::invalid_params(format!(
            "agent `{alias}` is disabled"
        ))),
        None => Err(RpcError::invalid_params(format!(
            "unknown agent `{alias}`; configured agents: {}",
            names(config)
        ))),
    }
}

fn non_blank(alias: Option<&str>) -> Option<&str> {
    alias.map(str::trim).filter(|a| !a.is_empty())
}

fn sole_agent(config: &Config) -> Option<String> {
    match config.agents.len() {
        1 => config.agents.keys().next().cloned(),
        _ => None,
    }
}

fn no_agent(config: &Config) -> RpcError {
    RpcError::invalid_params(format!(
        "no agent selected: pass agentAlias (one of: {}) or set [acp].default_agent",
        names(config)
    ))
}

fn names(config: &Config) -> String {
    let names: Vec<&str> = config.agents.keys().map(String::as_str).collect();
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    }
}
