//! The Landlock-only backend's private HOME and TMPDIR: a fresh 0700 directory per execution,
//! removed afterwards (the namespace backends use tmpfs instead), with the profile's
//! persistent HOME directories linked into the HOME (their Landlock write rules are the plan's).

use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use crate::error::{SetupError, Stage};
use crate::profile::HomeBind;

/// Creates `dir`, `dir/home` and `dir/tmp` (the first must not exist yet), and in the HOME a
/// symlink to each persistent directory at its place (directories above it 0700).
pub fn create(dir: &Path, links: &[HomeBind]) -> Result<(), SetupError> {
    let mut b = std::fs::DirBuilder::new();
    b.mode(0o700);
    let failed = |what: &str, d: &Path, e: std::io::Error| {
        SetupError::os(Stage::Scratch, format!("{what}({})", d.display()), &e)
    };
    for d in [dir.to_path_buf(), dir.join("home"), dir.join("tmp")] {
        b.create(&d).map_err(|e| failed("mkdir", &d, e))?;
    }
    b.recursive(true);
    for link in links {
        let at = dir.join("home").join(&link.at);
        if let Some(parent) = at.parent() {
            b.create(parent).map_err(|e| failed("mkdir", parent, e))?;
        }
        std::os::unix::fs::symlink(&link.host, &at).map_err(|e| failed("symlink", &at, e))?;
    }
    Ok(())
}

/// Whether the scratch HOME `home` holds anything but the links [`create`] made (and the
/// directories above them).
pub fn home_written(home: &Path, links: &[HomeBind]) -> bool {
    let made: Vec<PathBuf> = links.iter().map(|l| home.join(&l.at)).collect();
    holds_other(home, &made)
}

fn holds_other(dir: &Path, made: &[PathBuf]) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|entry| {
        let path = entry.path();
        let is_link = entry.file_type().is_ok_and(|t| t.is_symlink());
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if made.contains(&path) && is_link {
            false
        } else if is_dir && made.iter().any(|m| m.starts_with(&path) && *m != path) {
            holds_other(&path, made)
        } else {
            true
        }
    })
}

/// Removes the scratch directory (best effort; the links go, not what they point to).
pub fn remove(dir: &Path) {
    let _ = std::fs::remove_dir_all(dir);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_links_are_made_and_only_other_entries_count_as_written() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = tmp.path().join("cache");
        std::fs::create_dir(&cache).unwrap();
        let links = [".cache", ".cargo/registry"].map(|at| HomeBind {
            host: cache.clone(),
            at: at.into(),
        });
        let dir = tmp.path().join("s");
        create(&dir, &links).unwrap();
        let home = dir.join("home");
        assert_eq!(
            std::fs::read_link(home.join(".cargo/registry")).unwrap(),
            cache
        );
        std::fs::write(home.join(".cache/kept"), "x").unwrap();
        assert!(
            !home_written(&home, &links),
            "a cache write is not discarded"
        );
        std::fs::write(home.join(".cargo/config.toml"), "x").unwrap();
        assert!(home_written(&home, &links));
        remove(&dir);
        assert!(cache.join("kept").exists() && !dir.exists());
    }
}
