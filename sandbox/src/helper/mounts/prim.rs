//! The mount steps' shared primitives: where the host root waits while the new root is built,
//! the error of a failed call, `mkdir -p` inside the new root, and a pin of a directory in it.

use std::path::{Path, PathBuf};

use crate::error::{SetupError, Stage};

/// Where the host root stays, below the new root, until it is detached.
pub(super) const OLD: &str = "/oldroot";

/// A failed mount step: `call` and the error it gave.
pub(super) fn err(call: String, e: impl Into<std::io::Error>) -> SetupError {
    SetupError::os(Stage::Mounts, call, &e.into())
}

/// `path` of the host, seen through [`OLD`].
pub(super) fn old(path: &Path) -> PathBuf {
    Path::new(OLD).join(path.strip_prefix("/").unwrap_or(path))
}

/// Creates `path` and its missing parents (mode 0755).
pub(super) fn mkdir_p(path: &Path) -> Result<(), SetupError> {
    use nix::errno::Errno;
    match nix::unistd::mkdir(path, nix::sys::stat::Mode::from_bits_truncate(0o755)) {
        Ok(()) | Err(Errno::EEXIST) => Ok(()),
        Err(Errno::ENOENT) => {
            if let Some(parent) = path.parent() {
                mkdir_p(parent)?;
            }
            match nix::unistd::mkdir(path, nix::sys::stat::Mode::from_bits_truncate(0o755)) {
                Ok(()) | Err(Errno::EEXIST) => Ok(()),
                Err(e) => Err(err(format!("mkdir -p {}", path.display()), e)),
            }
        }
        Err(e) => Err(err(format!("mkdir -p {}", path.display()), e)),
    }
}

/// A [`MountOp::Pin`]: the directory at `path` in the new root (below the workspace's
/// overlay) bound onto itself, what is mounted below it carried along.
pub(super) fn pin(path: &Path) -> Result<(), SetupError> {
    nix::mount::mount(
        Some(path),
        path,
        None::<&str>,
        nix::mount::MsFlags::MS_BIND | nix::mount::MsFlags::MS_REC,
        None::<&str>,
    )
    .map_err(|e| {
        let gone = matches!(e, nix::errno::Errno::ENOENT | nix::errno::Errno::ENOTDIR);
        let error = err(format!("mount({}, bind onto itself)", path.display()), e).hint(
            "a protected or denied path's parent disappeared while the sandbox was built; \
             recreate it and retry",
        );
        if gone { error.host_changed() } else { error }
    })?;
    crate::sys::harden_mount(path, false)
        .map_err(|e| err(format!("mount_setattr({})", path.display()), e))
}
