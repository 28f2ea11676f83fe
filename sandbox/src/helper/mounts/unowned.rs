//! The unowned roots: read-only roots whose root-owned files stay unreadable to a child running
//! as uid 0, attached as idmapped trees (or, where idmapping is not possible, with each
//! root-only file masked).

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use crate::plan::MountOp;
use crate::sys::UsernsHolder;

/// Read-only roots whose root-owned files must stay unreadable to a child running as uid 0
/// (see [`crate::plan::Plan::unowned`]): prepared by the helper while it still holds the
/// host's privilege, before it enters the new user namespace.
#[derive(Default)]
pub struct Unowned {
    /// Detached copies idmapped so that uid and gid 0 read as `nobody`: a file only root may
    /// read is unreadable inside, whichever files exist when the child runs.
    trees: Vec<(PathBuf, OwnedFd)>,
    /// Where the kernel or filesystem cannot idmap: each root-only file found now
    /// ([`crate::host::scan::unowned_fallback`]), masked.
    pub(super) masks: Vec<MountOp>,
}

/// The ids of files under an unowned root: 0 becomes 65534 (`nobody`), every other id is
/// unmapped; either way the child's uid 0 is not their owner.
const UNOWNED_MAP: &str = "0 65534 1\n";

/// The idmap user namespace, made once by the zygote (see [`warm_up`]) and inherited by every
/// helper it forks; a helper without one makes its own.
static UNOWNED_USERNS: std::sync::OnceLock<OwnedFd> = std::sync::OnceLock::new();

/// Zygote start-up, as root: makes the idmap user namespace once (a fork and a user
/// namespace fewer per execution). Returns its descriptor, which forked helpers keep open.
pub fn warm_up() -> Option<std::os::fd::RawFd> {
    if !nix::unistd::geteuid().is_root() {
        return None;
    }
    let fd = crate::sys::userns_with_map(UNOWNED_MAP)
        .and_then(|(fd, _holder)| crate::sys::dup_high(fd.as_raw_fd()))
        .ok()?;
    let raw = fd.as_raw_fd();
    UNOWNED_USERNS.set(fd).ok()?;
    Some(raw)
}

fn unowned_userns() -> std::io::Result<(OwnedFd, Option<UsernsHolder>)> {
    match UNOWNED_USERNS.get() {
        Some(fd) => Ok((fd.try_clone()?, None)),
        None => crate::sys::userns_with_map(UNOWNED_MAP).map(|(fd, h)| (fd, Some(h))),
    }
}

impl Unowned {
    /// The descriptors it holds (a child that closes its inherited ones must keep these).
    pub fn fds(&self) -> Vec<std::os::fd::RawFd> {
        self.trees.iter().map(|(_, fd)| fd.as_raw_fd()).collect()
    }

    /// Moves its descriptors to 10 and up, clear of those a child installs its stdio and
    /// pipes on.
    pub fn move_high(&mut self) -> std::io::Result<()> {
        for (_, fd) in &mut self.trees {
            *fd = crate::sys::dup_high(fd.as_raw_fd())?;
        }
        Ok(())
    }

    /// Idmaps each of `roots`, falling back to masking its root-only files. The holder of a
    /// user namespace made for it, if any, comes back too: it ends by itself, and dropping it
    /// reaps it — late enough, and its exit is off the caller's path.
    pub fn prepare(roots: &[PathBuf]) -> (Unowned, Option<UsernsHolder>) {
        let mut out = Unowned::default();
        if roots.is_empty() {
            return (out, None);
        }
        let (userns, holder) = match unowned_userns() {
            Ok((ns, holder)) => (Some(ns), holder),
            Err(_) => (None, None),
        };
        for root in roots {
            let tree = userns.as_ref().and_then(|ns| {
                let tree = crate::sys::clone_tree(root).ok()?;
                crate::sys::idmap_tree_readonly(tree.as_raw_fd(), ns.as_raw_fd()).ok()?;
                Some(tree)
            });
            match tree {
                Some(tree) => out.trees.push((root.clone(), tree)),
                None => {
                    out.masks
                        .extend(
                            crate::host::scan::unowned_fallback(root)
                                .into_iter()
                                .map(|path| match path.symlink_metadata() {
                                    Ok(m) if m.is_dir() => MountOp::MaskDir { path },
                                    _ => MountOp::MaskFile { path },
                                }),
                        )
                }
            }
        }
        (out, holder)
    }

    pub(super) fn tree(&self, path: &Path) -> Option<&OwnedFd> {
        self.trees.iter().find(|(p, _)| p == path).map(|(_, fd)| fd)
    }
}
