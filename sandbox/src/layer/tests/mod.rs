//! The landing's tests: upper layers built by hand (whiteouts and opaque directories need
//! root: without it a test says so and passes, unless `CI=true`).

mod control;
mod land;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::Held;

/// A workspace and a layers directory in a fresh temporary directory.
pub(super) struct Fixture {
    pub _tmp: tempfile::TempDir,
    pub ws: PathBuf,
    pub layers: PathBuf,
}

impl Fixture {
    pub fn new() -> Self {
        let tmp = tempfile::Builder::new()
            .prefix("zc-layer-")
            .tempdir_in("/var/tmp")
            .unwrap();
        let (ws, layers) = (tmp.path().join("ws"), tmp.path().join("layers"));
        std::fs::create_dir(&ws).unwrap();
        Fixture {
            _tmp: tmp,
            ws,
            layers,
        }
    }

    /// A new layer for the workspace, its lock held.
    pub fn layer(&self) -> Held {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let name = format!("layer-{}", NEXT.fetch_add(1, Ordering::Relaxed));
        super::create(&self.layers.join(name), &self.ws).unwrap()
    }
}

/// Whether the test can make whiteouts and trusted xattrs (root); if not, says why (and
/// fails under `CI=true`).
pub(super) fn root() -> bool {
    if nix::unistd::geteuid().is_root() {
        return true;
    }
    assert_ne!(
        std::env::var("CI").as_deref(),
        Ok("true"),
        "the landing's tests need root (whiteouts, trusted xattrs)"
    );
    eprintln!("skipped: not root (whiteouts and trusted xattrs need it)");
    false
}

/// Writes `text` to `path`, its parents made.
pub(super) fn put(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// An overlayfs whiteout at `path`.
pub(super) fn whiteout(path: &Path) {
    use nix::sys::stat::{Mode, SFlag, mknod};
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    mknod(path, SFlag::S_IFCHR, Mode::empty(), 0).unwrap();
}

/// Marks the directory `path` opaque as overlayfs does (as root).
pub(super) fn opaque(path: &Path) {
    crate::sys::lsetxattr(path, "trusted.overlay.opaque", b"y").unwrap();
}

pub(super) fn mode(path: &Path) -> u32 {
    path.symlink_metadata().unwrap().permissions().mode() & 0o7777
}

pub(super) fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

pub(super) fn exists(path: &Path) -> bool {
    path.symlink_metadata().is_ok()
}
