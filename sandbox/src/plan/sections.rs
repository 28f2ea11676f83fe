//! The plan's typed sections, one per concern the launcher and the helper execute: the
//! network and egress proxy ([`EgressPlan`]), the process's limits ([`ProcessPlan`]),
//! bubblewrap ([`BwrapPlan`]) and the call's private HOME ([`HomePlan`]); with the values
//! they carry ([`ProxyPorts`], [`GitGlobal`]).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::profile::Limits;

/// The loopback ports of the egress proxy's two listeners inside the child's namespace
/// (`network = proxy`), or on the host's loopback on a rung without one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProxyPorts {
    pub http: u16,
    pub socks: u16,
}

/// The child's network: a namespace of its own or none, and the egress proxy of
/// `network = proxy` (see [`crate::plan::egress`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EgressPlan {
    /// New network namespace (the namespace rungs; Seatbelt denies the network instead).
    pub own_namespace: bool,
    /// The egress proxy's listener ports, bound by the helper in the new network namespace
    /// and sent back to the launcher (`network = proxy`).
    #[serde(default)]
    pub ports: Option<ProxyPorts>,
    /// `network = proxy` without a network namespace (Landlock-only and Seatbelt rungs): the
    /// launcher binds the listeners itself on the host's loopback, at ephemeral ports, before
    /// the helper starts, and fills in `ports`, the environment and the rules with them
    /// ([`crate::egress::launch::bind_on_host`]); the helper sends nothing back.
    #[serde(default)]
    pub on_host: bool,
    /// Transparent egress (`network = proxy` on the namespace backend): the destination ports
    /// the helper listens on in the call's network namespace, beside the DNS stub's socket,
    /// once it made every IPv4 address local to `lo` (see [`crate::egress::handover`]).
    #[serde(default)]
    pub transparent: Option<Vec<u16>>,
    /// Transparent egress on bubblewrap launched by another user (set by the helper, see
    /// `helper::backends::bubblewrap`): bwrap's own network and mount namespaces belong to a
    /// user namespace above its inner stage's, so the stage makes a network and a mount
    /// namespace of its own, with the capabilities bwrap kept it, before it routes, binds the
    /// listeners and covers the two files (`helper::egress::send_from_inner`).
    #[serde(default)]
    pub inner_namespaces: bool,
}

/// What the helper sets on itself and the command: resource limits, umask, and the per-user
/// counts of the child's user namespace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessPlan {
    /// Resource limits.
    pub limits: Limits,
    /// The umask of the helper and the command (the profile's).
    #[serde(default = "crate::profile::default_umask")]
    pub umask: u32,
    /// Per-user count maxima (`/proc/sys/user/max_*`, by file name) for the child's user
    /// namespace, from the host's values, read once per process (the namespace backends; see
    /// `helper/ucounts.rs`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub user_limits: Vec<(String, u64)>,
}

/// The bubblewrap backend's executable and how it runs the inner stage (set by the planner
/// with the executable, [`crate::plan::bubblewrap`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BwrapPlan {
    /// The bubblewrap executable.
    pub path: PathBuf,
    /// That bwrap is setuid root and we are not root: it refuses `--cap-add`, so the inner
    /// stage can set no per-user counts and make no namespaces of its own (read once per
    /// sandbox: `crate::host::bwrap_refuses_cap_add`).
    #[serde(default)]
    pub refuses_cap_add: bool,
    /// bubblewrap started by root: bwrap keeps the inner stage the capabilities to cover the
    /// read-only roots with overlays (see `helper::mounts::SocketSeal`).
    #[serde(default)]
    pub seal: bool,
}

/// The file name of [`GitGlobal`] in the child's private HOME (`GIT_CONFIG_GLOBAL`). Not
/// `.gitconfig`: a `full` session's HOME shows the user's real `~/.gitconfig` read-only there.
pub const GIT_GLOBAL_NAME: &str = ".zeroclaw-gitconfig";

/// The user's global git configuration as the child sees it (see [`crate::git::global`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GitGlobal {
    /// Where the helper writes it, in the call's private HOME (the child's
    /// `GIT_CONFIG_GLOBAL`).
    pub path: PathBuf,
    /// The validated copy.
    pub text: String,
}

/// What the helper puts in the call's private HOME beside the mounts: the Landlock-only
/// backend's scratch directory and its links, and the user's git configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HomePlan {
    /// Private HOME/TMPDIR directory the helper creates and removes (Landlock-only backend).
    pub scratch: Option<PathBuf>,
    /// The profile's persistent HOME directories the helper links into the scratch HOME
    /// (Landlock-only backend; the namespace rungs bind them among the plan's mounts).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<crate::profile::HomeBind>,
    /// The user's global git configuration, written by the helper into the private HOME just
    /// before the command starts and compared once it ended (the backends with a private
    /// HOME: namespaces, bubblewrap, Landlock with its scratch directory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_global: Option<GitGlobal>,
}
