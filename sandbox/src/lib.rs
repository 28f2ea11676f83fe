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
//! Layers (imports point down only; no cycle, and neither side imports the other; diagram
//! in `README.md`, "Layout"):
//! - the face: `lib` and `foreground::run` (the one module that joins the two sides, for a
//!   foreground run);
//! - the daemon side: `sandbox` ([`Sandbox`]), `plan::planner` (checks, the call's plan),
//!   `launcher` (start; the async driver of `supervise`), `spawner` (the launcher's link to
//!   its zygote), `warm` (helpers prepared ahead of the next call), `foreground` (the
//!   caller's side of a foreground run; the poll driver of `supervise`; `foreground::egress`,
//!   a proxy run's listeners on their way to the caller's hook), `detect` (probes,
//!   choice, report), `egress::launch` (`network = proxy`: the listeners coming back);
//! - the child side: `helper` (one file per stage, `helper/backends/` with one entry per
//!   backend, the zygote, and `helper::forked` for a single-threaded caller);
//! - shared, used by both sides: `profile` (plain data), `plan` (profile resolved per
//!   backend, built without I/O from the host facts its `gather` reads first; `plan::egress`,
//!   the plan's part of `network = proxy`), `wire` (argv markers, descriptor numbers, size
//!   caps, report messages and their decoder), `supervise` (one running call's state machine:
//!   reports, output cap, deadline, end reason, kill), `warm::key`, `error`, `backend`,
//!   `bubblewrap`/`seatbelt` (pure argv / SBPL builders), `egress::handover` (the proxy
//!   listeners' hand-over, both ends), `git` (staged repositories, the one git config parser
//!   and the paths a config points at), `layer` (the transactional workspace: a call's layer
//!   directory, its validation and landing, the journal and recovery), `host` (read-only facts about this machine, the
//!   scans for root-only files) and `sys` (the raw syscalls, the only module allowed
//!   `unsafe`).
//!
//! # Test strategy
//! Pure parts have unit tests; `tests/confined/launcher.rs` runs real confined processes
//! through a helper test binary, one test per backend, and skips (or fails when `CI=true`,
//! `tests/support`'s `require_feature`) when a kernel feature is missing.

#![deny(unsafe_code)]

pub mod backend;
pub mod bubblewrap;
pub mod detect;
pub mod egress;
pub mod error;
mod foreground;
pub mod git;
pub mod helper;
pub mod host;
pub mod launcher;
pub mod layer;
pub mod plan;
pub mod profile;
mod restart;
mod sandbox;
pub mod seatbelt;
mod spawner;
mod supervise;
#[allow(unsafe_code)]
mod sys;
pub mod warm;
pub mod wire;

pub use backend::{Backend, BackendChoice};
pub use egress::launch::EgressListeners;
pub use error::{SandboxError, SetupError, Stage};
pub use launcher::Confined;
pub use profile::{EnvPolicy, HomeBind, Limits, Network, Profile};
pub use sandbox::Sandbox;
pub use supervise::{End, Outcome, Stream};
/// The socket-activated listeners systemd passed this process, adopted once (the `unsafe`
/// step lives in the syscall layer).
pub use sys::take_activated_fds;
pub use wire::{Enforcement, ExitInfo, InsideCheck};
