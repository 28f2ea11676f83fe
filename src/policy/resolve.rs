//! Path resolution shared by the policy's checks and lists: `~` expansion and normalization
//! (absolute, lexical `..` removed, symlinks of existing ancestors resolved).

use std::path::{Component, Path, PathBuf};

/// `~` and `~/...` against `$HOME`.
pub fn expand_home(path: &Path) -> PathBuf {
    let Ok(rest) = path.strip_prefix("~") else {
        return path.to_path_buf();
    };
    match zeroclaw_sandbox::profile::home_dir() {
        Some(home) => home.join(rest),
        None => path.to_path_buf(),
    }
}

/// Absolute, `.`/`..` removed lexically, and the longest existing ancestor canonicalized (so
/// a symlink planted in the workspace cannot point the check elsewhere).
pub fn normalize(path: &Path) -> PathBuf {
    let mut lexical = PathBuf::from("/");
    for part in path.components() {
        match part {
            Component::ParentDir => {
                lexical.pop();
            }
            Component::Normal(name) => lexical.push(name),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    let mut existing = lexical.as_path();
    let mut tail = Vec::new();
    loop {
        if let Ok(real) = existing.canonicalize() {
            return tail.iter().rev().fold(real, |acc, name| acc.join(name));
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                tail.push(name.to_owned());
                existing = parent;
            }
            _ => return lexical,
        }
    }
}
