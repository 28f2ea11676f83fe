//! Carving denied paths out of Landlock roots: a root holding one is replaced by its entries,
//! recursively. Pure: the directory listings come from the caller.

use std::path::{Path, PathBuf};

/// Replaces every root that contains a denied path by its children, recursively, leaving the
/// denied paths out (Landlock is an allow-list by hierarchy). Children that are symlinks are
/// left out too: a rule is opened through the link and would land on its target (a link
/// planted in a workspace could point at the denied path itself); a path through a link to an
/// allowed place still resolves to that place's own rule. `entries` lists a directory's
/// entries that are not symlinks (`None`: it cannot be read).
pub fn subtract_with(
    roots: Vec<PathBuf>,
    denied: &[PathBuf],
    entries: &dyn Fn(&Path) -> Option<Vec<PathBuf>>,
) -> Vec<PathBuf> {
    // Paths are compared as bytes, normalized (`.` and repeated or trailing `/` gone): then a
    // byte prefix that ends at a `/` is what `Path::starts_with` tests component by component,
    // at a fraction of the cost for the hundreds of `/etc` entries against every hidden path.
    let normalized = |p: &Path| p.components().collect::<PathBuf>();
    let denied: Vec<PathBuf> = denied.iter().map(|d| normalized(d)).collect();
    let mut out = Vec::new();
    for root in roots {
        subtract_normalized(normalized(&root), &denied, entries, &mut out);
    }
    out
}

/// [`subtract_with`] of one normalized root (a directory entry joined to one is normalized too).
fn subtract_normalized(
    root: PathBuf,
    denied: &[PathBuf],
    entries: &dyn Fn(&Path) -> Option<Vec<PathBuf>>,
    out: &mut Vec<PathBuf>,
) {
    use std::os::unix::ffi::OsStrExt;
    let key = root.as_os_str().as_bytes();
    let under = |path: &Path| {
        let path = path.as_os_str().as_bytes();
        path.starts_with(key)
            && (path.len() == key.len() || key.ends_with(b"/") || path[key.len()] == b'/')
    };
    if denied.iter().any(|d| d.as_os_str().as_bytes() == key) {
        return;
    }
    if !denied.iter().any(|d| under(d)) {
        out.push(root);
        return;
    }
    let Some(children) = entries(&root) else {
        return;
    };
    for child in children {
        subtract_normalized(child, denied, entries, out);
    }
}
