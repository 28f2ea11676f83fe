//! The room kept for a SQLite audit log on a full file system: `audit.db.reserve`, a file of
//! [`RESERVE_BYTES`] allocated beside the log when it opens. A record that ends a call already
//! under way ([`Need::Finish`]: its `tool.exec`, a sandbox failure, a git landing refusal)
//! that fails because the file system is full is written again once the reserve is removed;
//! a record that lets a call go on ([`Need::Start`]: a decision, an approval, `tool.start`) is
//! refused while the reserve cannot be made again, so no call starts whose records would not
//! fit. A PostgreSQL log has no reserve.

use std::fs::File;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// The size of the reserve: room for several thousand records.
pub const RESERVE_BYTES: u64 = 2 * 1024 * 1024;

/// What a record needs of the reserve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// It lets a call go on: written only while the reserve is held.
    Start,
    /// It ends a call under way: may use the reserve's room.
    Finish,
    /// Anything else (lifecycle, authentication, reload): written if it fits.
    Other,
}

impl Need {
    /// What the record `body` needs.
    pub fn of(body: &Value) -> Need {
        match body["kind"].as_str().unwrap_or("") {
            "policy.decision" if body["rule"] == "git_landing" => Need::Finish,
            "policy.decision" | "approval" | "tool.start" => Need::Start,
            "tool.exec" | "sandbox.failure" => Need::Finish,
            _ => Need::Other,
        }
    }
}

/// The reserve beside one log file.
#[derive(Debug)]
pub struct Reserve {
    path: PathBuf,
}

impl Reserve {
    /// The reserve of the log at `db` (`<db>.reserve`); nothing is made yet.
    pub fn beside(db: &Path) -> Reserve {
        let mut name = db.as_os_str().to_owned();
        name.push(".reserve");
        Reserve {
            path: PathBuf::from(name),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Makes the reserve unless it is there; `Err` says why it cannot be (the file system
    /// is full), and nothing is left behind.
    pub fn hold(&self) -> Result<(), String> {
        if self.path.metadata().is_ok_and(|m| m.len() >= RESERVE_BYTES) {
            return Ok(());
        }
        let made = File::create(&self.path).and_then(|file| allocate(&file));
        made.map_err(|e| {
            let _ = std::fs::remove_file(&self.path);
            format!(
                "no room for the audit log's reserve {} ({e})",
                self.path.display()
            )
        })
    }

    /// Removes the reserve, so its room takes the records of calls under way; whether there
    /// was one.
    pub fn release(&self) -> bool {
        std::fs::remove_file(&self.path).is_ok()
    }
}

/// Gives `file` [`RESERVE_BYTES`] of blocks of its own (not a sparse file).
#[cfg(target_os = "linux")]
fn allocate(file: &File) -> std::io::Result<()> {
    nix::fcntl::posix_fallocate(file, 0, RESERVE_BYTES as i64).map_err(std::io::Error::from)
}

/// Gives `file` [`RESERVE_BYTES`] of blocks of its own (not a sparse file).
#[cfg(not(target_os = "linux"))]
fn allocate(file: &File) -> std::io::Result<()> {
    use std::io::Write;
    let chunk = vec![0u8; 64 * 1024];
    let mut file = file;
    for _ in 0..RESERVE_BYTES / chunk.len() as u64 {
        file.write_all(&chunk)?;
    }
    file.sync_data()
}

/// Whether an append failed because the file system is full (SQLite's `SQLITE_FULL`, or
/// `ENOSPC` as the OS words it).
pub fn is_full(message: &str) -> bool {
    message.contains("database or disk is full") || message.contains("No space left on device")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reserve_is_made_once_and_released() {
        let dir = tempfile::tempdir().unwrap();
        let reserve = Reserve::beside(&dir.path().join("audit.db"));
        assert_eq!(reserve.path(), dir.path().join("audit.db.reserve"));
        reserve.hold().unwrap();
        assert_eq!(reserve.path().metadata().unwrap().len(), RESERVE_BYTES);
        reserve.hold().unwrap();
        assert!(reserve.release());
        assert!(!reserve.path().exists());
        assert!(!reserve.release());
    }

    #[test]
    fn records_are_classed_by_what_they_let_happen() {
        let need = |body: Value| Need::of(&body);
        assert_eq!(need(serde_json::json!({"kind": "tool.start"})), Need::Start);
        assert_eq!(
            need(serde_json::json!({"kind": "policy.decision", "rule": "full_level"})),
            Need::Start
        );
        assert_eq!(
            need(serde_json::json!({"kind": "policy.decision", "rule": "git_landing"})),
            Need::Finish
        );
        assert_eq!(need(serde_json::json!({"kind": "tool.exec"})), Need::Finish);
        assert_eq!(
            need(serde_json::json!({"kind": "session.close"})),
            Need::Other
        );
        assert!(is_full("database or disk is full"));
        assert!(!is_full("database is locked"));
    }
}
