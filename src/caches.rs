//! The persistent package caches of `shell` children: which places of the child's private
//! HOME persist ([`PLACES`]; nothing else of it does), where they live on the host
//! (`<workspace_dir>/caches/p-<principal>/a-<agent>/w-<workspace hash>/<name>`, or the wider
//! `shared` directory of `[sandbox.caches] scope`), making them (mode 0700) before a call, and
//! their sizes for `zeroclaw doctor`. The sandbox binds each at its place
//! ([`zeroclaw_sandbox::HomeBind`]).

use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use zeroclaw_sandbox::Profile;

use crate::config::Config;
use crate::config::caches::CacheScope;

/// Each persistent cache: its directory name on the host and its place in the child's HOME.
/// Only caches: a place here must hold nothing a tool reads as configuration or runs from
/// (CARGO_HOME as a whole would carry `config.toml`; `~/.npm` would carry `_npx`).
pub const PLACES: &[(&str, &str)] = &[
    // XDG caches: pip, uv, go's build cache, and the rest of `~/.cache`.
    ("cache", ".cache"),
    // cargo's downloaded crates and unpacked sources, and its git checkouts.
    ("cargo-registry", ".cargo/registry"),
    ("cargo-git", ".cargo/git"),
    // npm's content-addressed cache (not `~/.npm` itself: `_npx` holds installed programs).
    ("npm-cacache", ".npm/_cacache"),
    // go's module cache (GOMODCACHE's default; `~/go/bin` stays private).
    ("go-mod", "go/pkg/mod"),
];

/// The clause `/sandbox` and `doctor` add to a shell's writes: which HOME places persist.
pub fn described(scope: CacheScope) -> String {
    let places: Vec<String> = PLACES.iter().map(|(_, at)| format!("~/{at}")).collect();
    format!(
        " but for the package caches in it, which persist per {} ({}; [sandbox.caches])",
        match scope {
            CacheScope::Workspace => "principal, agent and workspace",
            CacheScope::Agent => "principal and agent",
            CacheScope::Principal => "principal",
        },
        places.join(", ")
    )
}

/// Where a daemon's caches live, and how widely one is shared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caches {
    /// `<workspace_dir>/caches`.
    pub root: PathBuf,
    pub scope: CacheScope,
    pub enabled: bool,
}

impl Caches {
    /// The configuration's `[sandbox.caches]` under its `workspace_dir`.
    pub fn from_config(config: &Config) -> Caches {
        let workspace_dir = crate::policy::resolve::normalize(&config.workspace_dir);
        Caches {
            root: workspace_dir.join("caches"),
            scope: config.sandbox.caches.scope,
            enabled: config.sandbox.caches.enabled,
        }
    }

    /// No persistent cache (a policy without a configuration).
    pub fn disabled() -> Caches {
        Caches {
            root: PathBuf::new(),
            scope: CacheScope::Workspace,
            enabled: false,
        }
    }

    /// The directory holding the caches of `principal` (`None`: the local user, stdio and
    /// the CLI), `agent` and `workspace` at this scope.
    pub fn dir_for(&self, principal: Option<&str>, agent: &str, workspace: &Path) -> PathBuf {
        let principal = self
            .root
            .join(format!("p-{}", name(principal.unwrap_or("local"))));
        match self.scope {
            CacheScope::Principal => principal.join("shared"),
            CacheScope::Agent => principal.join(format!("a-{}", name(agent))).join("shared"),
            CacheScope::Workspace => principal
                .join(format!("a-{}", name(agent)))
                .join(format!("w-{}", workspace_hash(workspace))),
        }
    }

    /// `profile` with the caches of this call bound in its HOME, made first when missing.
    /// A cache that cannot be made is logged and left out: the call runs with a cold one.
    pub fn bind(
        &self,
        mut profile: Profile,
        principal: Option<&str>,
        agent: &str,
        workspace: &Path,
    ) -> Profile {
        if !self.enabled {
            return profile;
        }
        let dir = self.dir_for(principal, agent, workspace);
        match make(&self.root, &dir) {
            Ok(dir) => {
                for (name, at) in PLACES {
                    profile = profile.bind_in_home(dir.join(name), at);
                }
            }
            Err(e) => tracing::warn!(
                dir = %dir.display(),
                error = %e,
                "persistent caches unavailable for this call"
            ),
        }
        profile
    }
}

/// Makes `root` and `dir` below it with each cache directory, every directory from `root`
/// down mode 0700 and none a symlink; answers `dir` by its real path (the Landlock rung names
/// rule paths without links).
fn make(root: &Path, dir: &Path) -> std::io::Result<PathBuf> {
    let mut builder = std::fs::DirBuilder::new();
    builder.mode(0o700).recursive(true);
    for (name, _) in PLACES {
        builder.create(dir.join(name))?;
    }
    let below = dir.strip_prefix(root).unwrap_or(dir);
    let mut at = root.to_path_buf();
    let mut chain = vec![at.clone()];
    for part in below.components() {
        at.push(part);
        chain.push(at.clone());
    }
    chain.extend(PLACES.iter().map(|(name, _)| dir.join(name)));
    for path in chain {
        let meta = path.symlink_metadata()?;
        if !meta.is_dir() {
            return Err(std::io::Error::other(format!(
                "{} is not a directory",
                path.display()
            )));
        }
        if meta.permissions().mode() & 0o7777 != 0o700 {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700))?;
        }
    }
    let real_root = root.canonicalize()?;
    Ok(real_root.join(below))
}

/// A principal or agent name as one path component: ASCII letters, digits, `-`, `_` and
/// `.` kept, every other byte `%XX` (so distinct names stay distinct).
fn name(raw: &str) -> String {
    let mut out = String::new();
    for b in raw.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The first 16 hex digits of the SHA-256 of the workspace's canonical path.
fn workspace_hash(workspace: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let canonical = workspace
        .canonicalize()
        .unwrap_or_else(|_| workspace.to_path_buf());
    let digest = Sha256::digest(canonical.as_os_str().as_bytes());
    hex::encode(&digest[..8])
}

/// The size of one principal's caches, for `zeroclaw doctor`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Size {
    pub dir: PathBuf,
    pub bytes: u64,
    /// The walk stopped at [`SIZE_WALK_CAP`] entries: `bytes` is a lower bound.
    pub partial: bool,
}

/// The most entries [`sizes`] looks at, over all caches (a bounded walk).
pub const SIZE_WALK_CAP: usize = 200_000;

/// Each principal's directory under `root` with the bytes its files use (symlinks not
/// followed), in name order; nothing when `root` does not exist.
pub fn sizes(root: &Path) -> Vec<Size> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    dirs.sort();
    let mut budget = SIZE_WALK_CAP;
    dirs.into_iter()
        .map(|dir| {
            let mut bytes = 0;
            let partial = !walk(&dir, &mut bytes, &mut budget);
            Size {
                dir,
                bytes,
                partial,
            }
        })
        .collect()
}

/// Adds the sizes of the files below `dir`; `false` when the budget ran out.
fn walk(dir: &Path, bytes: &mut u64, budget: &mut usize) -> bool {
    use std::os::unix::fs::MetadataExt;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            if *budget == 0 {
                return false;
            }
            *budget -= 1;
            let Ok(meta) = entry.path().symlink_metadata() else {
                continue;
            };
            if meta.is_dir() {
                stack.push(entry.path());
            } else {
                *bytes += meta.blocks() * 512;
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_one_component_and_distinct() {
        assert_eq!(name("uid:1000"), "uid%3A1000");
        assert_eq!(name("../x"), "..%2Fx");
        assert_ne!(name("a/b"), name("a%2Fb"));
    }

    #[test]
    fn the_scope_decides_what_is_shared() {
        let mut c = Caches {
            root: PathBuf::from("/w/caches"),
            scope: CacheScope::Workspace,
            enabled: true,
        };
        let (a, b) = (Path::new("/p/one"), Path::new("/p/two"));
        assert_ne!(c.dir_for(None, "x", a), c.dir_for(None, "x", b));
        assert_ne!(c.dir_for(None, "x", a), c.dir_for(None, "y", a));
        let dir = c.dir_for(None, "x", a);
        assert_eq!(dir.parent(), Some(Path::new("/w/caches/p-local/a-x")));
        let leaf = dir.file_name().unwrap().to_string_lossy().into_owned();
        assert!(leaf.starts_with("w-") && leaf.len() == 18, "{leaf}");
        c.scope = CacheScope::Agent;
        assert_eq!(c.dir_for(None, "x", a), c.dir_for(None, "x", b));
        assert_ne!(c.dir_for(None, "x", a), c.dir_for(None, "y", a));
        c.scope = CacheScope::Principal;
        assert_eq!(c.dir_for(None, "x", a), c.dir_for(None, "y", b));
        assert_ne!(c.dir_for(None, "x", a), c.dir_for(Some("token:t"), "x", a));
    }

    #[test]
    fn made_dirs_are_0700_and_sized() {
        let tmp = tempfile::tempdir().unwrap();
        let c = Caches {
            root: tmp.path().join("caches"),
            scope: CacheScope::Workspace,
            enabled: true,
        };
        let p = c.bind(Profile::for_workspace(tmp.path()), None, "a", tmp.path());
        assert_eq!(p.home_binds.len(), PLACES.len());
        for bind in &p.home_binds {
            let mut dir = bind.host.as_path();
            while dir.starts_with(tmp.path().canonicalize().unwrap().join("caches")) {
                let mode = dir.metadata().unwrap().permissions().mode() & 0o777;
                assert_eq!(mode, 0o700, "{}", dir.display());
                dir = dir.parent().unwrap();
            }
        }
        std::fs::write(p.home_binds[0].host.join("f"), vec![1u8; 8192]).unwrap();
        let sizes = sizes(&c.root);
        assert_eq!(sizes.len(), 1);
        assert!(sizes[0].bytes >= 8192 && !sizes[0].partial, "{sizes:?}");
    }
}
