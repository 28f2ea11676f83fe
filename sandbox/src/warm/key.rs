//! What a warm helper ([`crate::warm`]) and the call it is given must agree on, computed the
//! same way on both sides (besides the plan's shape, [`crate::plan::shape`]): the
//! [`fingerprint`] of the host paths its root depends on, and the [`mount_ids`] those
//! paths resolve to. Reads only (`symlink_metadata`, `statx`).

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::plan::{MountOp, Plan};

/// Host paths whose identity the prepared root depends on.
fn identity_paths(plan: &Plan) -> impl Iterator<Item = &Path> {
    let mounted = plan.mounts.iter().filter_map(|op| match op {
        MountOp::Bind { path, .. }
        | MountOp::MaskFile { path }
        | MountOp::MaskDir { path }
        | MountOp::BindDir { path, .. }
        | MountOp::Stage { path, .. }
        | MountOp::Layer { path, .. }
        | MountOp::Pin { path } => Some(path.as_path()),
        MountOp::Symlink { .. } | MountOp::Tmpfs { .. } | MountOp::File { .. } => None,
    });
    // A persistent HOME directory (`crate::plan` home binds) by its host path too: an
    // operator clearing a cache removes it, and the daemon makes a new one for the next call.
    let bound = plan.mounts.iter().filter_map(|op| match op {
        MountOp::BindDir { src, .. } => Some(src.as_path()),
        _ => None,
    });
    mounted
        .chain(bound)
        .chain(plan.placeholders.iter().map(|p| p.path.as_path()))
        // Git hook: a stage is made once the call arrives (see `crate::git::stage::deferred`).
        .filter(|p| !crate::git::stage::is_deferred(plan, p))
        .chain(plan.unowned.iter().map(|p| p.as_path()))
}

/// A hash of the identity of every path the root depends on, as seen now (symlinks not
/// followed). FNV-1a: both sides are the same code, nothing else reads it.
pub fn fingerprint(plan: &Plan) -> u64 {
    let mut h = Fnv::default();
    for path in identity_paths(plan) {
        h.write(path.as_os_str().as_bytes());
        match std::fs::symlink_metadata(path) {
            Ok(m) => {
                h.write(&m.dev().to_le_bytes());
                h.write(&m.ino().to_le_bytes());
                h.write(&(m.mode() & libc::S_IFMT).to_le_bytes());
            }
            Err(e) => h.write(&e.raw_os_error().unwrap_or(-1).to_le_bytes()),
        }
        h.write(&[0xff]);
    }
    h.0
}

/// The mount each path the root depends on resolves to, inside the root (taken by the init
/// once built, and again when its call arrives). A host that deleted or replaced a mounted
/// path (`rm -rf .git/hooks; mkdir .git/hooks`) detached our mount from it, which changes
/// its id even when the new inode reuses the old number and the fingerprint cannot tell.
pub fn mount_ids(plan: &Plan) -> Vec<Option<u64>> {
    identity_paths(plan)
        .map(|p| crate::sys::mount_id(p).ok())
        .collect()
}

struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
}
