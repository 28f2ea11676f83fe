//! Git inside the sandbox: what the namespace backends do about the repositories the host's
//! git will use after a confined run.
//!
//! - [`read`]: what the plan's git section needs of the host, read once with the plan's
//!   other facts (the configs' targets, what is at `.git`, the git directories a stage
//!   replaces), so the section reads nothing itself; and the parent repository.
//! - [`repo`]: an existing repository (namespace backends): the child sees a private stage at
//!   `.git` — copies of its control files ([`copy`]), its data directories bound — validated
//!   and applied to the real `.git` file by file once the run's tree is gone ([`land`]); a
//!   linked worktree's main repository the same way, at its real path.
//! - [`existing`]: an existing repository's other control files the host's git reads
//!   (`config.worktree`, submodules' and linked worktrees'), protected read-only on the
//!   backends without a stage.
//! - [`missing`]: a workspace without `.git`. The child must not create one (a new `.git` with
//!   a hook or `core.fsmonitor` would run a program outside the sandbox at the host's next
//!   `git status`), and nothing may be left behind: `.git` is a guarded placeholder, removed
//!   afterwards when still empty and ours.
//! - [`stage`]: inside that placeholder, the child's private `.git` (so `git init` works),
//!   validated and moved into place once the run's tree is gone.
//! - [`stage::name`]: a stage's name prefix and a fresh stage path, below all the others.
//! - [`stage::lock`]: a stage's lock for its run's lifetime, and the removal of stages whose run is
//!   gone (a killed helper's), never a live one, never through a symlink.
//! - [`config`]: git's config format, parsed and rendered canonically (the crate's one
//!   parser of it).
//! - [`targets`]: the paths a config points at that are as powerful as the config
//!   (`core.hooksPath`, `include.path`, `includeIf.*.path`), protected on every backend.
//! - [`global`]: the user's global config as the child sees it, a validated copy in its
//!   private HOME (`GIT_CONFIG_GLOBAL`), read and validated again only when one of its files
//!   changed ([`global_cache`]).
//! - [`validate`]: what a staged repository may keep (an allowlist of config keys, no hooks
//!   but samples, no attributes naming a driver, no `commondir`/`gitdir` redirection).
pub mod config;
pub mod copy;
pub mod existing;
pub mod global;
mod global_cache;
pub mod land;
pub mod missing;
pub mod read;
pub mod repo;
pub mod stage;
pub mod targets;
pub mod validate;

/// What the plan reads of git ([`crate::plan::GitReader`]), handed to it by the daemon side.
pub const READER: crate::plan::GitReader = crate::plan::GitReader {
    read: read::read,
    global: global::validated,
    parent: read::enclosing,
    stage: add_to_plan,
};

/// The plan's git section (the plan's [`crate::plan::GitReader::stage`]): no `.git` yet, none
/// left behind ([`missing`]); an existing repository's private stage ([`repo`]); the stage of
/// the larger repository the workspace lies in, when the plan shows it.
pub fn add_to_plan(
    plan: &mut crate::plan::Plan,
    profile: &crate::profile::Profile,
    facts: &crate::plan::HostFacts,
) {
    missing::guard_if_missing(plan, profile, &facts.git.workspace);
    repo::stage_if_existing(plan, profile, &facts.git.workspace);
    if let Some(parent) = &facts.git.parent {
        repo::stage_parent(plan, profile, parent);
    }
}
