//! `[mcp]`: MCP servers the operator gives agents, run like a client's (`crate::mcp`): stdio,
//! confined by the session's profile, started at the session's first prompt. A `trusted`
//! server's calls are low risk (they run without asking, even at `readonly`); the others'
//! are medium risk like a client's.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpConfig {
    pub servers: Vec<McpServerConfig>,
}

/// One `[[mcp.servers]]` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// Part of its tools' names (`mcp__<name>__<tool>`).
    pub name: String,
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    /// Set in its environment on top of the sandbox's allowlist.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub trusted: bool,
    /// The agents that get it; empty: every agent.
    #[serde(default)]
    pub agents: Vec<String>,
}

impl McpConfig {
    /// The servers agent `alias` gets.
    pub fn for_agent<'a>(&'a self, alias: &'a str) -> impl Iterator<Item = &'a McpServerConfig> {
        self.servers
            .iter()
            .filter(move |s| s.agents.is_empty() || s.agents.iter().any(|a| a == alias))
    }

    /// The first problem: (index, field, message).
    pub(super) fn problem(
        &self,
        agents: &BTreeMap<String, super::AgentConfig>,
    ) -> Option<(usize, &'static str, String)> {
        let mut names = std::collections::BTreeSet::new();
        for (i, server) in self.servers.iter().enumerate() {
            if let Err(message) = check_name(&server.name) {
                return Some((i, "name", message));
            }
            if !names.insert(server.name.as_str()) {
                return Some((i, "name", format!("`{}` is used twice", server.name)));
            }
            if server.command.is_empty() {
                return Some((i, "command", "must not be empty".into()));
            }
            if let Some(unknown) = server.agents.iter().find(|a| !agents.contains_key(*a)) {
                return Some((i, "agents", format!("no agent named `{unknown}`")));
            }
        }
        None
    }
}

/// The longest server name accepted (its tools' names stay within the providers' 64
/// characters for ordinary tool names).
pub const MAX_NAME: usize = 32;

/// A server name (the operator's or a client's): 1 to [`MAX_NAME`] letters, digits, `-`, `_`.
pub fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "the name {name:?} must be 1 to {MAX_NAME} letters, digits, `-` or `_`"
        ))
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Config;

    fn load(toml: &str) -> Result<Config, String> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("config.toml"), toml).unwrap();
        Config::load_with_env(dir.path(), Vec::new()).map_err(|e| e.to_string())
    }

    #[test]
    fn servers_go_to_their_agents_and_bad_entries_name_the_key() {
        let config = load(
            "[providers.p]\nbase_url = \"http://127.0.0.1:1/v1\"\n\
             [agents.a]\nprovider = \"p\"\nmodel = \"m\"\n\
             [agents.b]\nprovider = \"p\"\nmodel = \"m\"\n\
             [[mcp.servers]]\nname = \"all\"\ncommand = \"/bin/srv\"\n\
             [[mcp.servers]]\nname = \"only-b\"\ncommand = \"/bin/srv\"\nagents = [\"b\"]\ntrusted = true\n",
        )
        .unwrap();
        let names = |alias| {
            let list: Vec<_> = config
                .mcp
                .for_agent(alias)
                .map(|s| s.name.clone())
                .collect();
            list
        };
        assert_eq!(names("a"), ["all"]);
        assert_eq!(names("b"), ["all", "only-b"]);
        for (bad, needle) in [
            (
                "[[mcp.servers]]\nname = \"a b\"\ncommand = \"x\"\n",
                "mcp.servers[0].name",
            ),
            (
                "[[mcp.servers]]\nname = \"a\"\ncommand = \"\"\n",
                "mcp.servers[0].command",
            ),
            (
                "[[mcp.servers]]\nname = \"a\"\ncommand = \"x\"\nagents = [\"ghost\"]\n",
                "mcp.servers[0].agents",
            ),
            (
                "[[mcp.servers]]\nname = \"a\"\ncommand = \"x\"\n[[mcp.servers]]\nname = \"a\"\ncommand = \"y\"\n",
                "mcp.servers[1].name",
            ),
        ] {
            let error = load(bad).unwrap_err();
            assert!(error.contains(needle), "{bad}: {error}");
        }
    }
}
