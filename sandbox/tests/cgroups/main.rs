//! The sandbox crate's tests of the calls' pids and memory cgroups, as root. A binary of its
//! own, so that no other test makes cgroups meanwhile; its two tests take turns
//! (`cgroup_support::exclusive`).

#[path = "../cgroup_support/mod.rs"]
mod cgroup_support;
#[path = "../support/mod.rs"]
mod support;

mod cgroup;
mod memory_cgroup;
