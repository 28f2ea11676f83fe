//! What the sandbox crate's integration tests share: the rule for a missing feature, the
//! same file the root crate's tests use.

#[path = "../../../tests/support/require_feature.rs"]
mod require_feature;

pub use require_feature::require_feature;
