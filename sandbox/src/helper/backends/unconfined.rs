//! `backend = "none"`'s child-side entry: the command runs unconfined, reported as such.

use super::super::exec;
use super::super::report::send;
use crate::error::{SetupError, Stage};
use crate::plan::Plan;
use crate::wire::{Enforcement, Message};

/// `backend = "none"`: no confinement at all, reported as such.
pub(crate) fn run(plan: &Plan) -> Result<i32, SetupError> {
    std::env::set_current_dir(&plan.cwd)
        .map_err(|e| SetupError::os(Stage::Chdir, format!("chdir({})", plan.cwd.display()), &e))?;
    let target = exec::target(plan)?;
    let report = Enforcement {
        backend: "none".into(),
        landlock: "none".into(),
        notes: vec!["backend = none: the command runs unconfined".into()],
        ..Enforcement::default()
    };
    send(&Message::Ready(report));
    exec::run_target(target, plan)
}
