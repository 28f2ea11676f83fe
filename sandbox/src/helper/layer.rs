//! The helper's part of the transactional workspace ([`crate::layer`]): it makes the call's
//! layer directory before the namespaces (holding its lock for the call), and once the
//! call's tree has ended lands it, telling the launcher what was refused and what changed.

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
/// A landing that fails leaves the layer, journaled or not, to the next [`make`].
pub(crate) fn land(plan: &Plan, held: Option<crate::layer::Held>) {
    let (Some((workspace, _)), Some(held)) = (plan.layer(), held) else {
        return;
    };
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
