//! Path resolution shared by the policy's checks and lists: `~` expansion and normalization
//! (absolute, lexical `..` removed, symlinks of existing ancestors resolved), one path at a
//! time ([`normalize`]) or many sharing their ancestors ([`Normalizer`]).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
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
    Normalizer::default().normalize(path)
}

/// [`normalize`] of many paths: each ancestor they share is looked up once. A path is walked
/// from `/`, one `lstat` per component not seen before (a symlink is canonicalized whole),
/// where canonicalizing each path, and each of its ancestors until one exists, reads every
/// component again (the policy's lists: some fifty paths, most under `$HOME`).
#[derive(Default)]
pub struct Normalizer {
    /// Lexical ancestor (as written, absolute) → its canonical form; `None`: it does not
    /// resolve (missing, not a directory, not searchable, a dangling symlink).
    known: BTreeMap<OsString, Option<PathBuf>>,
}

impl Normalizer {
    /// [`normalize`] of `path`.
    pub fn normalize(&mut self, path: &Path) -> PathBuf {
        let lexical = lexical(path);
        let bytes = lexical.as_os_str().as_bytes();
        let mut real = PathBuf::from("/");
        // Each name of `lexical` in turn: `bytes[start..end]`, its ancestor `bytes[..end]`.
        let mut start = 1;
        while start < bytes.len() {
            let end = bytes[start..]
                .iter()
                .position(|&b| b == b'/')
                .map_or(bytes.len(), |n| start + n);
            let ancestor = OsStr::from_bytes(&bytes[..end]);
            let known = match self.known.get(ancestor) {
                Some(known) => known.as_deref(),
                None => {
                    let resolved = step(&real, OsStr::from_bytes(&bytes[start..end]));
                    self.known
                        .entry(ancestor.to_owned())
                        .or_insert(resolved)
                        .as_deref()
                }
            };
            match known {
                Some(next) => {
                    let real = real.as_mut_os_string();
                    real.clear();
                    real.push(next);
                }
                // The longest existing ancestor is resolved: the rest is kept as written.
                None => {
                    real.push(OsStr::from_bytes(&bytes[start..]));
                    return real;
                }
            }
            start = end + 1;
        }
        real
    }
}

/// `path` made absolute, `.` and `..` removed lexically (`..` of `/` is `/`); `path` itself
/// when it is so already (most are).
fn lexical(path: &Path) -> Cow<'_, Path> {
    let bytes = path.as_os_str().as_bytes();
    let plain = bytes.first() == Some(&b'/')
        && (bytes.len() == 1 || bytes.last() != Some(&b'/'))
        && bytes[1..]
            .split(|&b| b == b'/')
            .all(|name| !matches!(name, b"" | b"." | b".."));
    if plain {
        return Cow::Borrowed(path);
    }
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
    Cow::Owned(lexical)
}

/// The canonical form of `real/name`, `real` being canonical; `None` when it does not resolve.
fn step(real: &Path, name: &OsStr) -> Option<PathBuf> {
    let path = real.join(name);
    let meta = path.symlink_metadata().ok()?;
    if meta.file_type().is_symlink() {
        path.canonicalize().ok()
    } else {
        Some(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `normalize` was before [`Normalizer`]: canonicalize the lexical path, else each
    /// ancestor until one resolves, and append the rest.
    fn by_canonicalize(path: &Path) -> PathBuf {
        let lexical = lexical(path).into_owned();
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

    #[test]
    fn shared_ancestors_resolve_as_each_path_alone_would() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("real/sub")).unwrap();
        std::fs::write(root.join("real/file"), "").unwrap();
        std::os::unix::fs::symlink(root.join("real"), root.join("link")).unwrap();
        std::os::unix::fs::symlink("real/sub", root.join("relative")).unwrap();
        std::os::unix::fs::symlink(root.join("gone"), root.join("dangling")).unwrap();
        std::os::unix::fs::symlink(root.join("link/file"), root.join("to-file")).unwrap();
        let paths = [
            "real/sub/x",
            "link/sub/new/deeper",
            "link/../real/./sub",
            "relative/a/b",
            "dangling/a",
            "real/file/under-a-file",
            "to-file",
            "to-file/x",
            "missing/a/b",
            "link",
            "real//sub/",
            "link/sub/.",
        ];
        let mut shared = Normalizer::default();
        for p in paths.iter().chain(&paths) {
            let path = root.join(p);
            let want = by_canonicalize(&path);
            assert_eq!(shared.normalize(&path), want, "{p}");
            assert_eq!(normalize(&path), want, "{p}");
        }
        assert_eq!(normalize(Path::new("/")), PathBuf::from("/"));
        assert_eq!(normalize(Path::new("/../..")), PathBuf::from("/"));
    }
}
