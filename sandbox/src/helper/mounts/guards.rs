//! Protected-path placeholders and the guards that keep denied paths inside writable roots
//! maskable: created when missing, held under a shared lock for the run, removed afterwards
//! when still empty and ours.

use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::error::{SetupError, Stage};
use crate::plan::Placeholder;

/// Creates protected paths that do not exist yet, refusing to follow symlinks. Denied-path
/// placeholders are left to [`guard_denied`].
pub fn create_placeholders(list: &[Placeholder]) -> Result<(), SetupError> {
    for ph in list.iter().filter(|ph| !ph.denied) {
        if ph.path.symlink_metadata().is_ok() {
            continue;
        }
        let Some(parent) = ph.path.parent() else {
            continue;
        };
        match parent.symlink_metadata() {
            Ok(m) if m.is_dir() => {}
            Ok(m) if m.file_type().is_symlink() => return Err(symlink_error(parent)),
            _ => continue, // a non-directory parent: nothing can be created below it
        }
        no_symlink_ancestors(parent)?;
        let made = if ph.dir {
            std::fs::create_dir(&ph.path)
        } else {
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&ph.path)
                .map(drop)
        };
        made.map_err(|e| {
            SetupError::os(
                Stage::Placeholders,
                format!("create({})", ph.path.display()),
                &e,
            )
        })?;
    }
    Ok(())
}

/// Marks a denied-path placeholder directory as ours (created by a sandbox run): whichever run
/// holds it last removes it, also one left behind by a helper that was killed. Invisible to
/// the child inside the leaf (masked); an ancestor's marker is visible but only lets an empty
/// directory be removed.
pub(crate) use crate::wire::PLACEHOLDER_MARKER as MARKER;

/// Tries to get hold of a guarded path again when a concurrent run removed it between our
/// `mkdir` and our lock.
const GUARD_ATTEMPTS: usize = 16;

/// The denied-path placeholders of one run, each open and under a shared `flock`. A run
/// removing a placeholder takes the lock exclusively first, so it never removes one another
/// run still masks: removing a directory that is a mount point in another mount namespace
/// succeeds and detaches that mount, which would unmask the path in the other run.
#[derive(Default)]
pub struct Guards(Vec<Guard>);

struct Guard {
    path: PathBuf,
    dir: std::fs::File,
    created: bool,
}

/// Creates (mode 0700) and locks each denied-path placeholder of `list`, parents first,
/// refusing symlinks on the way like [`create_placeholders`]. An entry that already exists is
/// locked as it is; one below a non-directory is skipped (nothing can be created there).
pub fn guard_denied(list: &[Placeholder]) -> Result<Guards, SetupError> {
    let mut guards = Guards::default();
    for ph in list.iter().filter(|ph| ph.denied) {
        match guard_one(&ph.path) {
            Ok(Some(guard)) => guards.0.push(guard),
            Ok(None) => {}
            Err(e) => {
                guards.release();
                return Err(e);
            }
        }
    }
    Ok(guards)
}

fn guard_one(path: &Path) -> Result<Option<Guard>, SetupError> {
    use std::os::unix::fs::DirBuilderExt;
    let Some(parent) = path.parent() else {
        return Ok(None);
    };
    let failed = |call: &str, e: std::io::Error| {
        SetupError::os(
            Stage::Placeholders,
            format!("{call}({})", path.display()),
            &e,
        )
    };
    for _ in 0..GUARD_ATTEMPTS {
        match parent.symlink_metadata() {
            Ok(m) if m.file_type().is_symlink() => return Err(symlink_error(parent)),
            Ok(m) if m.is_dir() => {}
            _ => return Ok(None),
        }
        no_symlink_ancestors(parent)?;
        let created = match std::fs::DirBuilder::new().mode(0o700).create(path) {
            Ok(()) => true,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => false,
            Err(e) => return Err(failed("mkdir", e)),
        };
        let dir = match std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
            .open(path)
        {
            Ok(dir) => dir,
            Err(_) if path.symlink_metadata().is_err() => continue,
            Err(_) if path.is_symlink() => return Err(symlink_error(path)),
            Err(e) => {
                return Err(failed("open", e).hint(
                    "a denied path inside a writable root is not a directory; remove it or \
                     deny its parent",
                ));
            }
        };
        if created {
            // Best effort: without the marker only this run removes it.
            let _ = nix::fcntl::openat(
                &dir,
                MARKER,
                nix::fcntl::OFlag::O_CREAT
                    | nix::fcntl::OFlag::O_EXCL
                    | nix::fcntl::OFlag::O_WRONLY
                    | nix::fcntl::OFlag::O_NOFOLLOW
                    | nix::fcntl::OFlag::O_CLOEXEC,
                nix::sys::stat::Mode::from_bits_truncate(0o600),
            );
        }
        dir.lock_shared().map_err(|e| failed("flock", e))?;
        if same_file(path, &dir) {
            return Ok(Some(Guard {
                path: path.to_path_buf(),
                dir,
                created,
            }));
        }
    }
    Err(SetupError::new(
        Stage::Placeholders,
        format!("{} keeps disappearing", path.display()),
    )
    .hint("another process removes this denied path while sandboxes start; retry"))
}

/// Whether `path` (not followed) is the file `open` refers to.
fn same_file(path: &Path, open: &std::fs::File) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (path.symlink_metadata(), open.metadata()) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

impl Guards {
    /// Whether this run alone holds the placeholder at `path`: its lock is then made exclusive
    /// (a run starting meanwhile waits for [`Guards::release`]). For `crate::git::stage`.
    pub fn alone(&self, path: &Path) -> bool {
        self.0
            .iter()
            .any(|g| g.path == path && g.dir.try_lock().is_ok() && same_file(&g.path, &g.dir))
    }

    /// Closes the descriptors without touching the locks, which the other copies keep (a
    /// forked child: its descriptors must not reach the confined command).
    pub fn forget(&mut self) {
        self.0.clear();
    }

    /// The guards of the paths `which` takes, moved out (to be released later than the rest).
    pub fn split_off(&mut self, which: impl Fn(&Path) -> bool) -> Guards {
        let (taken, kept) = std::mem::take(&mut self.0)
            .into_iter()
            .partition(|g| which(&g.path));
        self.0 = kept;
        Guards(taken)
    }

    /// After the run, deepest first: each placeholder no other run holds is removed when it
    /// is still the directory we locked and holds nothing but our marker (or nothing, if this
    /// run created it). Never follows symlinks; anything else found in it stays, our marker
    /// aside. Failures leave the path as it is.
    pub fn release(self) {
        for guard in self.0.into_iter().rev() {
            guard.release();
        }
    }
}

impl Guard {
    fn release(self) {
        use std::os::fd::AsRawFd;
        // Converting to exclusive fails while another run holds it: that run removes it.
        if self.dir.try_lock().is_err() || !same_file(&self.path, &self.dir) {
            return;
        }
        let Ok(entries) = std::fs::read_dir(format!("/proc/self/fd/{}", self.dir.as_raw_fd()))
        else {
            return;
        };
        let names: Vec<std::ffi::OsString> = entries.flatten().map(|e| e.file_name()).collect();
        let marked = names.iter().any(|n| n == MARKER);
        if marked {
            let unmarked =
                nix::unistd::unlinkat(&self.dir, MARKER, nix::unistd::UnlinkatFlags::NoRemoveDir);
            if unmarked.is_err() || names.len() > 1 {
                return;
            }
        } else if !(self.created && names.is_empty()) {
            return;
        }
        let (Some(parent), Some(name)) = (self.path.parent(), self.path.file_name()) else {
            return;
        };
        let Ok(parent) = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
            .open(parent)
        else {
            return;
        };
        use std::os::unix::fs::MetadataExt;
        let Ok(ours) = self.dir.metadata() else {
            return;
        };
        let there =
            nix::sys::stat::fstatat(&parent, name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW);
        if there.is_ok_and(|st| st.st_dev == ours.dev() && st.st_ino == ours.ino()) {
            // rmdir removes only an empty directory: anything created meanwhile keeps it.
            let _ = nix::unistd::unlinkat(&parent, name, nix::unistd::UnlinkatFlags::RemoveDir);
        }
    }
}

fn no_symlink_ancestors(path: &Path) -> Result<(), SetupError> {
    for a in path.ancestors() {
        if a.symlink_metadata()
            .is_ok_and(|m| m.file_type().is_symlink())
        {
            return Err(symlink_error(a));
        }
    }
    Ok(())
}

fn symlink_error(path: &Path) -> SetupError {
    SetupError::new(
        Stage::Placeholders,
        format!("{} is a symlink", path.display()),
    )
    .hint("a protected path or its parent was replaced by a symlink; remove it and retry")
}
