//! The in-process operations a binary registers ([`super::run_if_helper_with`]) for a helper
//! to run after confinement instead of `execve` ([`crate::Sandbox::run_op`]).

use std::sync::OnceLock;

/// An in-process operation the helper can run after confinement instead of `execve`: it gets
/// the payload (the child's stdin) and returns the bytes for stdout (exit 0) or an error text
/// for stderr (exit 1).
pub type OpFn = fn(payload: &[u8]) -> Result<Vec<u8>, String>;

static OPS: OnceLock<&'static [(&'static str, OpFn)]> = OnceLock::new();

/// Registers the operations of this binary (once, as the helper starts).
pub(crate) fn register(ops: &'static [(&'static str, OpFn)]) {
    let _ = OPS.set(ops);
}

/// The registered operation called `name`.
pub(crate) fn find(name: &str) -> Option<OpFn> {
    OPS.get()?.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
}
