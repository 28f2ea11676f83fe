//! Where a private `.git` stage lives: the name every stage starts with (so the walks over a
//! `.git` skip stages, and a placeholder holding only ours counts as empty) and a fresh,
//! unique stage path. Below every other git module, so they all can name a stage without
//! importing one another.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Whether `name` is one the sandbox keeps for itself in a `.git` or beside it (`.zeroclaw-*`:
/// a stage, the placeholder's marker, a temporary file): one a run made is refused, never
/// landed (a fake stage a later sweep would take for a killed run's).
pub fn is_ours(name: &str) -> bool {
    name.starts_with(".zeroclaw-")
}

/// Name prefix of a stage inside a `.git` placeholder.
pub const PREFIX: &str = ".zeroclaw-stage-";

/// A new stage path inside the placeholder `git` (unique per process and call).
pub fn new_stage(git: &Path) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    git.join(format!("{PREFIX}{}-{n}-{nanos:x}", std::process::id()))
}
