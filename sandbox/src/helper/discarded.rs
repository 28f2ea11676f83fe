//! Whether a call wrote to its private places, which are discarded at its end: on the
//! namespace backends the `/tmp` and `$HOME` tmpfs (their used inodes and blocks, one
//! `statfs` each before the command and again once its tree is gone: no listing), on the
//! Landlock rung the scratch `TMPDIR` and `HOME` (one directory entry read, for the HOME a
//! walk of the directories above its persistent links, before they are removed). Told as [`Message::Discarded`]; a file written and removed again by the
//! call is not counted.

use std::path::{Path, PathBuf};

use crate::plan::{MountOp, Plan};
use crate::wire::Message;

/// The private tmpfs mounts of a namespaced plan and how much of each was in use before the
/// command ran.
pub(crate) struct Usage(Vec<(PathBuf, Option<(u64, u64)>)>);

impl Usage {
    /// Takes the baseline, just before the command is started. A tmpfs something else is
    /// mounted over (a host directory a profile allows at that path) is not the call's.
    pub(crate) fn before(plan: &Plan) -> Usage {
        let covered = |path: &Path| {
            let mut ops = plan.mounts.iter();
            ops.any(|op| !matches!(op, MountOp::Tmpfs { .. }) && op.path() == path)
        };
        let tmpfs = plan.mounts.iter().filter_map(|op| match op {
            MountOp::Tmpfs { path, .. } if !covered(path) => Some(path.clone()),
            _ => None,
        });
        Usage(tmpfs.map(|path| (path.clone(), used(&path))).collect())
    }

    /// The mounts whose use changed since [`Usage::before`], as a report (none: `None`).
    pub(crate) fn after(&self) -> Option<Message> {
        let changed = self
            .0
            .iter()
            .filter(|(path, before)| before.is_some() && used(path) != *before)
            .map(|(path, _)| path.display().to_string());
        message(changed.collect())
    }
}

/// Used inodes and blocks of the tmpfs at `path` (`None`: it is not a tmpfs).
fn used(path: &Path) -> Option<(u64, u64)> {
    use nix::sys::statfs::{TMPFS_MAGIC, statfs};
    let s = statfs(path)
        .ok()
        .filter(|s| s.filesystem_type() == TMPFS_MAGIC)?;
    let inodes = s.files().saturating_sub(s.files_free());
    let blocks = s.blocks().saturating_sub(s.blocks_free());
    Some((inodes, blocks))
}

/// The Landlock rung's scratch directories (`(name as the command saw it, written)`) that
/// the call wrote to, as a report.
pub(crate) fn scratch(dirs: &[(&str, bool)]) -> Option<Message> {
    let written = dirs.iter().filter(|(_, written)| *written);
    message(written.map(|(name, _)| (*name).to_owned()).collect())
}

/// Whether the directory `dir` holds anything (one directory entry read).
pub(crate) fn holds_any(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|mut entries| entries.next().is_some())
}

fn message(places: Vec<String>) -> Option<Message> {
    (!places.is_empty()).then_some(Message::Discarded(places))
}
