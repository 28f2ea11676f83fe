//! A directory nobody can write to, not even root: mode 0555, plus the immutable attribute
//! (`chattr +i`) when permission bits are not enough (CAP_DAC_OVERRIDE). Restored on drop so
//! the temp dir can be removed.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

pub struct ReadOnlyDir {
    pub path: PathBuf,
    immutable: bool,
}

impl ReadOnlyDir {
    /// Creates `path` read-only. `None` (with the reason printed) when this user cannot be
    /// stopped from writing; with `CI=true` that is a failure instead.
    pub fn new(path: &Path) -> Option<ReadOnlyDir> {
        std::fs::create_dir_all(path).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o555)).unwrap();
        let mut dir = ReadOnlyDir {
            path: path.to_owned(),
            immutable: false,
        };
        if dir.writable() {
            dir.immutable = chattr(path, "+i");
        }
        if dir.writable() {
            super::require_feature(
                "cannot make a directory read-only for this user (chattr +i unavailable)",
            );
            return None;
        }
        Some(dir)
    }

    fn writable(&self) -> bool {
        let probe = self.path.join(".probe");
        let ok = std::fs::write(&probe, b"").is_ok();
        let _ = std::fs::remove_file(&probe);
        ok
    }
}

impl Drop for ReadOnlyDir {
    fn drop(&mut self) {
        if self.immutable {
            chattr(&self.path, "-i");
        }
        let _ = std::fs::set_permissions(&self.path, std::fs::Permissions::from_mode(0o755));
    }
}

fn chattr(path: &Path, flag: &str) -> bool {
    Command::new("chattr")
        .arg(flag)
        .arg(path)
        .status()
        .is_ok_and(|s| s.success())
}
