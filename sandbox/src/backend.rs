//! Backend names: what the operator asks for ([`BackendChoice`]) and what runs ([`Backend`]).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The `[sandbox] backend` setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum BackendChoice {
    /// The strongest backend that works here; an error when none does.
    #[default]
    Auto,
    /// User, mount, pid, net, ipc, uts namespaces + Landlock + seccomp + caps + rlimits.
    Namespaces,
    /// bubblewrap with our Landlock + seccomp stage inside.
    Bubblewrap,
    /// Landlock + seccomp only (reduced guarantees).
    Landlock,
    /// macOS `sandbox-exec`.
    Seatbelt,
    /// No confinement at all; only when named explicitly.
    None,
}

/// A concrete backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// See [`BackendChoice::Namespaces`].
    Namespaces,
    /// See [`BackendChoice::Bubblewrap`].
    Bubblewrap,
    /// See [`BackendChoice::Landlock`].
    Landlock,
    /// See [`BackendChoice::Seatbelt`].
    Seatbelt,
    /// See [`BackendChoice::None`].
    None,
}

impl Backend {
    /// Every backend, strongest first (the ladder in DESIGN.md).
    pub const LADDER: [Backend; 5] = [
        Backend::Namespaces,
        Backend::Bubblewrap,
        Backend::Landlock,
        Backend::Seatbelt,
        Backend::None,
    ];

    /// The backend's configuration name.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Namespaces => "namespaces",
            Backend::Bubblewrap => "bubblewrap",
            Backend::Landlock => "landlock",
            Backend::Seatbelt => "seatbelt",
            Backend::None => "none",
        }
    }
}

impl BackendChoice {
    /// The choice's configuration name.
    pub fn name(self) -> &'static str {
        match self {
            BackendChoice::Auto => "auto",
            BackendChoice::Namespaces => "namespaces",
            BackendChoice::Bubblewrap => "bubblewrap",
            BackendChoice::Landlock => "landlock",
            BackendChoice::Seatbelt => "seatbelt",
            BackendChoice::None => "none",
        }
    }

    /// The one backend named, or `None` for `auto`.
    pub fn named(self) -> Option<Backend> {
        match self {
            BackendChoice::Auto => None,
            BackendChoice::Namespaces => Some(Backend::Namespaces),
            BackendChoice::Bubblewrap => Some(Backend::Bubblewrap),
            BackendChoice::Landlock => Some(Backend::Landlock),
            BackendChoice::Seatbelt => Some(Backend::Seatbelt),
            BackendChoice::None => Some(Backend::None),
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Display for BackendChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for BackendChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        [
            BackendChoice::Auto,
            BackendChoice::Namespaces,
            BackendChoice::Bubblewrap,
            BackendChoice::Landlock,
            BackendChoice::Seatbelt,
            BackendChoice::None,
        ]
        .into_iter()
        .find(|c| c.name() == s)
        .ok_or_else(|| {
            format!("unknown sandbox backend {s:?}: auto, namespaces, bubblewrap, landlock, seatbelt or none")
        })
    }
}

/// What the Landlock-only rung does not guarantee (no namespaces), for the `auto` error, the
/// report's REDUCED lines and the docs. It is never chosen by `auto`, only by name.
pub const LANDLOCK_RUNG_LIMITS: &[&str] = &[
    ".git/hooks and .git/config are not protected (no mount namespace to make them read-only)",
    "no transactional workspace: writes reach the workspace directly, and a repository a command creates below it is not validated, nor listed in the audit record",
    "a larger repository the workspace lies in is readable, its git directory not writable (no stage): git status works there, a commit does not",
    "/tmp is the host's (only TMPDIR and HOME are private)",
    "the private TMPDIR and HOME have no size cap (directories on the host's file system, not tmpfs capped at the file-size limit): only each file's size (RLIMIT_FSIZE) is bounded",
    "no Unix datagram socket can be made (a filter cannot read a sendto address)",
    "the command's descendants cannot read /proc/self (only the command's own /proc entry is granted)",
    "no user namespace: inotify instances and watches count against the host uid's own limits while the call runs",
    "names and link targets of denied paths can be learned (stat, readlink and inotify_add_watch are not covered by Landlock; extended-attribute reads are refused)",
    "the command's own /proc/<pid>/net lists the host's sockets (its descendants' /proc/net answers EACCES, the command's does not)",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choice_parses_and_prints_every_name() {
        for name in [
            "auto",
            "namespaces",
            "bubblewrap",
            "landlock",
            "seatbelt",
            "none",
        ] {
            let c: BackendChoice = name.parse().unwrap();
            assert_eq!(c.to_string(), name);
        }
        assert!("docker".parse::<BackendChoice>().is_err());
    }

    #[test]
    fn choice_serializes_lowercase() {
        assert_eq!(
            serde_json::to_string(&BackendChoice::Landlock).unwrap(),
            "\"landlock\""
        );
        let c: BackendChoice = serde_json::from_str("\"none\"").unwrap();
        assert_eq!(c, BackendChoice::None);
    }

    #[test]
    fn auto_names_no_backend() {
        assert_eq!(BackendChoice::Auto.named(), None);
        assert_eq!(BackendChoice::Bubblewrap.named(), Some(Backend::Bubblewrap));
    }
}
