//! Network egress of confined children: the policy ([`policy`]: which names, addresses and
//! ports a child may reach, and why) and zeroclaw's own allowlist proxy ([`proxy`]: HTTP
//! forwarding, `CONNECT` and SOCKS5, resolving names itself and checking every address).
//!
//! The child side (listeners inside the child's network namespace, `zeroclaw_sandbox::egress::handover`)
//! lives in the sandbox crate, with [`child_env`] the variables pointing at them;
//! this module owns every decision ([`host`]: the one canonical form of a requested name; [`rule`]: why a destination was allowed or refused) ([`admit`]: the addresses of a destination the policy
//! admits, for the proxy and for zeroclaw's own connections), [`credentials`] the secrets the
//! proxy injects for their hosts while the child holds placeholders, and [`serve`] runs the
//! proxy for one confined call.

pub mod address;
pub mod admit;
pub mod child_env;
pub mod credentials;
pub mod host;
pub mod pattern;
pub mod policy;
pub mod proxy;
pub mod rule;
pub mod serve;

pub use policy::{Decision, EgressPolicy, Host, Rule};
