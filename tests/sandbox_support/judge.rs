//! The three ways an attack is judged, each confined first and then as its positive control.
//!
//! - [`no_secret`]: the confined output never shows the world's canary; unconfined, it does.
//! - [`unchanged`]: watched paths look the same from outside after the confined run; the
//!   unconfined run changes at least one of them.
//! - [`not_escaped`]: the script prints [`ESCAPED`] only when the forbidden action worked;
//!   confined it must not, unconfined it must.
//!
//! Every script is prefixed with `echo ATTEMPT`, and the confined run must show it.

use std::path::Path;

use super::backend::Backend;
use super::run::Run;
use super::world::{Shell, Snapshot, World};
use super::{ATTEMPT, ESCAPED};

/// How a confined shell is configured beyond the CLI defaults (extra roots, timeout...).
pub type Confine = for<'a> fn(Shell<'a>, &'a World) -> Shell<'a>;

/// The CLI defaults, nothing added.
pub fn defaults<'w>(shell: Shell<'w>, _: &World) -> Shell<'w> {
    shell
}

/// `--allow-read ro/`: the target is visible, read-only.
pub fn with_ro<'w>(shell: Shell<'w>, world: &World) -> Shell<'w> {
    shell.allow_read(&world.ro)
}

/// The script with its reach marker in front.
pub fn marked(script: &str) -> String {
    format!("echo {ATTEMPT}; {script}")
}

/// Runs the confined script and checks it reached its attack.
pub fn confined(world: &World, backend: Backend, confine: Confine, script: &str) -> Run {
    let run = confine(world.confined(backend), world).sh(&marked(script));
    run.assert_reached(ATTEMPT);
    run
}

/// Runs the same script as a plain child (the positive control).
pub fn control(world: &World, script: &str) -> Run {
    let run = world.plain().sh(&marked(script));
    run.assert_reached(ATTEMPT);
    run
}

/// The confined script must not print the canary; the control must.
pub fn no_secret(world: &World, backend: Backend, confine: Confine, script: &str) {
    let run = confined(world, backend, confine, script);
    world.assert_no_canary(&run);
    world.assert_canary(&control(world, script));
}

/// The confined script must leave every watched path as it was; the control must not.
pub fn unchanged(
    world: &World,
    backend: Backend,
    confine: Confine,
    watched: &[&Path],
    script: &str,
) {
    let before = snapshots(watched);
    let run = confined(world, backend, confine, script);
    let after = snapshots(watched);
    assert_eq!(
        before, after,
        "ESCAPE: the confined script changed a watched path {watched:?}\n{run}"
    );
    let control = control(world, script);
    assert_ne!(
        before,
        snapshots(watched),
        "positive control failed: unconfined script changed nothing in {watched:?}\n{control}"
    );
}

/// The confined script must not print [`ESCAPED`]; the control must.
pub fn not_escaped(world: &World, backend: Backend, confine: Confine, script: &str) {
    let run = confined(world, backend, confine, script);
    assert_not_escaped(&run);
    assert_escaped(&control(world, script));
}

/// Asserts the confined run did not print [`ESCAPED`].
pub fn assert_not_escaped(run: &Run) {
    assert!(
        !run.stdout.contains(ESCAPED),
        "ESCAPE: the confined script reports success\n{run}"
    );
}

/// Asserts the control printed [`ESCAPED`].
pub fn assert_escaped(run: &Run) {
    assert!(
        run.stdout.contains(ESCAPED),
        "positive control failed: unconfined attempt did not succeed\n{run}"
    );
}

fn snapshots(paths: &[&Path]) -> Vec<Option<Snapshot>> {
    paths.iter().map(|p| Snapshot::of(p)).collect()
}
