//! Landing a call's upper layer into its workspace: validation ([`super::control`]), the
//! journal that marks it done, the application of the layer (whiteouts become removals, an
//! opaque or new directory one rename, files and links renamed into place, each operation
//! idempotent so a re-run finishes a landing cut short), and the recovery of the layers a
//! dead daemon left ([`recover`]).

use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::git::validate::is_whiteout;

use super::control;
use super::moves::{move_file, move_tree};
use super::tree::{entries, remove};
use crate::wire::{Change, Changed};

pub use super::dir::JOURNAL;

/// What a landing did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Landing {
    /// Every path the call changed, relative to the workspace, in landing order.
    pub changed: Vec<Changed>,
    /// One line per refused entry (a git control file, hook or key), for the tool result.
    pub refused: Vec<String>,
}

/// Validates the upper layer of the layer directory `dir` and lands it in `workspace`,
/// leaving `dir` inert (no journal: whatever is left in it never lands) for its owner to
/// remove once the call's end is told ([`super::dir::release`]), or for [`recover`]. A layer
/// with a journal (a landing cut short) is not validated again: its
/// landing is finished, and its `changed` lists what this run of it did only. If validation
/// fails (an entry it cannot read), nothing lands and `dir` stays, without a journal (so
/// [`recover`] removes it).
pub fn land(dir: &Path, workspace: &Path) -> io::Result<Landing> {
    let layers = dir
        .parent()
        .ok_or_else(|| io::Error::other("a layer directory has a parent"))?;
    // The landings of concurrent calls run one at a time: each holds the layers directory's
    // lock (`flock`, exclusive; a directory, so that it goes once empty, `super::dir::release`).
    let lock = std::fs::File::open(layers)?;
    lock.lock()?;
    let upper = super::dir::upper(dir);
    let journal = dir.join(JOURNAL);
    // A call that wrote nothing: no journal, no sync, nothing to do (most calls). So too
    // a layer whose upper directory is gone (a warm helper discarded after its layers
    // directory was removed around it): there is nothing to land, and nothing is written.
    let untouched = match std::fs::read_dir(&upper) {
        Ok(mut entries) => entries.next().is_none(),
        Err(e) => e.kind() == io::ErrorKind::NotFound,
    };
    if untouched && journal.symlink_metadata().is_err() {
        return Ok(Landing::default());
    }
    let refused = match std::fs::read(&journal) {
        Ok(bytes) => String::from_utf8_lossy(&bytes)
            .lines()
            .map(str::to_owned)
            .collect(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let refused: Vec<String> = if upper.symlink_metadata().is_ok_and(|m| m.is_dir()) {
                control::check(&upper, workspace)?
            } else {
                Vec::new()
            }
            .into_iter()
            .map(|l| l.replace(['\n', '\r'], " "))
            .collect();
            write_journal(dir, &refused)?;
            refused
        }
        Err(e) => return Err(e),
    };
    let mut changed = Vec::new();
    if upper.symlink_metadata().is_ok_and(|m| m.is_dir()) {
        apply(&upper, workspace, Path::new(""), &mut changed)?;
    }
    syncfs(workspace)?;
    // Without its journal the layer is only removed, never applied again.
    std::fs::remove_file(&journal)?;
    std::fs::File::open(dir)?.sync_all()?;
    drop(lock);
    Ok(Landing { changed, refused })
}

/// Writes the journal: the validated layer is made durable first (validation changed it in
/// place), then the journal, by a rename, synced.
fn write_journal(dir: &Path, refused: &[String]) -> io::Result<()> {
    use std::io::Write;
    syncfs(dir)?;
    let tmp = dir.join("journal.tmp");
    let mut file = std::fs::File::create(&tmp)?;
    for line in refused {
        writeln!(file, "{line}")?;
    }
    file.sync_all()?;
    std::fs::rename(&tmp, dir.join(JOURNAL))?;
    std::fs::File::open(dir)?.sync_all()
}

/// `syncfs` of the file system holding `path`.
fn syncfs(path: &Path) -> io::Result<()> {
    let file = std::fs::File::open(path)?;
    nix::unistd::syncfs(&file).map_err(io::Error::from)
}

/// Lands the upper directory `upper/rel` over `ws/rel` (a directory there), top-down.
fn apply(upper: &Path, ws: &Path, rel: &Path, out: &mut Vec<Changed>) -> io::Result<()> {
    for (name, meta) in entries(&upper.join(rel))? {
        if name.as_os_str() == "." || name.as_os_str() == ".." || name.as_os_str().is_empty() {
            continue;
        }
        let path = rel.join(&name);
        let (src, dst) = (upper.join(&path), ws.join(&path));
        let change = if is_whiteout(&meta) {
            remove(&dst)?;
            Change::Removed
        } else if meta.is_dir() {
            directory(upper, ws, &path, &meta, out)?;
            continue;
        } else if meta.is_file() {
            let (bytes, sha256) = digest(&src)?;
            remove_dir(&dst)?;
            move_file(&src, &dst)?;
            Change::Written { bytes, sha256 }
        } else if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&src)?;
            remove_dir(&dst)?;
            move_file(&src, &dst)?;
            Change::Symlink { target }
        } else {
            continue;
        };
        out.push(Changed { path, change });
    }
    Ok(())
}

/// Lands the upper directory `rel`: one move if it is opaque or new, else its mode and its
/// entries.
fn directory(
    upper: &Path,
    ws: &Path,
    rel: &Path,
    meta: &std::fs::Metadata,
    out: &mut Vec<Changed>,
) -> io::Result<()> {
    let (src, dst) = (upper.join(rel), ws.join(rel));
    let there = dst.symlink_metadata().ok().filter(|m| m.is_dir());
    let Some(there) = there.filter(|_| !super::rules::opaque(&src)) else {
        prepare(&src, rel, out)?;
        remove(&dst)?;
        return move_tree(&src, &dst);
    };
    let mode = meta.permissions().mode() & 0o7777;
    let chmod = there.permissions().mode() & 0o7777 != mode;
    if chmod {
        out.push(Changed {
            path: rel.to_path_buf(),
            change: Change::Directory,
        });
    }
    if mode & 0o700 != 0o700 {
        // Its entries are renamed out of it (it is removed with the layer).
        std::fs::set_permissions(&src, std::fs::Permissions::from_mode(mode | 0o700))?;
    }
    apply(upper, ws, rel, out)?;
    if chmod {
        std::fs::set_permissions(&dst, std::fs::Permissions::from_mode(mode))?;
    }
    Ok(())
}

/// Before a directory moves whole: records it and everything below it, and removes from it
/// what does not land (whiteouts, fifos, sockets, devices).
fn prepare(dir: &Path, rel: &Path, out: &mut Vec<Changed>) -> io::Result<()> {
    out.push(Changed {
        path: rel.to_path_buf(),
        change: Change::Directory,
    });
    // Writable while what does not land is taken out of it, its own mode back before it
    // moves.
    let mode = dir.symlink_metadata()?.permissions().mode() & 0o7777;
    if mode & 0o700 != 0o700 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode | 0o700))?;
    }
    let listed = prepare_entries(dir, rel, out);
    if mode & 0o700 != 0o700 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode))?;
    }
    listed
}

fn prepare_entries(dir: &Path, rel: &Path, out: &mut Vec<Changed>) -> io::Result<()> {
    for (name, meta) in entries(dir)? {
        let (path, src) = (rel.join(&name), dir.join(&name));
        let change = if meta.is_dir() {
            prepare(&src, &path, out)?;
            continue;
        } else if meta.is_file() {
            let (bytes, sha256) = digest(&src)?;
            Change::Written { bytes, sha256 }
        } else if meta.file_type().is_symlink() {
            Change::Symlink {
                target: std::fs::read_link(&src)?,
            }
        } else {
            remove(&src)?;
            continue;
        };
        out.push(Changed { path, change });
    }
    Ok(())
}

/// Removes `path` if it is a directory (a file or link is replaced by the rename itself).
fn remove_dir(path: &Path) -> io::Result<()> {
    if path.symlink_metadata().is_ok_and(|m| m.is_dir()) {
        remove(path)?;
    }
    Ok(())
}

/// The size and SHA-256 (lowercase hex) of the file `path`, read as a stream.
pub(super) fn digest(path: &Path) -> io::Result<(u64, String)> {
    use sha2::Digest;
    let mut hasher = sha2::Sha256::new();
    let bytes = io::copy(&mut std::fs::File::open(path)?, &mut hasher)?;
    let hex = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Ok((bytes, hex))
}

/// Completes or removes every unlocked layer directory under `layers`: one with a journal is
/// landed (its validation is done, and a rename cannot be rolled back), one without is
/// removed (its call never returned). A layer whose lock is held (a live call) is left alone.
pub fn recover(layers: &Path) -> Vec<Landing> {
    let mut out = Vec::new();
    let Ok(list) = std::fs::read_dir(layers) else {
        return out;
    };
    for entry in list.flatten() {
        let dir = entry.path();
        let Ok(meta) = dir.symlink_metadata() else {
            continue;
        };
        if !meta.is_dir() {
            continue;
        }
        if entry
            .file_name()
            .to_string_lossy()
            .starts_with(super::dir::BUILDING)
        {
            let stale = meta
                .modified()
                .ok()
                .and_then(|m| m.elapsed().ok())
                .is_some_and(|age| age > super::dir::BUILDING_STALE);
            if stale {
                let _ = super::dir::discard(&dir);
            }
            continue;
        }
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join(super::dir::LOCK_FILE));
        let Ok(lock) = lock else {
            continue;
        };
        match lock.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => continue,
            Err(std::fs::TryLockError::Error(e)) => {
                tracing::warn!("layer {}: not recovered: {e}", dir.display());
                continue;
            }
        }
        if dir.join(JOURNAL).symlink_metadata().is_err() {
            if let Err(e) = remove(&dir) {
                tracing::warn!("layer {}: not removed: {e}", dir.display());
            }
            continue;
        }
        let workspace = match std::fs::read(dir.join(super::dir::WORKSPACE_FILE)) {
            Ok(bytes) => PathBuf::from(std::ffi::OsString::from(
                <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(&bytes),
            )),
            Err(e) => {
                tracing::warn!("layer {}: no workspace to land in: {e}", dir.display());
                continue;
            }
        };
        match land(&dir, &workspace) {
            Ok(landing) => {
                if let Err(e) = remove(&dir) {
                    tracing::warn!("layer {}: landed, not removed: {e}", dir.display());
                }
                out.push(landing);
            }
            Err(e) => tracing::warn!("layer {}: landing not finished: {e}", dir.display()),
        }
    }
    out
}
