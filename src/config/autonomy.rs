//! `[autonomy]` (and its per-agent override `[agents.<alias>.autonomy]`) and
//! `[sandbox.limits]`: the configuration the security policy (`crate::policy`) is built from.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// How much the agent may do without asking; ordered from least to most.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AutonomyLevel {
    /// Reads and low-risk commands only; writes and mutating commands are refused.
    ReadOnly,
    /// Writes, edits and medium/high-risk commands ask the client first.
    #[default]
    Supervised,
    /// No prompts; the host is readable outside the session cwd (forbidden paths never are);
    /// writes stay in the workspace and the read-write allowed roots unless
    /// `full_host_writes`.
    Full,
}

/// Whether tool children may use the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NetworkPolicy {
    #[default]
    Deny,
    Allow,
}

/// An extra root the tools may reach besides the session cwd.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AllowedRoot {
    pub path: PathBuf,
    /// Read-write when true, read-only otherwise.
    #[serde(default)]
    pub write: bool,
}

/// `[autonomy]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AutonomyConfig {
    pub level: AutonomyLevel,
    /// Paths must be inside the session cwd or an allowed root; `full` turns it off.
    pub workspace_only: bool,
    /// Denied in every level, added to the built-in list (`~` is expanded).
    pub forbidden_paths: Vec<String>,
    pub allowed_roots: Vec<AllowedRoot>,
    /// Tool names (or `*`) that always ask, even for low-risk calls.
    pub always_ask: Vec<String>,
    /// Tool names (or `*`) that never ask in `supervised`.
    pub auto_approve: Vec<String>,
    pub network: NetworkPolicy,
    /// `true` lets a session use `/` as its cwd (its denied paths are then masked inside it);
    /// refused otherwise, since such a session's workspace is the whole host.
    pub allow_root_cwd: bool,
    /// `true` lets a `full` session's children write the host outside the workspace (every
    /// top-level directory the `full` shell reads), still never the paths of
    /// `crate::policy::never_writable`; `false`: they write only the workspace and the
    /// read-write allowed roots.
    pub full_host_writes: bool,
    /// TESTING KNOB: `false` turns the policy's own path and command checks off, so tests can
    /// show the kernel layer alone denies an attack. Never weakens the sandbox.
    pub policy_checks: bool,
}

impl Default for AutonomyConfig {
    fn default() -> Self {
        AutonomyConfig {
            level: AutonomyLevel::Supervised,
            workspace_only: true,
            forbidden_paths: Vec::new(),
            allowed_roots: Vec::new(),
            always_ask: Vec::new(),
            auto_approve: Vec::new(),
            network: NetworkPolicy::Deny,
            allow_root_cwd: false,
            full_host_writes: false,
            policy_checks: true,
        }
    }
}

/// `[agents.<alias>.autonomy]`: each key set here replaces the `[autonomy]` one.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AutonomyOverride {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub level: Option<AutonomyLevel>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workspace_only: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forbidden_paths: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed_roots: Option<Vec<AllowedRoot>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub always_ask: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auto_approve: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkPolicy>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow_root_cwd: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub full_host_writes: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy_checks: Option<bool>,
}

impl AutonomyConfig {
    /// This config with an agent's override applied. A level set to `full` by the override
    /// also turns `workspace_only` off unless the override sets it.
    pub fn with_override(&self, o: Option<&AutonomyOverride>) -> AutonomyConfig {
        let Some(o) = o else {
            return self.clone();
        };
        let pick = |v: &Option<Vec<String>>, d: &Vec<String>| v.clone().unwrap_or(d.clone());
        AutonomyConfig {
            level: o.level.unwrap_or(self.level),
            workspace_only: o.workspace_only.unwrap_or(self.workspace_only),
            forbidden_paths: pick(&o.forbidden_paths, &self.forbidden_paths),
            allowed_roots: o
                .allowed_roots
                .clone()
                .unwrap_or(self.allowed_roots.clone()),
            always_ask: pick(&o.always_ask, &self.always_ask),
            auto_approve: pick(&o.auto_approve, &self.auto_approve),
            network: o.network.unwrap_or(self.network),
            allow_root_cwd: o.allow_root_cwd.unwrap_or(self.allow_root_cwd),
            full_host_writes: o.full_host_writes.unwrap_or(self.full_host_writes),
            policy_checks: o.policy_checks.unwrap_or(self.policy_checks),
        }
    }
}

/// `[sandbox.limits]`: limits of every tool execution.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LimitsConfig {
    /// Wall-clock cap of one execution, unless `shell`'s `timeout_secs` asks for another.
    pub wall_time_secs: u64,
    /// The most `shell`'s `timeout_secs` may ask for (at least `wall_time_secs`).
    pub max_wall_time_secs: u64,
    pub cpu_secs: u64,
    pub memory_mb: u64,
    pub processes: u64,
    pub file_size_mb: u64,
    pub open_files: u64,
    /// stdout + stderr kept from one execution; past it the tree is killed.
    pub output_bytes: u64,
    /// What one execution may write into the workspace (its layer, on the namespace rung);
    /// past it the tree is killed and nothing it wrote lands. 0: no bound.
    pub written_mb: u64,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        LimitsConfig {
            wall_time_secs: 120,
            max_wall_time_secs: 600,
            cpu_secs: 120,
            memory_mb: 4096,
            processes: 1024,
            file_size_mb: 1024,
            open_files: 1024,
            output_bytes: 8 << 20,
            written_mb: 8192,
        }
    }
}
