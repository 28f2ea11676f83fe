//! The helper's part of the transactional workspace ([`crate::layer`]): it makes the call's
//! layer directory before the namespaces (holding its lock for the call), watches the
//! layer's size against the call's write bound while the tree runs ([`Watch`]), and once the
//! tree has ended lands it, telling the launcher what was refused and what changed — or,
//! past the bound, discards it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
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

/// Lands the layer once the call's tree is gone, and reports the refusals and the changes.
/// A landing that fails leaves the layer, journaled or not, to the next [`make`]. A layer
/// over the call's write bound (`over`) is discarded whole instead.
pub(crate) fn land(plan: &Plan, held: Option<crate::layer::Held>) {
    let (Some((workspace, _)), Some(held)) = (plan.layer(), held) else {
        return;
    };
    if OVER.load(Ordering::Relaxed) {
        let removed = crate::layer::discard(&held.dir);
        super::report::git_refusals(vec![format!(
            "workspace: the call wrote more than {} MiB ([sandbox.limits] written_mb): nothing \
             it wrote landed{}",
            plan.limits.written_bytes >> 20,
            match removed {
                Ok(()) => String::new(),
                Err(e) => format!(" (its layer could not be removed: {e})"),
            }
        )]);
        return;
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
    drop(held);
}

/// Whether this helper's call passed its write bound (set by its [`Watch`]).
static OVER: AtomicBool = AtomicBool::new(false);

/// The write bound's watch: a thread summing the layer's upper directory while the tree runs
/// (a walk, so at most once per four walks' time and at least a second apart: 150-350 ms per
/// 20,000 entries measured), which kills the init (and so the whole pid namespace) once the
/// sum passes the bound and tells the launcher.
pub(crate) struct Watch {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<()>,
}

impl Watch {
    /// Starts the watch of `plan`'s layer over the tree whose init is `init`, if it has a
    /// layer and a bound. Called in the helper after it forked the init.
    pub(crate) fn start(plan: &Plan, init: i32) -> Option<Watch> {
        let (_, dir) = plan.layer()?;
        let bound = plan.limits.written_bytes;
        if bound == 0 {
            return None;
        }
        let upper = crate::layer::upper(dir);
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::Builder::new()
            .name("write-bound".into())
            .spawn(move || watch(&upper, bound, init, &stopped))
            .ok()?;
        Some(Watch { stop, thread })
    }

    /// Ends the watch once the tree is gone (before the landing reads [`OVER`]).
    pub(crate) fn finish(self) {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.thread().unpark();
        let _ = self.thread.join();
    }
}

fn watch(upper: &Path, bound: u64, init: i32, stop: &AtomicBool) {
    let mut pause = Duration::from_secs(1);
    while !stop.load(Ordering::Relaxed) {
        std::thread::park_timeout(pause);
        if stop.load(Ordering::Relaxed) {
            return;
        }
        let began = Instant::now();
        let used = allocated(upper, bound);
        pause = (began.elapsed() * 4).max(Duration::from_secs(1));
        if used > bound {
            OVER.store(true, Ordering::Relaxed);
            super::report::send(&Message::WriteLimit(bound));
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(init),
                nix::sys::signal::Signal::SIGKILL,
            );
            return;
        }
    }
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
