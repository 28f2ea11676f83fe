//! `[sandbox.caches]`: whether tool children's package caches persist across calls and
//! sessions, and how widely one is shared (see `crate::caches`).

use serde::{Deserialize, Serialize};

/// How widely one persistent cache is shared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheScope {
    /// One cache per principal, agent and workspace: one project's session cannot seed what
    /// another project's session runs.
    #[default]
    Workspace,
    /// One cache per principal and agent, shared by all its workspaces.
    Agent,
    /// One cache per principal, shared by all its agents and workspaces.
    Principal,
}

impl CacheScope {
    /// The name used in config files.
    pub fn as_str(self) -> &'static str {
        match self {
            CacheScope::Workspace => "workspace",
            CacheScope::Agent => "agent",
            CacheScope::Principal => "principal",
        }
    }
}

/// `[sandbox.caches]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CachesConfig {
    /// Package caches persist under `<workspace_dir>/caches` (else every call starts cold).
    pub enabled: bool,
    /// How widely one cache is shared.
    pub scope: CacheScope,
}

impl Default for CachesConfig {
    fn default() -> Self {
        CachesConfig {
            enabled: true,
            scope: CacheScope::Workspace,
        }
    }
}
