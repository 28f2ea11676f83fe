//! Fault injection for this crate's own tests: a stage deliberately left out, so that a test
//! can show the inside check (`inside_check.rs`) fails such a call closed.
//!
//! Why it cannot reach production: the code exists only with the `fault-injection` cargo
//! feature AND debug assertions. Nothing enables the feature but this crate's dev-dependency
//! on itself (`sandbox/Cargo.toml`), which cargo applies only when it builds this crate's own
//! tests and benches; the zeroclaw crate depends on the sandbox without it, and a release
//! profile has no debug assertions, so even a build that unified the feature compiles the
//! `false` below. Where it exists, a stage is skipped only when the plan's environment names
//! it in `ZEROCLAW_SANDBOX_FAULT`.

use crate::plan::Plan;

/// The variable naming the stage to skip (`landlock`).
#[cfg(all(feature = "fault-injection", debug_assertions))]
pub(super) const VAR: &str = "ZEROCLAW_SANDBOX_FAULT";

/// Whether `stage` is to be skipped (while still reported as applied).
#[cfg(all(feature = "fault-injection", debug_assertions))]
pub(super) fn skip(plan: &Plan, stage: &str) -> bool {
    plan.env.iter().any(|(k, v)| k == VAR && v == stage)
}

/// Whether `stage` is to be skipped: never, in this build.
#[cfg(not(all(feature = "fault-injection", debug_assertions)))]
pub(super) fn skip(_plan: &Plan, _stage: &str) -> bool {
    false
}
