//! What the helper tells the launcher over the report pipe: one JSON object per line.

use serde::{Deserialize, Serialize};

use crate::error::SetupError;

/// What was actually enforced for one execution (sent just before `execve`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Enforcement {
    /// Backend name.
    pub backend: String,
    /// Namespaces the command lives in (`user`, `mount`, `pid`, `net`, `ipc`, `uts`).
    pub namespaces: Vec<String>,
    /// Landlock ABI in use (0 when none).
    pub landlock_abi: u32,
    /// `full`, `partial`, or `none`.
    pub landlock: String,
    /// Seccomp filter installed.
    pub seccomp: bool,
    /// `PR_SET_NO_NEW_PRIVS` set.
    pub no_new_privs: bool,
    /// Every capability set (incl. bounding and ambient) empty.
    pub capabilities_dropped: bool,
    /// Resource limits applied.
    pub rlimits: bool,
    /// `/tmp` and `HOME` are private to this execution.
    pub private_tmp: bool,
    /// Protected paths are read-only.
    pub protected_paths: bool,
    /// Reduced guarantees, in words.
    pub notes: Vec<String>,
    /// Served by a helper prepared before the call arrived (see [`crate::warm`]).
    #[serde(default)]
    pub warm: bool,
}

/// How the command ended, as seen by the helper.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ExitInfo {
    /// Exit code.
    Code(i32),
    /// Killed by a signal.
    Signal(i32),
}

/// One report line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Message {
    /// Confinement complete; the command is being executed.
    Ready(Enforcement),
    /// A stage failed.
    Failed(SetupError),
    /// The command ended.
    Exited(ExitInfo),
    /// The helper is done: every process of the call is reaped. Written by the helper as it
    /// exits, and by the zygote once it has reaped it (always the last line, so a helper that
    /// died without a word is noticed too).
    Ended(ExitInfo),
    /// A warm helper's root is built and waits for its call; the value is the
    /// [`crate::warm::fingerprint`] taken just before mounting.
    Prepared(u64),
}

impl Message {
    /// One JSON line.
    pub fn encode(&self) -> Vec<u8> {
        let mut line = serde_json::to_vec(self).unwrap_or_else(|_| b"{}".to_vec());
        line.push(b'\n');
        line
    }
}
