//! The landing's moves: a rename, or, where the layer is on another file system than the
//! workspace (EXDEV), a copy (modes and symlinks kept) then the source's removal. Each is
//! idempotent: a copy lands under a temporary name and is renamed into place, so a re-run
//! after a crash redoes it whole.

use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::rules::remove;

/// Moves the file or symlink `src` over `dst` (not a directory).
pub(super) fn move_file(src: &Path, dst: &Path) -> io::Result<()> {
    match std::fs::rename(src, dst) {
        Err(e) if e.kind() == io::ErrorKind::CrossesDevices => {}
        other => return other,
    }
    let tmp = temporary(dst);
    remove(&tmp)?;
    copy_entry(src, &tmp)?;
    std::fs::rename(&tmp, dst)?;
    remove(src)
}

/// Moves the directory `src` to `dst` (absent).
pub(super) fn move_tree(src: &Path, dst: &Path) -> io::Result<()> {
    match std::fs::rename(src, dst) {
        Err(e) if e.kind() == io::ErrorKind::CrossesDevices => {}
        other => return other,
    }
    let tmp = temporary(dst);
    remove(&tmp)?;
    copy_tree(src, &tmp)?;
    std::fs::rename(&tmp, dst)?;
    remove(src)
}

/// A name beside `dst` for a copy on its way there.
fn temporary(dst: &Path) -> std::path::PathBuf {
    let mut name = std::ffi::OsString::from(".zc-landing-");
    name.push(dst.file_name().unwrap_or_default());
    dst.with_file_name(name)
}

/// Copies the file or symlink `src` to `dst` (absent), its mode kept.
fn copy_entry(src: &Path, dst: &Path) -> io::Result<()> {
    let meta = src.symlink_metadata()?;
    if meta.file_type().is_symlink() {
        std::os::unix::fs::symlink(std::fs::read_link(src)?, dst)
    } else {
        std::fs::copy(src, dst)?;
        std::fs::set_permissions(dst, std::fs::Permissions::from_mode(meta.mode_bits()))
    }
}

/// Copies the tree `src` to `dst` (absent): directories, files and symlinks, modes kept
/// (a directory's once its entries are in).
fn copy_tree(src: &Path, dst: &Path) -> io::Result<()> {
    let meta = src.symlink_metadata()?;
    std::fs::create_dir(dst)?;
    for (name, entry) in super::control::entries(src)? {
        let (from, to) = (src.join(&name), dst.join(&name));
        if entry.is_dir() {
            copy_tree(&from, &to)?;
        } else if entry.is_file() || entry.file_type().is_symlink() {
            copy_entry(&from, &to)?;
        }
    }
    std::fs::set_permissions(dst, std::fs::Permissions::from_mode(meta.mode_bits()))
}

trait ModeBits {
    fn mode_bits(&self) -> u32;
}

impl ModeBits for std::fs::Metadata {
    fn mode_bits(&self) -> u32 {
        self.permissions().mode() & 0o7777
    }
}
