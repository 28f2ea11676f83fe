//! What a child running as uid 0 (a launcher started by root) can still read under its
//! read-only roots that the host's other users cannot: root-owned (or root-group) files and
//! directories without the "others" read bit, which no rung masks everywhere. Per rung: the
//! namespaces rung attaches `/etc` and the home toolchains idmapped (covered whole); bubblewrap
//! and Landlock mask `/etc`'s root-only files and a toolchain's outside its bulk directories
//! (`crate::host::scan`); everything else under a read-only root (`/usr`, `/opt`, an
//! `allow_read` root, a toolchain's `lib/` or `share/`) stays readable. `zeroclaw doctor`
//! lists what a bounded scan finds.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::backend::Backend;
use crate::profile::{HOME_TOOLCHAINS, Profile, SYSTEM_READ_ONLY, home_dir};

/// Entries a scan visits at most: a warm walk of 100 000 entries takes about 0.3 s here (a
/// debug build on a loaded machine, a few seconds); `/usr` alone holds about that many, the
/// rustup and pyenv toolchains 240 000 more.
pub const SCAN_CAP: usize = 200_000;
/// Paths a report keeps (the count goes on).
pub const LIST_CAP: usize = 200;

/// What a scan found on one rung.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RootReadable {
    /// The rung.
    pub backend: Backend,
    /// The read-only roots scanned (in order; the last one only in part when the scan is not
    /// complete).
    pub roots: Vec<PathBuf>,
    /// The read-only roots the scan did not reach (it stopped before them).
    pub not_scanned: Vec<PathBuf>,
    /// What the rung hides of them on its own, in words.
    pub covered: String,
    /// Root-only entries found readable (at most [`LIST_CAP`]; a directory stands for
    /// everything below it).
    pub paths: Vec<PathBuf>,
    /// How many were found in all.
    pub count: usize,
    /// The scan visited every entry (it stops after [`SCAN_CAP`]).
    pub complete: bool,
}

/// Scans `profile`'s read-only roots for what a uid-0 child on `backend` reads and others
/// cannot; `None` on a rung that does not confine reads (none, Seatbelt).
pub fn root_readable(backend: Backend, profile: &Profile, cap: usize) -> Option<RootReadable> {
    let scope = Scope::of(backend)?;
    let mut scan = Scan {
        denied: &profile.denied,
        visited: 0,
        cap,
        found: Vec::new(),
        count: 0,
    };
    let mut roots: Vec<PathBuf> = Vec::new();
    let mut not_scanned: Vec<PathBuf> = Vec::new();
    for root in scan_order(profile) {
        // A root that is a link into another (`/bin -> usr/bin`) is scanned once, as part of it.
        let Ok(real) = root.canonicalize() else {
            continue;
        };
        let seen = roots
            .iter()
            .chain(&not_scanned)
            .any(|r| real.starts_with(r));
        if seen || scope.covers_whole(&real) {
            continue;
        }
        if scan.visited > cap {
            not_scanned.push(real);
            continue;
        }
        let masked = scope.masked(&real);
        scan.walk(&real, &masked, 0);
        roots.push(real);
    }
    Some(RootReadable {
        backend,
        roots,
        not_scanned,
        covered: scope.words().into(),
        paths: scan.found,
        count: scan.count,
        complete: scan.visited <= cap,
    })
}

/// The read-only roots, the caller's own (`allow_read`) first, then the system's, then the
/// home toolchains (the largest): what the cap leaves out is the least likely to matter.
fn scan_order(profile: &Profile) -> Vec<&PathBuf> {
    let system = |r: &&PathBuf| SYSTEM_READ_ONLY.iter().any(|s| r.as_path() == Path::new(s));
    let toolchain = |r: &&PathBuf| is_toolchain(r);
    let own = profile
        .read_only
        .iter()
        .filter(|r| !system(r) && !toolchain(r));
    own.chain(profile.read_only.iter().filter(system))
        .chain(profile.read_only.iter().filter(toolchain))
        .collect()
}

/// What a rung masks itself.
enum Scope {
    /// `/etc` and the toolchains attached idmapped.
    Idmapped,
    /// `/etc`'s root-only files and the toolchains' outside their bulk, masked by a scan.
    Scanned,
}

impl Scope {
    fn of(backend: Backend) -> Option<Scope> {
        match backend {
            Backend::Namespaces => Some(Scope::Idmapped),
            Backend::Bubblewrap | Backend::Landlock => Some(Scope::Scanned),
            Backend::Seatbelt | Backend::None => None,
        }
    }

    fn words(&self) -> &'static str {
        match self {
            Scope::Idmapped => {
                "/etc and the home toolchains are attached idmapped (where the file system \
                 cannot, masked as on bubblewrap)"
            }
            Scope::Scanned => {
                "root-only files of /etc, and of the home toolchains outside lib/, share/, \
                 include/, src/, node_modules/ and the like, are masked"
            }
        }
    }

    fn covers_whole(&self, root: &Path) -> bool {
        root.starts_with("/etc") || matches!(self, Scope::Idmapped) && is_toolchain(root)
    }

    /// What the rung masks under `root` (by the same scans the rung uses).
    fn masked(&self, root: &Path) -> Vec<PathBuf> {
        match self {
            Scope::Scanned if is_toolchain(root) => crate::host::scan::toolchain_private(root),
            _ => Vec::new(),
        }
    }
}

fn is_toolchain(root: &Path) -> bool {
    home_dir().is_some_and(|home| HOME_TOOLCHAINS.iter().any(|t| home.join(t) == root))
}

struct Scan<'a> {
    denied: &'a [PathBuf],
    visited: usize,
    cap: usize,
    found: Vec<PathBuf>,
    count: usize,
}

impl Scan<'_> {
    fn walk(&mut self, dir: &Path, masked: &[PathBuf], depth: usize) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            self.visited += 1;
            if self.visited > self.cap {
                return;
            }
            let Ok(kind) = e.file_type() else { continue };
            if kind.is_symlink() || !(kind.is_dir() || kind.is_file()) {
                continue;
            }
            let path = e.path();
            if masked.contains(&path) || self.denied.iter().any(|d| path.starts_with(d)) {
                continue;
            }
            let Ok(meta) = e.metadata() else { continue };
            let others = if kind.is_dir() { 0o005 } else { 0o004 };
            let root_owned = meta.uid() == 0 || meta.gid() == 0;
            if meta.mode() & others != others && root_owned {
                self.count += 1;
                if self.found.len() < LIST_CAP {
                    self.found.push(path);
                }
            } else if kind.is_dir() && depth < 64 {
                self.walk(&path, masked, depth + 1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn root_only_entries_of_a_read_root_are_found_others_and_denied_ones_not() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let mode = |p: &Path, m| std::fs::set_permissions(p, std::fs::Permissions::from_mode(m));
        std::fs::create_dir_all(root.join("open/closed")).unwrap();
        std::fs::create_dir_all(root.join("denied")).unwrap();
        for (name, m) in [
            ("open/key", 0o600),
            ("open/readable", 0o644),
            ("denied/key", 0o600),
        ] {
            std::fs::write(root.join(name), "x").unwrap();
            mode(&root.join(name), m).unwrap();
        }
        mode(&root.join("open/closed"), 0o700).unwrap();
        let profile = Profile::for_workspace("/nonexistent-ws")
            .allow_read(&root)
            .deny(root.join("denied"));
        let profile = Profile {
            read_only: vec![root.clone()],
            ..profile
        };
        let mut found = root_readable(Backend::Landlock, &profile, SCAN_CAP).unwrap();
        found.paths.sort();
        let (uid, gid) = (nix::unistd::getuid(), nix::unistd::getgid());
        if uid.is_root() || gid.as_raw() == 0 {
            assert_eq!(
                found.paths,
                [root.join("open/closed"), root.join("open/key")]
            );
            assert_eq!(found.count, 2);
        } else {
            assert!(found.paths.is_empty(), "{found:?}");
        }
        assert!(found.complete);
        assert!(
            !root_readable(Backend::Landlock, &profile, 2)
                .unwrap()
                .complete
        );
        assert_eq!(root_readable(Backend::None, &profile, SCAN_CAP), None);
    }
}
