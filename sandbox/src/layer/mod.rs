//! The transactional workspace: a call's writes to the workspace root go to a private
//! overlayfs upper layer (one per call, in the profile's layers directory), and reach the
//! workspace only when the call's tree has ended, through validation ([`land`]): the host
//! never sees a repository, hook or git control file the command wrote before it is
//! validated. `dir` owns the layer's directory (creation, lock, release); [`land`] owns the landing
//! and its journal, [`control`] what a repository's control state may hold.

pub mod control;
mod dir;
pub mod land;
mod moves;
mod rules;
#[cfg(test)]
mod tests;
mod tree;

pub use crate::wire::{Change, Changed};
pub use dir::{
    BUILDING, BUILDING_STALE, Held, LOCK_FILE, WORKSPACE_FILE, create, discard, release, upper,
    work,
};
pub use land::{Landing, land, recover};
