//! Carving denied paths out of Landlock roots: a root holding one is replaced by its entries,
//! recursively. Pure: the directory listings come from the caller.

use std::os::unix::ffi::OsStrExt;
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
    let denied = normalized_set(denied.iter().map(|d| d.as_path()));
    let mut out = Vec::new();
    for root in roots {
        subtract_normalized(normalized(&root), &denied, entries, &mut out);
    }
    out
}

/// [`subtract_with`] of one normalized root (a directory entry joined to one is normalized
/// too); `denied` is a [`normalized_set`].
fn subtract_normalized(
    root: PathBuf,
    denied: &[PathBuf],
    entries: &dyn Fn(&Path) -> Option<Vec<PathBuf>>,
    out: &mut Vec<PathBuf>,
) {
    if denied
        .binary_search_by(|d| bytes(d).cmp(bytes(&root)))
        .is_ok()
    {
        return;
    }
    if below(denied, &root).is_empty() {
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

/// `path` normalized: `.` and repeated or trailing `/` gone. Then a byte prefix that ends at
/// a `/` is what `Path::starts_with` tests component by component, at a fraction of the cost
/// for the hundreds of `/etc` entries against every hidden path.
pub(super) fn normalized(path: &Path) -> PathBuf {
    path.components().collect()
}

/// `paths` normalized, in byte order, without repeats: the paths below a directory are then
/// one run of it ([`below`]).
pub(super) fn normalized_set<'a>(paths: impl Iterator<Item = &'a Path>) -> Vec<PathBuf> {
    let mut set: Vec<PathBuf> = paths.map(normalized).collect();
    set.sort_unstable_by(|a, b| bytes(a).cmp(bytes(b)));
    set.dedup();
    set
}

/// The paths of the [`normalized_set`] `set` that lie strictly below the normalized `root`:
/// those starting with `root/`, one run in byte order.
pub(super) fn below<'a>(set: &'a [PathBuf], root: &Path) -> &'a [PathBuf] {
    let mut prefix = bytes(root).to_vec();
    if !prefix.ends_with(b"/") {
        prefix.push(b'/');
    }
    let start = set.partition_point(|p| bytes(p) < &prefix[..]);
    let len = set[start..]
        .iter()
        .take_while(|p| bytes(p).starts_with(&prefix))
        .count();
    &set[start..start + len]
}

/// Whether the normalized `path` is the normalized `root` or lies below it: what
/// `Path::starts_with` says, as a byte prefix.
pub(super) fn at_or_below(path: &Path, root: &Path) -> bool {
    let (path, key) = (bytes(path), bytes(root));
    path.starts_with(key)
        && (path.len() == key.len() || key.ends_with(b"/") || path[key.len()] == b'/')
}

fn bytes(path: &Path) -> &[u8] {
    path.as_os_str().as_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_prefixes_compare_whole_components() {
        let p = |s: &str| PathBuf::from(s);
        assert!(at_or_below(&p("/a/b"), &p("/a")) && at_or_below(&p("/a"), &p("/a")));
        assert!(at_or_below(&p("/a"), &p("/")) && !at_or_below(&p("/ab"), &p("/a")));
        let set = normalized_set(
            ["/a/b", "/ab", "/a", "/a//c/", "/b", "/a/b"]
                .iter()
                .map(Path::new),
        );
        assert_eq!(set, [p("/a"), p("/a/b"), p("/a/c"), p("/ab"), p("/b")]);
        assert_eq!(below(&set, Path::new("/a")), [p("/a/b"), p("/a/c")]);
        assert_eq!(below(&set, Path::new("/")).len(), 5);
        assert!(below(&set, Path::new("/a/b")).is_empty());
    }
}
