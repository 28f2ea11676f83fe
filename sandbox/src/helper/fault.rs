//! Fault injection for this crate's own tests: a stage deliberately left out, so that a test
//! can show the inside check (`inside_check.rs`) fails such a call closed.
//!
//! Why it cannot reach production: the code exists only with the `fault-injection` cargo
//! feature AND debug assertions. Nothing enables the feature but this crate's dev-dependency
//! on itself (`sandbox/Cargo.toml`), which cargo applies only to a build that includes this
//! crate's tests or benches (a workspace-wide `cargo test` then builds the debug zeroclaw
//! binary with it too); a release profile has no debug assertions, so no release build
//! (packages, `cargo install`, the bench profile) compiles anything but the `false` below.
//! Where it exists, a stage is skipped only when the plan's environment names it in
//! `ZEROCLAW_SANDBOX_FAULT`, and the inside check then fails the call: the hook cannot make a
//! command run with less confinement, only make a call fail.

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
