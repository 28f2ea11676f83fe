//! `audit prune`: deletes a prefix of the log and leaves what keeps the rest checkable — a
//! chain `checkpoint` record naming the pruned head, the anchor, and with a signing key a
//! signed checkpoint of the tree at the pruned seq.

use std::path::Path;

use super::anchor;
use super::checkpoint::Signer;
use super::db::Db;
use super::tlog::Checkpointer;

/// Deletes the records older than `before_ms` (a prefix of the chain) and appends a
/// checkpoint naming the last pruned seq and its hash; returns how many went. `anchor_at` is
/// the path the anchor is written beside ([`anchor::path_for`]). With a `signer`, a signed
/// checkpoint of the tree at the last pruned seq is stored first, so the tree of the records
/// that stay can still be checked ([`super::tlog::verify`]).
pub fn prune(
    db: &mut Db,
    anchor_at: &Path,
    before_ms: i64,
    key: Option<&[u8]>,
    signer: Option<Signer>,
) -> Result<u64, String> {
    let (first_kept, newest) = db.bounds(before_ms)?;
    let through = match first_kept {
        Some(seq) => seq - 1,
        None => newest.unwrap_or(0),
    };
    let Some(hash) = db.hash_of(through)? else {
        return Ok(0);
    };
    // The checkpoint goes in first, so the pruned head is named in the chain before anything
    // is deleted; then the prefix goes.
    let body = serde_json::json!({
        "kind": "checkpoint",
        "time_ms": crate::store::now_ms(),
        "pruned_through_seq": through,
        "pruned_head_hash": hash,
    });
    let (seq, hash) = db.append(body, key)?;
    if let Err(error) = anchor::write(anchor_at, seq, &hash, key) {
        tracing::warn!(%error, "cannot write the audit anchor");
    }
    if let Some(signer) = signer {
        let mut checkpointer = Checkpointer::new(signer);
        checkpointer.checkpoint_at(db, through as u64)?;
        checkpointer.checkpoint(db)?;
    }
    db.delete_through(through)
}
