//! The files of a session that live in its workspace rather than the store: prompt uploads
//! (`uploads/<sha256>.<ext>`) and files the agent delivered (`deliver_file`). The store keeps
//! each one's path relative to the workspace, SHA-256 and size, written in the same transaction
//! as the turn they belong to, so a daemon taking a session over can check that the shared
//! workspace still holds what the history refers to.

use serde::{Deserialize, Serialize};

/// One recorded file of a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionFile {
    /// The turn it belongs to (from 1); set by the store when the turn is appended.
    pub turn: i64,
    /// [`UPLOAD`] or [`DELIVERED`].
    pub kind: String,
    /// Relative to the session's workspace (absolute when the file lies outside it).
    pub path: String,
    /// Full hex SHA-256 of the file's bytes.
    pub sha256: String,
    pub size: i64,
    /// Unix time in milliseconds; set by the store when the turn is appended.
    pub created_at: i64,
}

/// A blob of a prompt, written under `uploads/`.
pub const UPLOAD: &str = "upload";
/// A file the agent handed to the client with `deliver_file`.
pub const DELIVERED: &str = "delivered";

impl SessionFile {
    /// A file of the turn being written (its turn number and time are the store's to set).
    pub fn new(kind: &str, path: String, sha256: String, size: u64) -> SessionFile {
        SessionFile {
            turn: 0,
            kind: kind.to_owned(),
            path,
            sha256,
            size: i64::try_from(size).unwrap_or(i64::MAX),
            created_at: 0,
        }
    }
}
