//! The user's validated git config in the call's private HOME (see `crate::git::global`):
//! written just before the command starts, compared once its tree is gone, and the launcher
//! told when the call changed it ([`Message::GitConfigChanged`]: a `git config --global`
//! inside lasts for that call only).

use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;

use crate::plan::Plan;
use crate::wire::Message;

/// Writes the copy (best effort: a call whose HOME already holds something at that name, or
/// cannot take a file, runs without it). Never through a symlink, never over a file.
pub(crate) fn write(plan: &Plan) {
    let Some(git) = &plan.home.git_global else {
        return;
    };
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&git.path);
    if let Ok(mut file) = file {
        let _ = file.write_all(git.text.as_bytes());
    }
}

/// Whether the command changed, replaced or removed the copy, as a report (`None`: not, or
/// the plan has none).
pub(crate) fn changed(plan: &Plan) -> Option<Message> {
    let git = plan.home.git_global.as_ref()?;
    (read(&git.path).as_deref() != Some(git.text.as_bytes())).then_some(Message::GitConfigChanged)
}

/// The content of the regular file at `path`, up to a little more than the copy could hold
/// (never through a symlink, never blocking on a fifo the command left there).
fn read(path: &std::path::Path) -> Option<Vec<u8>> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    file.take(1 << 20).read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

/// The copy removed when unchanged (the Landlock rung's scratch HOME, before it is checked for
/// what the call left there), and the report.
pub(crate) fn changed_or_remove(plan: &Plan) -> Option<Message> {
    let told = changed(plan);
    if let (None, Some(git)) = (&told, &plan.home.git_global) {
        let _ = std::fs::remove_file(&git.path);
    }
    told
}
