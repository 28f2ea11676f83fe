//! The landing's moves: a rename, or, where the layer is on another file system than the
//! workspace (EXDEV), a copy (modes and symlinks kept) then the source's removal. Each is
//! idempotent: a copy lands under a temporary name and is renamed into place, so a re-run
//! after a crash redoes it whole.

use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::tree::remove;

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

/// Copies the file or symlink `src` to `dst` (absent), its owner (where the lander may set
/// it: as root) and mode kept; set-id bits only once the owner is the source's, so a copy
/// made as root is never a set-id file of root's.
pub(super) fn copy_entry(src: &Path, dst: &Path) -> io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let meta = src.symlink_metadata()?;
    if meta.file_type().is_symlink() {
        std::os::unix::fs::symlink(std::fs::read_link(src)?, dst)?;
        let _ = std::os::unix::fs::lchown(dst, Some(meta.uid()), Some(meta.gid()));
        return Ok(());
    }
    std::fs::copy(src, dst)?;
    let plain = std::fs::Permissions::from_mode(meta.mode_bits() & 0o1777);
    std::fs::set_permissions(dst, plain)?;
    own(dst, &meta)
}

/// Gives `dst` the owner of `meta`, then its whole mode if that worked.
fn own(dst: &Path, meta: &std::fs::Metadata) -> io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let owned = std::os::unix::fs::lchown(dst, Some(meta.uid()), Some(meta.gid())).is_ok()
        && dst
            .symlink_metadata()
            .is_ok_and(|m| m.uid() == meta.uid() && m.gid() == meta.gid());
    if owned {
        std::fs::set_permissions(dst, std::fs::Permissions::from_mode(meta.mode_bits()))?;
    }
    Ok(())
}

/// Copies the tree `src` to `dst` (absent): directories, files and symlinks, modes kept
/// (a directory's once its entries are in).
fn copy_tree(src: &Path, dst: &Path) -> io::Result<()> {
    let meta = src.symlink_metadata()?;
    std::fs::create_dir(dst)?;
    for (name, entry) in super::tree::entries(src)? {
        let (from, to) = (src.join(&name), dst.join(&name));
        if entry.is_dir() {
            copy_tree(&from, &to)?;
        } else if entry.is_file() || entry.file_type().is_symlink() {
            copy_entry(&from, &to)?;
        }
    }
    std::fs::set_permissions(
        dst,
        std::fs::Permissions::from_mode(meta.mode_bits() & 0o1777),
    )?;
    own(dst, &meta)
}

trait ModeBits {
    fn mode_bits(&self) -> u32;
}

impl ModeBits for std::fs::Metadata {
    fn mode_bits(&self) -> u32 {
        self.permissions().mode() & 0o7777
    }
}
