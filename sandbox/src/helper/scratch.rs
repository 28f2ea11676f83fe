//! The Landlock-only backend's private HOME and TMPDIR: a fresh 0700 directory per execution,
//! removed afterwards (the namespace backends use tmpfs instead).

use std::os::unix::fs::DirBuilderExt;
use std::path::Path;

use crate::error::{SetupError, Stage};

/// Creates `dir`, `dir/home` and `dir/tmp` (the first must not exist yet).
pub fn create(dir: &Path) -> Result<(), SetupError> {
    let mut b = std::fs::DirBuilder::new();
    b.mode(0o700);
    for d in [dir.to_path_buf(), dir.join("home"), dir.join("tmp")] {
        b.create(&d)
            .map_err(|e| SetupError::os(Stage::Scratch, format!("mkdir({})", d.display()), &e))?;
    }
    Ok(())
}

/// Removes the scratch directory (best effort).
pub fn remove(dir: &Path) {
    let _ = std::fs::remove_dir_all(dir);
}
