//! The rule for a test that needs something this machine may lack (a kernel feature, a
//! backend, root, a tool, a PostgreSQL server): it skips with the reason printed, and fails
//! instead when `CI=true`, where everything must be there. The sandbox crate's tests include
//! this file too (by path), so both crates follow one rule.

/// Skips with `reason` printed, or panics with it when `CI=true`. Call it, then return from
/// the test (or leave out the part that needs the feature).
pub fn require_feature(reason: &str) {
    assert_ne!(
        std::env::var("CI").as_deref(),
        Ok("true"),
        "missing on CI: {reason}"
    );
    eprintln!("SKIP: {reason}");
}

/// Whether `program` is on `PATH`; when it is not, [`require_feature`] says so (a skip, or a
/// failure on CI).
#[allow(dead_code)]
pub fn have_program(program: &str) -> bool {
    let found = std::process::Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        require_feature(&format!("{program} is not installed"));
    }
    found
}
