//! One file per backend's child-side entry, each `run(plan)` returning the command's shell
//! exit code once every process of the call is reaped.

pub(super) mod bubblewrap;
mod landlock;
mod namespaces;
mod seatbelt;
mod unconfined;

use crate::backend::Backend;
use crate::error::SetupError;
use crate::plan::Plan;

/// Runs `plan` on its backend.
pub(super) fn run(plan: &Plan) -> Result<i32, SetupError> {
    match plan.backend {
        Backend::Namespaces => namespaces::run(plan),
        Backend::Bubblewrap => bubblewrap::run(plan),
        Backend::Landlock => landlock::run(plan),
        Backend::Seatbelt => seatbelt::run(plan),
        Backend::None => unconfined::run(plan),
    }
}
