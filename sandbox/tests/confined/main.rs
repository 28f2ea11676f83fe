//! The sandbox crate's tests of real confined calls through the stand-alone helper: the
//! launcher on every backend, the confined tree's lifetime when its launcher is killed, warm
//! helpers, and a proxy call's listeners. One test binary; each former file is a module
//! (`launcher::namespaces::…`).
//! The tests that watch the calls' cgroups have a binary of their own (`cgroups`).

#[path = "../support/mod.rs"]
mod support;

mod egress;
mod inside_check;
mod launcher;
mod lifetime;
mod warm;
