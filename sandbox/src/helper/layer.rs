//! The helper's part of the transactional workspace ([`crate::layer`]): it makes the call's
//! layer directory before the namespaces (holding its lock for the call), watches the
//! layer's size against the call's write bound while the tree runs ([`check_bound`]), and once the
//! tree has ended lands it, telling the launcher what was refused and what changed — or,
//! past the bound, discards it.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::error::{SetupError, Stage};
use crate::plan::Plan;
use crate::wire::{LANDED_LISTED, Message};

/// Makes the plan's layer directory, if it has one (also a warm helper's, at preparation:
/// its call then lands through it). Stale layers of calls that never returned are completed
/// or removed first ([`crate::layer::recover`]).
pub(crate) fn make(plan: &Plan) -> Result<Option<crate::layer::Held>, SetupError> {
    let Some((workspace, dir)) = plan.layer() else {
        return Ok(None);
    };
    if let Some(layers) = dir.parent() {
        crate::layer::recover(layers);
    }
    crate::layer::create(dir, workspace).map(Some).map_err(|e| {
        SetupError::os(
            Stage::Mounts,
            format!("make the call's layer in {}", dir.display()),
            &e,
        )
        .hint("the profile's layers directory must be writable by the daemon's user")
    })
}

/// Lands the layer once the call's tree is gone, and reports the refusals and the changes;
/// gives back the layer, inert, for [`release`] once the call's end is told. A landing cut
/// short leaves its journaled layer to the next [`make`]. A layer over the call's write
/// bound (`over`) is discarded whole instead.
pub(crate) fn land(plan: &Plan, held: Option<crate::layer::Held>) -> Option<crate::layer::Held> {
    let (Some((workspace, _)), Some(held)) = (plan.layer(), held) else {
        return None;
    };
    if OVER.load(Ordering::Relaxed) {
        let removed = crate::layer::discard(&held.dir);
        super::report::git_refusals(vec![format!(
            "workspace: the call wrote more than {} MiB ([sandbox.limits] written_mb): nothing \
             it wrote landed{}",
            plan.process.limits.written_bytes >> 20,
            match removed {
                Ok(()) => String::new(),
                Err(e) => format!(" (its layer could not be removed: {e})"),
            }
        )]);
        return Some(held);
    }
    match crate::layer::land(&held.dir, workspace) {
        Ok(landing) => {
            super::report::git_refusals(landing.refused);
            let mut changed = landing.changed;
            let more = changed.len().saturating_sub(LANDED_LISTED) as u64;
            changed.truncate(LANDED_LISTED);
            if !changed.is_empty() || more > 0 {
                super::report::send(&Message::Landed { changed, more });
            }
        }
        Err(e) => super::report::git_refusals(vec![format!(
            "workspace: the call's writes could not land ({e}); the next call in {} completes \
             a landing that had begun, or discards them",
            workspace.display()
        )]),
    }
    Some(held)
}

/// Removes a landed layer and lets its lock go ([`crate::layer::release`]): after the call's
/// end is told, off the caller's path.
pub(crate) fn release(landed: Option<crate::layer::Held>) {
    if let Some(held) = landed {
        crate::layer::release(held);
    }
}

/// Whether this helper's call passed its write bound (set by [`check_bound`]).
static OVER: AtomicBool = AtomicBool::new(false);

/// The write bound being watched: the layer's upper directory, the bound, and when to look
/// next. The helper is single-threaded (a process that unshared a pid namespace can make no
/// thread), so its wait for the tree looks ([`check_bound`]) between its other wake-ups.
struct Bound {
    upper: PathBuf,
    bytes: u64,
    next: Instant,
    pause: Duration,
}

static WATCHED: Mutex<Option<Bound>> = Mutex::new(None);

/// Watches `plan`'s layer against its write bound while this helper waits for the tree, if
/// it has a layer and a bound.
pub(crate) fn watch_bound(plan: &Plan) {
    let Some((_, dir)) = plan.layer() else { return };
    if plan.process.limits.written_bytes == 0 {
        return;
    }
    let pause = Duration::from_secs(1);
    *WATCHED.lock().unwrap_or_else(|e| e.into_inner()) = Some(Bound {
        upper: crate::layer::upper(dir),
        bytes: plan.process.limits.written_bytes,
        next: Instant::now() + pause,
        pause,
    });
}

/// How long the helper's wait may sleep before [`check_bound`] is due (`None`: no bound).
pub(crate) fn bound_due_in() -> Option<Duration> {
    let watched = WATCHED.lock().unwrap_or_else(|e| e.into_inner());
    watched
        .as_ref()
        .map(|b| b.next.saturating_duration_since(Instant::now()))
}

/// Sums the layer when due (a walk: at most once per four walks' time and at least a second
/// apart, 150-350 ms per 20,000 entries measured); true once it passed the bound, which it
/// then tells the launcher (the caller kills the tree, and nothing lands).
pub(crate) fn check_bound() -> bool {
    if OVER.load(Ordering::Relaxed) {
        return true;
    }
    let mut watched = WATCHED.lock().unwrap_or_else(|e| e.into_inner());
    let Some(bound) = watched.as_mut() else {
        return false;
    };
    if Instant::now() < bound.next {
        return false;
    }
    let began = Instant::now();
    let used = allocated(&bound.upper, bound.bytes);
    bound.pause = (began.elapsed() * 4).max(Duration::from_secs(1));
    bound.next = Instant::now() + bound.pause;
    if used <= bound.bytes {
        return false;
    }
    OVER.store(true, Ordering::Relaxed);
    super::report::send(&Message::WriteLimit(bound.bytes));
    true
}

/// The bytes allocated below `dir` (symlinks not followed), counted until past `bound`.
fn allocated(dir: &Path, bound: u64) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0u64;
    let mut pending: Vec<PathBuf> = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(meta) = entry.metadata() else { continue };
            total += meta.blocks() * 512;
            if meta.is_dir() {
                pending.push(entry.path());
            }
            if total > bound {
                return total;
            }
        }
    }
    total
}
