//! Approval, in one place: whether a tool call runs, asks the client, or is refused.
//!
//! - [`decision`]: the verdict on one call ([`Action`], [`Decision`], [`decide`]) from the
//!   session's policy and its remembered "Always allow" answers ([`Approvals`]).
//!
//! Dependencies point one way: `approval` reads `policy` (the level, the lists, the risk
//! classes) and `config`; the policy uses nothing of approval.

pub mod decision;

pub use decision::{Action, Approvals, Decision, decide, explain};
