//! What a `full`-level `shell` reaches outside the session cwd: every top-level directory of
//! `/` (read-only, or read-write under `[autonomy] full_host_writes`), except the pseudo and system-state ones and what the sandbox builds itself
//! (`/proc`, `/sys`, `/dev`, `/run`, `/tmp`, `/boot`, `/lost+found`, `/etc`, the child's HOME).
//! `/etc` stays the sandbox's read-only system root: it binds it idmapped when root launches,
//! so root-only files there stay unreadable, which a writable root below `/etc` would undo.
//!
//! The roots are handed to the sandbox already carved around every denied path (with the
//! sandbox's one carver, `plan::subtract_on_host`): each root holding a denied path is
//! replaced by its children, recursively, leaving the denied path out. On the Landlock-only
//! rung the plan carves its read and writable rules around the denied paths again
//! (`plan/landlock.rs`), so there this is the same result twice; on the namespace backends the
//! plan does not carve but masks a denied path inside a whole root, which a `full` shell would
//! see (an empty entry instead of none), and inside a whole writable root (`full_host_writes`)
//! a missing denied path would become a placeholder on the host for the call, its parents
//! pinned, and the call would start cold. Writable roots are also carved around the
//! never-writable paths: the Landlock-only rung enforces no protected path, so a writable
//! root holding one would make it writable there. The HOME directory itself is never a root
//! (a root holding it would replace the child's private HOME with the real one); its entries
//! are, minus the denied ones. Symlinks are left out (the sandbox binds real directories only;
//! a link's target is reached through its own root).

use std::path::{Path, PathBuf};

use zeroclaw_sandbox::Profile;
use zeroclaw_sandbox::host::mountinfo::mount_points;
use zeroclaw_sandbox::plan::subtract_on_host as subtract;
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

/// The roots that give `profile` (already holding its denied paths) the whole host but the
/// excluded and denied paths, and `also_out` (the never-writable paths, for the writable
/// roots of `full_host_writes`): every root holding one is carved around it.
pub fn host_roots(profile: &Profile, also_out: &[PathBuf]) -> Vec<PathBuf> {
    let home = sandbox_home();
    let mut denied = profile.denied.clone();
    denied.extend(also_out.iter().cloned());
    let denied = &denied;
    let mut around_home = denied.clone();
    around_home.push(home.clone());
    let mut roots = subtract(top_level(), &around_home);
    roots.extend(subtract(children(&home), denied));
    roots.retain(|r| is_real_dir_or_file(r) && !r.starts_with(&profile.workspace));
    roots.sort();
    roots.dedup();
    roots
}

/// [`host_roots`] for reading: each root that holds a host mount point below it is carved
/// around it, and the mount point is a root of its own (carved the same way around the mount
/// points below it). A read-only root is covered with a read-only overlay of itself on the
/// namespace backends (the socket seal), which the kernel refuses over the host's mounts below
/// it (`/mnt` holding one); a root at a mount point is fine.
pub fn host_read_roots(profile: &Profile) -> Vec<PathBuf> {
    let roots = host_roots(profile, &[]);
    let mounts = mount_points();
    let denied = &profile.denied;
    let mut candidates = roots.clone();
    candidates.extend(
        mounts
            .iter()
            .filter(|m| {
                roots.iter().any(|r| m.starts_with(r) && *m != r)
                    && !denied.iter().any(|d| m.starts_with(d))
                    && !m.starts_with(&profile.workspace)
                    && is_real_dir_or_file(m)
            })
            .cloned(),
    );
    let mut out = Vec::new();
    for root in candidates {
        let below: Vec<PathBuf> = mounts
            .iter()
            .filter(|m| m.starts_with(&root) && **m != root)
            .cloned()
            .collect();
        out.extend(subtract(vec![root], &below));
    }
    out.retain(|r| is_real_dir_or_file(r));
    out.sort();
    out.dedup();
    out
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
        let roots = host_roots(&profile, &[]);
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
    fn no_read_root_holds_a_mount_point_below_it() {
        let roots = host_read_roots(&Profile::for_workspace("/nonexistent-ws"));
        let mounts = mount_points();
        for root in &roots {
            let below = mounts.iter().find(|m| m.starts_with(root) && *m != root);
            assert!(
                below.is_none(),
                "{} holds the mount {below:?}",
                root.display()
            );
        }
        assert!(
            roots
                .iter()
                .any(|r| Path::new("/usr").starts_with(r) || r.starts_with("/usr"))
        );
    }

    #[test]
    fn symlinks_are_left_out() {
        let roots = host_roots(&Profile::for_workspace("/nonexistent-ws"), &[]);
        assert!(roots.iter().all(|r| !r.is_symlink()), "{roots:?}");
    }
}
