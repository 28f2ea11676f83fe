//! The sandbox suite: the escape attacks (`sandbox_escape_*`, one test per backend each, every
//! attack with its unconfined positive control), the functional tests of confined commands,
//! `zeroclaw sandbox run` on the command line and the kill stress test. One test binary; each
//! former file is a module (`sandbox_escape_fs::read_ssh_keys::namespaces`).
//!
//! Tests of different modules run in parallel threads of this process. Each attack judges
//! only processes and files carrying a marker unique to it (`world::unique`, the kill stress's
//! own markers), and the one attack that changes host state (the positive control of
//! `sandbox_escape_privilege::write_kernel_sysctl` bumps a harmless sysctl no other test reads,
//! and restores it) takes turns on its own lock, so none needs the process to itself.

#[path = "../support/mod.rs"]
mod support;
#[path = "../sandbox_support/mod.rs"]
#[macro_use]
mod sandbox_support;
#[path = "../tools_support/mod.rs"]
mod tools_support;

mod cli_sandbox_run;
mod cli_sandbox_umask;
#[macro_use]
mod egress_sandbox;
mod egress_sandbox_foreground;
mod sandbox_caches;
mod sandbox_escape_api;
mod sandbox_escape_failclosed;
mod sandbox_escape_fs;
mod sandbox_escape_git;
mod sandbox_escape_host;
mod sandbox_escape_kernel;
mod sandbox_escape_lifetime;
mod sandbox_escape_nested_git;
mod sandbox_escape_net;
mod sandbox_escape_privilege;
mod sandbox_escape_proc;
mod sandbox_escape_protected;
mod sandbox_escape_setuid;
mod sandbox_escape_sockets;
mod sandbox_functional;
mod sandbox_git;
mod sandbox_git_litter;
mod sandbox_git_parent;
mod sandbox_kill_stress;
mod sandbox_layer;
