//! Credentials the confined child never sees: each `[[sandbox.network.credentials]]` entry
//! checked and its secret read ([`credential`]), the per-session state that hands the child a
//! placeholder and a CA bundle ([`session`]), the session's certificate authority ([`ca`]),
//! the trust the proxy verifies real upstreams with ([`roots`]), and the request rewriting and
//! placeholder scanning the proxy applies ([`scan`]).
//!
//! The secret lives in the daemon only: in the checked policy and on the wire to the hosts it
//! is bound to. Its `Debug` form is `***`; it is never logged or recorded.

pub mod ca;
pub mod credential;
pub mod roots;
pub mod scan;
pub mod session;

pub use credential::{Credential, Injection, Secret, from_config};
pub use session::Session;

#[cfg(test)]
mod tests;
