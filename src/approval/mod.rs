//! Approval, in one place: whether a tool call runs, asks the client, or is refused, how the
//! client is asked, and the "Always allow" answers remembered.
//!
//! - [`decision`]: the verdict on one call ([`Action`], [`Decision`], [`decide`]) from the
//!   session's policy and its remembered "Always allow" answers ([`Approvals`]).
//! - [`gate`]: the gate every tool call passes ([`gate::pass`]): the decision, the
//!   `session/request_permission` question and its answer, the policy's path check and the
//!   audit records that let a call go on.
//! - [`network`]: supervised network approvals, the egress proxy's `Approver` for one call.
//! - [`agent`]: the "Always allow" answers kept per agent (network hosts), in the store.
//!
//! Dependencies point one way. `approval` uses `policy` (the level, the lists, the risk
//! classes, the path check), `config`, `audit`, `metrics`, `store` and `egress` (the proxy's
//! `Approver`); `tools`, `mcp`, `agent` and `acp` use `approval`, and it uses none of them: the
//! gate sees a tool call through [`gate::Call`], which the tools' `ToolContext` implements, and
//! refuses with [`gate::Refused`], which the tools turn into their `ToolError`.

pub mod agent;
pub mod decision;
pub mod gate;
pub mod network;

pub use decision::{Action, Approvals, Decision, decide, explain};
