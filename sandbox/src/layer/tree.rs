//! The file-system primitives a landing's validation and moves share: a path as the refusal
//! lines show it, a directory's entries, and a removal that nothing stops.

use std::io;
use std::path::{Path, PathBuf};

/// A workspace-relative path as the refusal lines show it.
pub(crate) fn shown(rel: &Path) -> String {
    if rel.as_os_str().is_empty() {
        ".".into()
    } else {
        rel.to_string_lossy().replace('\n', "\\n")
    }
}

/// The entries of the directory `dir`, sorted by name, with their own metadata.
pub(crate) fn entries(dir: &Path) -> io::Result<Vec<(PathBuf, std::fs::Metadata)>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let meta = entry.path().symlink_metadata()?;
        out.push((PathBuf::from(entry.file_name()), meta));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// Removes `path` (a file, a link or a whole tree, never following a link); gone is done.
pub(crate) fn remove(path: &Path) -> io::Result<()> {
    let meta = match path.symlink_metadata() {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    let done = if meta.is_dir() {
        std::fs::remove_dir_all(path).or_else(|_| {
            open_up(path);
            std::fs::remove_dir_all(path)
        })
    } else {
        std::fs::remove_file(path)
    };
    match done {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

/// Gives the owner every permission on every directory of the tree `path` (so that a tree
/// with a mode-000 directory, as overlayfs leaves in its work directory, can be removed).
fn open_up(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    if !path.symlink_metadata().is_ok_and(|m| m.is_dir()) {
        return;
    }
    let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700));
    for entry in std::fs::read_dir(path).into_iter().flatten().flatten() {
        open_up(&entry.path());
    }
}
