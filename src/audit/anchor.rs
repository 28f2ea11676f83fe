//! The anchor: the head of the chain (`seq`, `hash`, and in keyed mode an HMAC over both)
//! written by the writer thread to `audit.head` beside the database, at most once a second
//! after new records (temp file + rename). `verify` checks the database still reaches it, so a
//! tail cut off the file is found even when nothing was forged after it.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::chain::{self, Broken, Row};

/// The anchor file of the database at `db`.
pub fn path_for(db: &Path) -> PathBuf {
    db.with_file_name("audit.head")
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Anchor {
    pub seq: i64,
    pub hash: String,
    /// HMAC-SHA-256 of `"<seq>\n<hash>"` in keyed mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac: Option<String>,
}

fn mac(seq: i64, hash: &str, key: &[u8]) -> String {
    hex::encode(chain::hmac_sha256(key, format!("{seq}\n{hash}").as_bytes()))
}

/// Replaces the anchor of `db` with this head.
pub fn write(db: &Path, seq: i64, hash: &str, key: Option<&[u8]>) -> std::io::Result<()> {
    let anchor = Anchor {
        seq,
        hash: hash.to_owned(),
        mac: key.map(|k| mac(seq, hash, k)),
    };
    let path = path_for(db);
    if let Some(dir) = path.parent() {
        // On PostgreSQL nothing else may have made the directory yet.
        std::fs::create_dir_all(dir)?;
    }
    // A temp name of this process: two processes anchoring one shared chain never mix files.
    let tmp = path.with_extension(format!("head.tmp.{}", std::process::id()));
    std::fs::write(&tmp, serde_json::to_vec(&anchor)?)?;
    std::fs::rename(&tmp, &path)
}

/// The anchor of `db`, if one was written.
pub fn read(db: &Path) -> Result<Option<Anchor>, String> {
    let path = path_for(db);
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| format!("{} is not an anchor: {e}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    }
}

/// Whether `rows` (a verified chain) reach the anchor: its record is there with its hash (at
/// its seq, or at another in an imported segment), or was pruned (before the first row).
pub fn check(anchor: &Anchor, rows: &[Row], key: Option<&[u8]>) -> Result<(), Broken> {
    let broken = |seq, reason: String| Err(Broken { seq, reason });
    if let Some(key) = key
        && anchor.mac.as_deref() != Some(mac(anchor.seq, &anchor.hash, key).as_str())
    {
        return broken(
            anchor.seq,
            "the anchor's MAC does not match (forged anchor)".into(),
        );
    }
    // The anchored record in an imported segment (`store copy` into a log in use): the same
    // record, with its own hash, at another seq.
    if rows.iter().any(|r| r.hash == anchor.hash) {
        return Ok(());
    }
    let first = rows.first().map_or(1, |r| r.seq);
    let head = rows.last().map_or(0, |r| r.seq);
    if anchor.seq < first {
        return Ok(());
    }
    if anchor.seq > head {
        return broken(
            head + 1,
            format!(
                "records after seq {head} are missing: the anchor names seq {}",
                anchor.seq
            ),
        );
    }
    match rows.iter().find(|r| r.seq == anchor.seq) {
        Some(row) if row.hash == anchor.hash => Ok(()),
        _ => broken(
            anchor.seq,
            "the record differs from the anchored head".into(),
        ),
    }
}
