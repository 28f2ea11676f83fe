//! What the sandbox crate's integration tests share.

/// A test that needs something this machine lacks (a backend, a kernel feature, root): skips
/// with `reason` printed, or fails when `CI=true`, where everything must be there. Call it,
/// then return from the test.
pub fn require_feature(reason: &str) {
    assert_ne!(
        std::env::var("CI").as_deref(),
        Ok("true"),
        "missing on CI: {reason}"
    );
    eprintln!("SKIP: {reason}");
}
