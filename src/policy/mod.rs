//! The security policy of one session: built from `[autonomy]` (with the agent's override),
//! it resolves ([`resolve`]) and checks ([`paths`]) the paths a tool names, classifies shell
//! commands ([`risk`]), and turns itself into the sandbox profile every tool execution is
//! confined by ([`profile`]; what a `full` shell reaches outside the cwd: [`reach`]; what no
//! child may write at any level: [`never_writable`]; the same in words: [`describe`]), and
//! says which directories a session may work in at all ([`cwd`]). Whether a call runs, asks,
//! or is refused is decided from it in `crate::approval`, which reads the policy (the policy
//! uses nothing of approval).
//!
//! The policy is the first gate and gives clear reasons; the kernel (the sandbox crate) is
//! the guarantee. No argument from the model can approve anything: decisions depend only on
//! the config, the tool, the classified risk and the user's answers.

pub mod cwd;
pub mod describe;
pub mod never_writable;
pub mod paths;
pub mod profile;
pub mod reach;
pub mod resolve;
pub mod risk;

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use crate::config::autonomy::NetworkPolicy;
use crate::config::{AutonomyConfig, AutonomyLevel, Config, LimitsConfig};

pub use paths::Access;
pub use risk::Risk;

/// The built-in forbidden paths (`~` is the daemon's home); the config adds to them.
pub const DEFAULT_FORBIDDEN: &[&str] = &[
    "~/.ssh",
    "~/.gnupg",
    "~/.aws",
    "~/.config",
    "~/.netrc",
    "~/.git-credentials",
    "~/.cargo/credentials.toml",
    "/etc/shadow",
    "/etc/gshadow",
    "/etc/sudoers",
];

/// The effective policy of one session.
#[derive(Debug, Clone)]
pub struct Policy {
    pub level: AutonomyLevel,
    pub workspace_only: bool,
    /// Absolute paths denied at every level, by the policy and by the kernel (normalized by
    /// their first reader: [`Forbidden`]).
    pub forbidden: Forbidden,
    /// Extra roots: (path, writable).
    pub allowed_roots: Vec<(PathBuf, bool)>,
    pub always_ask: Vec<String>,
    pub auto_approve: Vec<String>,
    pub network: bool,
    /// `mode = "proxy"`: the policy tool children reach the network through (the egress
    /// proxy); `None` in the other modes.
    pub egress: Option<crate::egress::EgressPolicy>,
    /// `false` only in tests: the policy's path and command checks are skipped (the kernel
    /// still confines everything).
    pub checks: bool,
    pub limits: LimitsConfig,
    pub backend: zeroclaw_sandbox::BackendChoice,
    pub allow_partial: bool,
    /// `/` may be a session cwd (`[autonomy] allow_root_cwd`).
    pub allow_root_cwd: bool,
    /// The umask of tool children (`[sandbox] umask`).
    pub umask: u32,
    /// What tool children see of a larger repository the workspace lies in
    /// (`[sandbox.git] parent_worktree`).
    pub parent_worktree: zeroclaw_sandbox::profile::ParentWorktree,
    /// `[autonomy] full_host_writes`: a `full` session's children write the host, not only
    /// the workspace and the read-write allowed roots (never the [`never_writable`] entries).
    pub full_host_writes: bool,
    /// What no child may write, at any level ([`never_writable`]); the other sessions'
    /// workspaces are added per turn ([`Policy::with_other_workspaces`]).
    pub never_writable: never_writable::Lazy,
    /// The workspaces of the daemon's other live sessions (never writable from this one,
    /// unless they hold its cwd).
    pub other_workspaces: Vec<PathBuf>,
    /// `[sandbox.caches]`: the persistent package caches a `shell` child gets.
    pub caches: crate::caches::Caches,
    /// Where the transactional workspace keeps each call's private layer (the daemon's
    /// `state/layers`; see [`Policy::layers_for`]); `None`: calls write the workspace directly.
    pub layers: Option<PathBuf>,
}

impl Policy {
    /// The policy of a session of agent `alias`.
    pub fn for_agent(config: &Config, alias: &str) -> Policy {
        Self::for_session(config, alias, None)
    }

    /// The configured level of agent `alias` (`[autonomy] level` or the agent's override):
    /// the highest a client may choose for a session.
    pub fn ceiling(config: &Config, alias: &str) -> AutonomyLevel {
        let agent = config.agents.get(alias).and_then(|a| a.autonomy.as_ref());
        config.autonomy.with_override(agent).level
    }

    /// The policy of a session of agent `alias` whose client chose level `chosen`: the lower
    /// of it and the configured level applies, as if configured.
    pub fn for_session(config: &Config, alias: &str, chosen: Option<AutonomyLevel>) -> Policy {
        Self::build(config, Some(alias), chosen)
    }

    /// The policy of `[autonomy]` and `[sandbox]` alone, no agent's override: what
    /// `zeroclaw sandbox run` confines its command by (its denied paths, its workspace rule).
    pub fn for_config(config: &Config) -> Policy {
        Self::build(config, None, None)
    }

    fn build(config: &Config, alias: Option<&str>, chosen: Option<AutonomyLevel>) -> Policy {
        let agent_config = alias.and_then(|alias| config.agents.get(alias));
        let agent = agent_config.and_then(|a| a.autonomy.as_ref());
        let mut autonomy = config.autonomy.with_override(agent);
        if let Some(chosen) = chosen {
            autonomy.level = autonomy.level.min(chosen);
        }
        let agent_network = agent_config.and_then(|a| a.network.as_ref());
        let network_config = config.sandbox.network.with_override(agent_network);
        let network_mode = network_config.mode;
        // Checked when the config was loaded; a policy that does not parse gives no network.
        // `readonly` has no network in proxy mode.
        let egress = (network_mode == crate::config::NetworkMode::Proxy
            && autonomy.level != AutonomyLevel::ReadOnly)
            .then(|| crate::egress::EgressPolicy::from_config(&network_config).ok())
            .flatten();
        let forbidden = Forbidden::lazy(denied_paths(config, &autonomy));
        let mut normalizer = resolve::Normalizer::default();
        Policy {
            level: autonomy.level,
            workspace_only: autonomy.workspace_only && autonomy.level != AutonomyLevel::Full,
            forbidden,
            allowed_roots: autonomy
                .allowed_roots
                .iter()
                .map(|r| {
                    (
                        normalizer.normalize(&resolve::expand_home(&r.path)),
                        r.write,
                    )
                })
                .collect(),
            always_ask: autonomy.always_ask,
            auto_approve: autonomy.auto_approve,
            // `[autonomy] network = "allow"` is the older spelling of `[sandbox.network]
            // mode = "allow"`; either gives the host's network.
            // `proxy` wins over the older spelling: the narrower of the two.
            network: egress.is_none()
                && (autonomy.network == NetworkPolicy::Allow
                    || network_mode == crate::config::NetworkMode::Allow),
            egress,
            checks: autonomy.policy_checks,
            limits: config.sandbox.limits.clone(),
            backend: config.sandbox.backend,
            allow_partial: config.sandbox.allow_partial,
            allow_root_cwd: autonomy.allow_root_cwd,
            umask: config.sandbox.umask.bits(),
            parent_worktree: config.sandbox.git.parent_worktree,
            full_host_writes: autonomy.full_host_writes,
            never_writable: never_writable::Lazy::for_daemon(&config.workspace_dir),
            other_workspaces: Vec::new(),
            caches: crate::caches::Caches::from_config(config),
            layers: Some(config.workspace_dir.join("state/layers")),
        }
    }

    /// This policy with the daemon's other live sessions' workspaces never writable.
    pub fn with_other_workspaces(mut self, workspaces: Vec<PathBuf>) -> Policy {
        self.other_workspaces = workspaces;
        self
    }

    /// The [`never_writable`] entries of a call in `cwd`: the daemon's list and the other
    /// sessions' workspaces but those holding `cwd`.
    pub fn never_writable_for(&self, cwd: &Path) -> Vec<never_writable::Entry> {
        let mut entries = self.never_writable.entries().to_vec();
        entries.extend(never_writable::other_sessions(cwd, &self.other_workspaces));
        entries
    }

    /// The layers directory of a call in `cwd`: the daemon's, unless it lies inside `cwd` (a
    /// workspace holding the daemon's home, such as `~`) or this user cannot make it (a
    /// `sandbox run` by a user whose home is not theirs, `nobody`'s `/nonexistent`): then a
    /// private directory of this user under `/var/tmp` (landing there copies rather than
    /// renames when it is another file system; one another user made first is refused). A
    /// workspace holding that too gets the daemon's, which the sandbox refuses with a reason.
    pub fn layers_for(&self, cwd: &Path) -> Option<PathBuf> {
        let layers = self.layers.as_ref()?;
        if !layers.starts_with(cwd) && can_make(layers) {
            return Some(layers.clone());
        }
        let shared = PathBuf::from(format!(
            "/var/tmp/zeroclaw-layers-{}",
            nix::unistd::geteuid()
        ));
        Some(if shared.starts_with(cwd) {
            layers.clone()
        } else {
            shared
        })
    }

    /// The forbidden path that covers `path`, if any.
    pub fn forbidden_match(&self, path: &Path) -> Option<&Path> {
        self.forbidden
            .iter()
            .find(|f| path.starts_with(f))
            .map(PathBuf::as_path)
    }
}

impl Default for Policy {
    /// The policy of a default config (no config dir or store known).
    fn default() -> Self {
        let autonomy = AutonomyConfig::default();
        Policy {
            level: autonomy.level,
            workspace_only: true,
            forbidden: Forbidden::lazy(forbidden_paths(&autonomy)),
            allowed_roots: Vec::new(),
            always_ask: Vec::new(),
            auto_approve: Vec::new(),
            network: false,
            egress: None,
            checks: true,
            limits: LimitsConfig::default(),
            backend: zeroclaw_sandbox::BackendChoice::Auto,
            allow_partial: false,
            allow_root_cwd: autonomy.allow_root_cwd,
            umask: zeroclaw_sandbox::profile::DEFAULT_UMASK,
            parent_worktree: Default::default(),
            full_host_writes: autonomy.full_host_writes,
            never_writable: never_writable::Lazy::of(
                zeroclaw_sandbox::profile::home_dir().as_deref(),
                None,
                Path::new("/nonexistent-zeroclaw-workspace"),
            ),
            other_workspaces: Vec::new(),
            caches: crate::caches::Caches::disabled(),
            layers: None,
        }
    }
}

/// Whether this user can make `dir` (or has it): its nearest existing ancestor is a
/// directory it may write and enter.
fn can_make(dir: &Path) -> bool {
    use nix::unistd::{AccessFlags, access};
    dir.ancestors()
        .find(|a| a.symlink_metadata().is_ok())
        .is_some_and(|a| a.is_dir() && access(a, AccessFlags::W_OK | AccessFlags::X_OK).is_ok())
}

/// The forbidden paths of a policy, normalized by their first reader and shared by the clones
/// of the policy (the calls of one turn), as [`never_writable::Lazy`] is: normalizing them
/// looks each up on the host (some twenty `lstat`s, a tenth of a plain turn's CPU when every
/// turn's policy did it as it was built), and a turn whose model calls no tool never reads
/// them. A policy built again (each turn, each mode change) normalizes afresh.
#[derive(Debug, Clone)]
pub struct Forbidden {
    /// As configured, `~` expanded.
    configured: Arc<Vec<PathBuf>>,
    normalized: Arc<OnceLock<Vec<PathBuf>>>,
    /// Added to this policy after it was built, as given (not normalized).
    added: Vec<PathBuf>,
}

impl Forbidden {
    /// `paths`, normalized on first use.
    pub fn lazy(paths: Vec<PathBuf>) -> Forbidden {
        Forbidden {
            configured: Arc::new(paths),
            normalized: Arc::default(),
            added: Vec::new(),
        }
    }

    /// Every forbidden path: the configured ones normalized (now, if no reader did before),
    /// then the added ones.
    pub fn iter(&self) -> impl Iterator<Item = &PathBuf> {
        let normalized = self.normalized.get_or_init(|| {
            let mut normalizer = resolve::Normalizer::default();
            self.configured
                .iter()
                .map(|p| normalizer.normalize(p))
                .collect()
        });
        normalized.iter().chain(&self.added)
    }

    /// Forbids `path` too (an absolute, normalized path), in this policy and its later clones.
    pub fn push(&mut self, path: PathBuf) {
        self.added.push(path);
    }
}

impl<'a> IntoIterator for &'a Forbidden {
    type Item = &'a PathBuf;
    type IntoIter = Box<dyn Iterator<Item = &'a PathBuf> + 'a>;

    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}

/// Every path the policy forbids, `~` expanded (normalized by [`Forbidden`]): the built-in
/// list, `forbidden_paths`, the config directory, `workspace_dir`, the session database and
/// its directory. The one list a session's policy and `zeroclaw sandbox run` deny (through
/// [`Policy::profile`] and [`Policy::deny_forbidden`]).
fn denied_paths(config: &Config, autonomy: &AutonomyConfig) -> Vec<PathBuf> {
    let mut forbidden = forbidden_paths(autonomy);
    forbidden.push(config.config_dir.clone());
    forbidden.push(config.workspace_dir.clone());
    forbidden.push(config.store_path());
    if let Some(sessions) = config.store_path().parent() {
        forbidden.push(sessions.to_path_buf());
    }
    // A credential's secret file: the proxy reads it, no child ever does.
    let secret_files = config.sandbox.network.credentials.iter();
    for file in secret_files.filter_map(|c| c.value_file.as_deref()) {
        forbidden.push(resolve::expand_home(Path::new(file)));
    }
    forbidden
}

fn forbidden_paths(autonomy: &AutonomyConfig) -> Vec<PathBuf> {
    DEFAULT_FORBIDDEN
        .iter()
        .map(|p| p.to_string())
        .chain(autonomy.forbidden_paths.iter().cloned())
        .map(|p| resolve::expand_home(Path::new(&p)))
        .collect()
}
