//! Stages of runs that are gone, told from live ones by a lock, and removed safely.
//!
//! A helper that was SIGKILLed (or a daemon that crashed, or a machine that lost power) never
//! removes its stage. So each stage directory is `flock`ed exclusively by the helper that made
//! it, from its `mkdir` to the run's end ([`make`], [`release`]): the kernel drops that lock
//! when the process (and every process that inherited the descriptor) is gone, whatever its
//! pid was, so a reused pid never makes a dead stage look alive. The next run that lists the
//! directory holding stages removes each entry named like one ([`is_stage_name`]) whose lock it
//! can take without waiting ([`sweep`]) — never a stage a live run holds.
//!
//! The removal never follows a symlink and never enters another mount: each directory is
//! opened with `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV)` relative to
//! its parent's descriptor and each entry unlinked relative to it, so a symlink a child
//! planted (in its own stage, or in an entry named like a stage that is none) is removed
//! itself and never leads the removal to a host file. Anything it cannot remove that way
//! stays where it is.

use std::ffi::{CString, OsStr, OsString};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use nix::errno::Errno;
use nix::unistd::{UnlinkatFlags, unlinkat};

use super::name::PREFIX;

/// The stages this helper made, each open and locked until [`release`]d.
static HELD: Mutex<Vec<(PathBuf, std::fs::File)>> = Mutex::new(Vec::new());

/// Tries to make the stage again when a sweep removed it between our `mkdir` and our lock.
const ATTEMPTS: usize = 16;

/// How deep a removal goes (a git directory is shallow; a deeper tree stays).
const MAX_DEPTH: usize = 64;

/// Whether `name` is a stage's name as [`super::name::new_stage`] makes it:
/// `.zeroclaw-stage-<pid>-<n>-<nanos in hex>`.
pub fn is_stage_name(name: &OsStr) -> bool {
    let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(PREFIX)) else {
        return false;
    };
    let parts: Vec<&str> = rest.split('-').collect();
    let digits = |s: &str, radix: u32| !s.is_empty() && s.chars().all(|c| c.is_digit(radix));
    matches!(parts[..], [pid, n, nanos] if digits(pid, 10) && digits(n, 10) && digits(nanos, 16))
}

/// Makes the directory `stage` and holds its lock for this run (until [`release`]).
pub fn make(stage: &Path) -> std::io::Result<()> {
    for _ in 0..ATTEMPTS {
        std::fs::create_dir(stage)?;
        let dir = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
            .open(stage);
        let Ok(dir) = dir else {
            continue; // swept already
        };
        // Waits for a sweep that took it first (it then removes it: made again).
        dir.lock()?;
        if same_file(stage, &dir) {
            HELD.lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((stage.to_path_buf(), dir));
            return Ok(());
        }
    }
    Err(std::io::Error::other(format!(
        "{} keeps disappearing",
        stage.display()
    )))
}

/// Drops the lock of `stage` (its run is over, the stage removed or moved into place).
pub fn release(stage: &Path) {
    HELD.lock()
        .unwrap_or_else(|e| e.into_inner())
        .retain(|(path, _)| path != stage);
}

/// Closes this process's descriptors of the held stages without touching their locks, which
/// the helper's own keep (in a forked init: a descriptor of a host directory must not reach
/// the command).
pub fn forget() {
    HELD.lock().unwrap_or_else(|e| e.into_inner()).clear();
}

/// Removes each of `names` in the directory `parent` that is named like a stage, is not one
/// of ours, and whose lock is free (its run is gone); a symlink or file so named is unlinked
/// itself. Failures leave an entry as it is.
pub fn sweep(parent: &Path, names: &[OsString]) {
    let held: Vec<PathBuf> = HELD
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .map(|(p, _)| p.clone())
        .collect();
    let mut names = names
        .iter()
        .filter(|n| is_stage_name(n) && !held.contains(&parent.join(n)))
        .peekable();
    if names.peek().is_none() {
        return;
    }
    let Ok(dir) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
        .open(parent)
    else {
        return;
    };
    for name in names {
        match remove_if_stale(dir.as_fd(), name) {
            Ok(true) => tracing::debug!(
                target: "zeroclaw_sandbox::git",
                "removed the stage {} of a run that is gone",
                parent.join(name).display()
            ),
            Ok(false) => {}
            Err(e) => tracing::warn!(
                target: "zeroclaw_sandbox::git",
                "left the stage {} of a run that is gone in place ({e})",
                parent.join(name).display()
            ),
        }
    }
}

/// Removes the stage `name` below `parent` when its lock is free; `Ok(false)`: a live one.
fn remove_if_stale(parent: std::os::fd::BorrowedFd<'_>, name: &OsStr) -> Result<bool, Errno> {
    let stage = match open_below(parent, name) {
        Ok(fd) => std::fs::File::from(fd),
        // Not a directory (a symlink or a file named like one, no run's stage): the name goes,
        // never what it points at.
        Err(Errno::ELOOP | Errno::ENOTDIR) => {
            unlinkat(parent, name, UnlinkatFlags::NoRemoveDir)?;
            return Ok(true);
        }
        Err(e) => return Err(e),
    };
    if stage.try_lock().is_err() {
        return Ok(false);
    }
    // Still the entry we locked (another run's sweep may have removed it meanwhile).
    let there = nix::sys::stat::fstatat(parent, name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW)?;
    let ours = stage.metadata().map_err(|_| Errno::EIO)?;
    if (there.st_dev, there.st_ino) != (ours.dev(), ours.ino()) {
        return Ok(false);
    }
    clear(stage.as_fd(), 0)?;
    unlinkat(parent, name, UnlinkatFlags::RemoveDir)?;
    Ok(true)
}

/// Removes everything in the directory `dir`, never through a symlink or into another mount.
fn clear(dir: std::os::fd::BorrowedFd<'_>, depth: usize) -> Result<(), Errno> {
    if depth > MAX_DEPTH {
        return Err(Errno::ELOOP);
    }
    // Listed through the descriptor (as the placeholder guards do), not by a path again.
    let io = |e: std::io::Error| Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO));
    let names: Vec<OsString> = std::fs::read_dir(format!("/proc/self/fd/{}", dir.as_raw_fd()))
        .map_err(io)?
        .map(|e| e.map(|e| e.file_name()))
        .collect::<Result<_, _>>()
        .map_err(io)?;
    for name in names {
        // A symlink, a file, a socket: the entry itself goes. A directory says EISDIR.
        match unlinkat(dir, name.as_os_str(), UnlinkatFlags::NoRemoveDir) {
            Ok(()) | Err(Errno::ENOENT) => continue,
            Err(Errno::EISDIR) => {}
            Err(e) => return Err(e),
        }
        let sub = open_below(dir, &name)?;
        clear(sub.as_fd(), depth + 1)?;
        drop(sub);
        unlinkat(dir, name.as_os_str(), UnlinkatFlags::RemoveDir)?;
    }
    Ok(())
}

/// The directory `name` in `parent`, opened without following a symlink or crossing a mount.
fn open_below(parent: std::os::fd::BorrowedFd<'_>, name: &OsStr) -> Result<OwnedFd, Errno> {
    let c = CString::new(name.as_bytes()).map_err(|_| Errno::EINVAL)?;
    let flags = (libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC) as u64;
    let resolve = libc::RESOLVE_BENEATH
        | libc::RESOLVE_NO_SYMLINKS
        | libc::RESOLVE_NO_MAGICLINKS
        | libc::RESOLVE_NO_XDEV;
    crate::sys::openat2(parent.as_raw_fd(), &c, flags, resolve)
}

/// Whether `path` (not followed) is the file `open` refers to.
fn same_file(path: &Path, open: &std::fs::File) -> bool {
    match (path.symlink_metadata(), open.metadata()) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> tempfile::TempDir {
        tempfile::Builder::new()
            .prefix("zc-git-stale-")
            .tempdir_in("/var/tmp")
            .unwrap()
    }

    fn names(dir: &Path) -> Vec<OsString> {
        std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect()
    }

    #[test]
    fn only_stage_names_count() {
        let made = super::super::name::new_stage(Path::new("/x"));
        assert!(is_stage_name(made.file_name().unwrap()));
        for other in [
            ".zeroclaw-stage-",
            ".zeroclaw-stage-1-2",
            ".zeroclaw-stage-1-2-3-4",
            ".zeroclaw-stage-a-2-3",
            ".zeroclaw-stage-1-2-xyz",
            ".zeroclaw-placeholder",
            "objects",
        ] {
            assert!(!is_stage_name(OsStr::new(other)), "{other}");
        }
    }

    /// A stage whose lock is free goes, with what a run left in it; one we hold, one another
    /// process holds, and entries not named like a stage stay.
    #[test]
    fn a_free_stage_goes_a_held_one_stays() {
        let d = dir();
        let git = d.path();
        let dead = git.join(".zeroclaw-stage-1-0-1");
        std::fs::create_dir_all(dead.join("objects/ab")).unwrap();
        std::fs::write(dead.join("objects/ab/cd"), "x").unwrap();
        std::fs::write(dead.join("config"), "x").unwrap();
        let ours = super::super::name::new_stage(git);
        make(&ours).unwrap();
        let other = git.join(".zeroclaw-stage-2-0-2");
        std::fs::create_dir(&other).unwrap();
        let holder = std::fs::File::open(&other).unwrap();
        holder.lock().unwrap();
        std::fs::create_dir(git.join(".zeroclaw-stage-mine")).unwrap();
        sweep(git, &names(git));
        assert!(!dead.exists());
        assert!(ours.is_dir() && other.is_dir());
        assert!(git.join(".zeroclaw-stage-mine").is_dir());
        drop(holder);
        release(&ours);
        sweep(git, &names(git));
        assert!(!other.exists() && !ours.exists());
    }

    /// Symlinks in a stale stage (to a file, to a directory, as the stage itself) are removed
    /// as links: what they point at survives.
    #[test]
    fn a_sweep_never_follows_a_symlink() {
        let d = dir();
        let git = d.path().join("git");
        let outside = d.path().join("outside");
        std::fs::create_dir_all(outside.join("dir")).unwrap();
        std::fs::write(outside.join("victim"), "keep").unwrap();
        std::fs::write(outside.join("dir/inner"), "keep").unwrap();
        let fake = git.join(".zeroclaw-stage-3-0-3");
        std::fs::create_dir_all(fake.join("sub")).unwrap();
        std::os::unix::fs::symlink(outside.join("victim"), fake.join("config")).unwrap();
        std::os::unix::fs::symlink(outside.join("dir"), fake.join("sub/objects")).unwrap();
        std::os::unix::fs::symlink(&outside, git.join(".zeroclaw-stage-4-0-4")).unwrap();
        sweep(&git, &names(&git));
        assert_eq!(
            std::fs::read_to_string(outside.join("victim")).unwrap(),
            "keep"
        );
        assert_eq!(
            std::fs::read_to_string(outside.join("dir/inner")).unwrap(),
            "keep"
        );
        assert!(!fake.exists());
        // A symlink named like a stage: the link goes, nothing behind it.
        assert!(
            git.join(".zeroclaw-stage-4-0-4")
                .symlink_metadata()
                .is_err()
        );
        assert!(outside.join("dir/inner").is_file());
    }
}
