//! What a `full`-level `shell` reaches outside the session cwd: every top-level directory of
//! `/` read-write, except the pseudo and system-state ones and what the sandbox builds itself
//! (`/proc`, `/sys`, `/dev`, `/run`, `/tmp`, `/boot`, `/lost+found`, `/etc`, the child's HOME).
//! `/etc` stays the sandbox's read-only system root: it binds it idmapped when root launches,
//! so root-only files there stay unreadable, which a writable root below `/etc` would undo.
//!
//! The roots are handed to the sandbox already carved around every denied path: each root
//! holding a denied path is replaced by its children, recursively, leaving the denied path out.
//! The namespace backends would also mask denied paths inside a whole root, but the Landlock
//! rung only grants by hierarchy and does not carve its writable roots, so a whole `/home` or
//! `/var` there would reopen `~/.ssh` or the session database. The HOME directory itself is
//! never a root (a root holding it would replace the child's private HOME with the real one);
//! its entries are, minus the denied ones. Symlinks are left out (the sandbox binds real
//! directories only; a link's target is reached through its own root).

use std::path::{Path, PathBuf};

use zeroclaw_sandbox::Profile;
use zeroclaw_sandbox::host::scan::subtract;
use zeroclaw_sandbox::profile::home_dir;

/// Top-level directories never granted: kernel pseudo filesystems, runtime and boot state,
/// and the mount points the sandbox builds itself.
pub const NOT_REACHED: &[&str] = &[
    "/proc",
    "/sys",
    "/dev",
    "/run",
    "/tmp",
    "/boot",
    "/lost+found",
    "/etc",
];

/// Where the sandbox puts the child's private HOME on the namespace backends (the caller's
/// `$HOME`, else the sandbox crate's fallback).
fn sandbox_home() -> PathBuf {
    let home = home_dir().unwrap_or_else(|| PathBuf::from("/home/sandbox"));
    home.canonicalize().unwrap_or(home)
}

/// The read-write roots that give `profile` (already holding its denied paths) the whole host
/// but the excluded and denied paths.
pub fn host_roots(profile: &Profile) -> Vec<PathBuf> {
    let home = sandbox_home();
    let denied = &profile.denied;
    let mut around_home = denied.clone();
    around_home.push(home.clone());
    let mut roots = subtract(top_level(), &around_home);
    roots.extend(subtract(children(&home), denied));
    roots.retain(|r| is_real_dir_or_file(r) && !r.starts_with(&profile.workspace));
    roots.sort();
    roots.dedup();
    roots
}

/// Each real top-level directory of `/` that is not in [`NOT_REACHED`].
fn top_level() -> Vec<PathBuf> {
    children(Path::new("/"))
        .into_iter()
        .filter(|p| !NOT_REACHED.iter().any(|n| p == Path::new(n)))
        .filter(|p| p.symlink_metadata().is_ok_and(|m| m.is_dir()))
        .collect()
}

fn children(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|entries| entries.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}

/// Not a symlink, and a directory or a regular file (no sockets, fifos or devices).
fn is_real_dir_or_file(path: &Path) -> bool {
    path.symlink_metadata()
        .is_ok_and(|m| m.is_dir() || m.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excluded_and_denied_paths_are_never_roots_nor_under_one() {
        // Under /var/tmp: /tmp is never reached.
        let dir = tempfile::Builder::new().tempdir_in("/var/tmp").unwrap();
        let secret = dir.path().canonicalize().unwrap().join("secret");
        std::fs::create_dir(&secret).unwrap();
        std::fs::write(dir.path().join("open.txt"), "").unwrap();
        let profile = Profile::for_workspace("/nonexistent-ws").deny(&secret);
        let roots = host_roots(&profile);
        let covers = |p: &Path| roots.iter().any(|r| p.starts_with(r));
        for denied in profile.denied.iter().chain([&secret]) {
            assert!(
                !covers(denied),
                "{} is reachable: {roots:?}",
                denied.display()
            );
        }
        for n in NOT_REACHED {
            let inside = roots.iter().any(|r| r.starts_with(n));
            assert!(!covers(Path::new(n)) && !inside, "{n} is reachable");
        }
        assert!(!covers(&sandbox_home()), "HOME itself stays the sandbox's");
        assert!(covers(&dir.path().canonicalize().unwrap().join("open.txt")));
        assert!(covers(Path::new("/usr")));
    }

    #[test]
    fn symlinks_are_left_out() {
        let roots = host_roots(&Profile::for_workspace("/nonexistent-ws"));
        assert!(roots.iter().all(|r| !r.is_symlink()), "{roots:?}");
    }
}
