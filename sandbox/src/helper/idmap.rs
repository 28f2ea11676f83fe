//! A new user namespace that keeps the caller's ids (its uid and gid maps), and the user and
//! mount namespaces bubblewrap launched by another user runs in over the workspace's layer.

use nix::sched::CloneFlags;

use crate::error::{SetupError, Stage};

/// unshare (user, mount) + uid/gid maps that keep the caller's ids: the namespaces in which
/// bubblewrap launched by another user runs over the workspace's layer
/// (`mounts::layer_outside`).
pub(super) fn enter_user_and_mount() -> Result<(), SetupError> {
    let (uid, gid) = (nix::unistd::geteuid(), nix::unistd::getegid());
    let flags = CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS;
    nix::sched::unshare(flags)
        .map_err(|e| SetupError::os(Stage::Namespaces, format!("unshare({flags:?})"), &e.into()))?;
    write_maps(uid.as_raw(), gid.as_raw())
}

/// In a new user namespace: uid and gid maps that keep the ids it was created with.
pub(super) fn write_maps(uid: u32, gid: u32) -> Result<(), SetupError> {
    write_proc("/proc/self/setgroups", "deny")?;
    write_proc("/proc/self/uid_map", &format!("{uid} {uid} 1\n"))?;
    write_proc("/proc/self/gid_map", &format!("{gid} {gid} 1\n"))
}

fn write_proc(path: &str, value: &str) -> Result<(), SetupError> {
    std::fs::write(path, value)
        .map_err(|e| SetupError::os(Stage::Namespaces, format!("write({path}, {value:?})"), &e))
}
