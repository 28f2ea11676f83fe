//! Landing a call's upper layer into its workspace (to be written: see `super`).

use std::path::{Path, PathBuf};

/// What a landing did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Landing {
    /// Every path the call changed, relative to the workspace, in landing order.
    pub changed: Vec<Changed>,
    /// One line per refused entry (a git control file, hook or key), for the tool result.
    pub refused: Vec<String>,
}

/// One changed path.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Changed {
    /// Relative to the workspace.
    pub path: PathBuf,
    /// What happened to it.
    pub change: Change,
}

/// What happened to a path.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Change {
    /// A regular file written (created or replaced): its size and SHA-256 (hex).
    Written { bytes: u64, sha256: String },
    /// A symbolic link made, and what it points to.
    Symlink { target: PathBuf },
    /// A directory made (or its mode changed).
    Directory,
    /// Removed (a file, a link or a whole tree).
    Removed,
}

/// Validates the upper layer of the layer directory `dir` and lands it in `workspace`.
pub fn land(dir: &Path, workspace: &Path) -> std::io::Result<Landing> {
    let _ = (dir, workspace);
    Err(std::io::Error::other("landing is not written yet"))
}

/// Completes or removes every unlocked layer directory under `layers`.
pub fn recover(layers: &Path) -> Vec<Landing> {
    let _ = layers;
    Vec::new()
}
