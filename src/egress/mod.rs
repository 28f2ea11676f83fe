//! Network egress of confined children: the policy ([`policy`]: which names, addresses and
//! ports a child may reach, and why) and zeroclaw's own allowlist proxy ([`proxy`]: HTTP
//! forwarding, `CONNECT` and SOCKS5, resolving names itself and checking every address).
//!
//! The child side (listeners inside the child's network namespace) lives in the sandbox crate;
//! this module owns every decision.

pub mod address;
pub mod pattern;
pub mod policy;
pub mod proxy;

pub use policy::{Decision, EgressPolicy, Host, Rule};
