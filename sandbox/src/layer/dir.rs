//! A layer's directory: its parts (`upper/`, `work/`, the workspace file, the lock), its
//! making under a name recovery leaves alone, its release, and its discarding.

use std::path::{Path, PathBuf};

/// The overlay's upper directory inside a layer's directory.
pub fn upper(dir: &Path) -> PathBuf {
    dir.join("upper")
}

/// The overlay's work directory inside a layer's directory (same file system as the upper).
pub fn work(dir: &Path) -> PathBuf {
    dir.join("work")
}

/// The file inside a layer's directory naming the workspace it lands in (for [`recover`]).
pub const WORKSPACE_FILE: &str = "workspace";

/// The file in a layer's directory holding the refusals of its validation, one per line:
/// written (and synced) once validation is done, before anything lands; a layer with one is
/// landed forward by [`super::recover`].
pub const JOURNAL: &str = "journal";

/// The lock file inside a layer's directory, held (`flock`, exclusive) by the helper whose
/// call owns the layer for as long as the call runs and lands: [`recover`] leaves a locked
/// layer alone.
pub const LOCK_FILE: &str = "lock";

/// A layer directory made for one call, its lock held until dropped.
pub struct Held {
    /// The layer's directory.
    pub dir: PathBuf,
    _lock: std::fs::File,
}

/// Makes the layer directory `dir` for `workspace` (its parent, the layers directory, made
/// private if missing): `upper/`, `work/`, the workspace file, and the lock, taken. Built
/// under a name [`recover`] leaves alone ([`BUILDING`]) and renamed into place once locked,
/// so another call's recovery never takes it for the layer of a call that never returned.
pub fn create(dir: &Path, workspace: &Path) -> std::io::Result<Held> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::DirBuilderExt;
    let (Some(layers), Some(name)) = (dir.parent(), dir.file_name()) else {
        return Err(std::io::Error::other(format!(
            "{} is not a layer directory's path",
            dir.display()
        )));
    };
    // A workspace removed meanwhile (a helper made ahead for a call that never came) gets no
    // layer, nor the layers directory's parents made again where they were removed with it.
    if !workspace.is_dir() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("the workspace {} is gone", workspace.display()),
        ));
    }
    let mut building = std::ffi::OsString::from(BUILDING);
    building.push(name);
    let building = layers.join(building);
    // The layers directory is removed once empty ([`release`]): made again if another call's
    // release took it in between.
    let mut tries = 0;
    loop {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(layers)?;
        private(layers)?;
        match std::fs::DirBuilder::new().mode(0o700).create(&building) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && tries < 8 => tries += 1,
            made => break made?,
        }
    }
    let made = (|| {
        let lock = lock(&building)?;
        std::fs::write(
            building.join(WORKSPACE_FILE),
            workspace.as_os_str().as_bytes(),
        )?;
        std::fs::DirBuilder::new()
            .mode(0o755)
            .create(upper(&building))?;
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(work(&building))?;
        std::fs::rename(&building, dir)?;
        Ok(lock)
    })();
    match made {
        Ok(lock) => Ok(Held {
            dir: dir.to_path_buf(),
            _lock: lock,
        }),
        Err(e) => {
            let _ = std::fs::remove_dir_all(&building);
            Err(e)
        }
    }
}

/// Lets go of a layer directory whose call is over: removes it once landed or discarded
/// (inert: no journal; one with a journal, a landing cut short, stays for
/// [`super::recover`] to finish), then lets its lock go, and removes the layers directory
/// once nothing is left in it, so a user's `/var/tmp` fallback is not left behind. The
/// helper releases after it told the call's end: on a file system mounted `discard` the
/// removal costs more than a millisecond, and nothing of it is the call's.
pub fn release(held: Held) {
    let layers = held.dir.parent().map(Path::to_path_buf);
    if held.dir.join(JOURNAL).symlink_metadata().is_err()
        && let Err(e) = super::tree::remove(&held.dir)
    {
        tracing::warn!("layer {}: not removed: {e}", held.dir.display());
    }
    drop(held);
    if let Some(layers) = layers {
        let _ = std::fs::remove_dir(layers);
    }
}

/// The name prefix of a layer directory being made ([`create`]); [`recover`] removes one only
/// once it is [`BUILDING_STALE`] old (its maker died before the rename).
pub const BUILDING: &str = ".building-";

/// How old a layer directory still being made must be before [`recover`] takes it for litter.
pub const BUILDING_STALE: std::time::Duration = std::time::Duration::from_secs(60);

/// Refuses a layers directory that is not a directory of ours that only we can enter (one
/// another user made first in a shared place, or a symlink).
fn private(layers: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let meta = layers.symlink_metadata()?;
    let ours = meta.uid() == nix::unistd::geteuid().as_raw();
    if !meta.is_dir() || !ours || meta.mode() & 0o077 != 0 {
        return Err(std::io::Error::other(format!(
            "{} is not a private directory of this user (mode 0700, owned by uid {})",
            layers.display(),
            nix::unistd::geteuid()
        )));
    }
    Ok(())
}

/// Takes the layer's lock (blocking); the open file holds it.
fn lock(dir: &Path) -> std::io::Result<std::fs::File> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join(LOCK_FILE))?;
    file.lock()?;
    Ok(file)
}

/// Removes a layer directory that must not land (its call passed its write bound), whatever
/// it holds (the overlay's work directory may hold a directory of mode 000).
pub fn discard(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let work = work(dir).join("work");
    if work.symlink_metadata().is_ok_and(|m| m.is_dir()) {
        std::fs::set_permissions(&work, std::fs::Permissions::from_mode(0o700))?;
    }
    std::fs::remove_dir_all(dir)
}
