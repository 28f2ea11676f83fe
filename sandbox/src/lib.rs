//! zeroclaw-sandbox: confines every child process zeroclaw starts.
//!
//! A [`Profile`] says what a child may do (roots, protected and denied paths, network, limits,
//! environment). [`detect`] probes the machine once and picks a backend from the ladder
//! (namespaces, bubblewrap, Landlock-only, Seatbelt; `none` only by name) — failing closed.
//! The [`Sandbox`] launcher (async, daemon side) re-executes the current binary once as a
//! single-threaded zygote ([`helper::run_if_helper`], the first line of `main`), which forks a
//! helper per execution; the helper confines itself stage by stage and execs the command;
//! setup failures come back as a [`SetupError`] naming the [`Stage`].
//!
//! Module roles: `profile` (plain data), `plan` (profile resolved per backend, pure),
//! `bubblewrap`/`seatbelt` (pure argv / SBPL builders), `detect` (probes, choice, report),
//! `launcher` (spawn, stream, kill), `spawner` (the launcher's link to its zygote),
//! `foreground` (the same for a single-threaded caller, forking the helper itself), `warm`
//! (helpers prepared ahead of the next call), `helper`
//! (child side, one file per stage, and the zygote), `sys` (the few raw syscalls).
//!
//! # Test strategy
//! Pure parts have unit tests; `tests/launcher.rs` runs real confined processes through a
//! helper test binary and skips (or fails when `CI=true`) when a kernel feature is missing.

pub mod backend;
pub mod bubblewrap;
pub mod detect;
pub mod error;
mod foreground;
pub mod gitconfig;
pub mod helper;
pub mod launcher;
pub mod plan;
pub mod profile;
pub mod protocol;
pub mod seatbelt;
mod spawner;
mod sys;
pub mod warm;

pub use backend::{Backend, BackendChoice};
pub use error::{SandboxError, SetupError, Stage};
pub use launcher::{Confined, End, Outcome, Sandbox, Stream};
pub use profile::{EnvPolicy, Limits, Network, Profile};
pub use protocol::{Enforcement, ExitInfo};
