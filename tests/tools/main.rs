//! The tools suite: tool calls end to end through `zeroclaw acp` (`shell`, the file tools,
//! delivery), the full-autonomy shell, the policy levels and approvals, prompt injection, and
//! the user configuration a child sees (git identity, toolchains on PATH).
//! One test binary; each former file is a module (`tools_e2e::…`).

#[path = "../support/mod.rs"]
mod support;
#[path = "../tools_support/mod.rs"]
mod tools_support;

mod deliver_embed;
mod full_confined;
mod full_shell;
mod injection;
mod policy_approval;
mod policy_levels;
mod session_files;
mod shell_caches;
mod shell_discarded;
mod shell_limits;
mod shell_parent_repo;
mod tools_e2e;
mod user_config;
