//! Bringing another installation's audit log into this one (`zeroclaw store copy`). Into an
//! empty log every record goes as it is. Into a log that already has records (daemons already
//! use the target) it goes as an import segment: one `audit.import` record chained on the
//! target's head, naming the source chain's first seq, record count and head hash, then the
//! source records unchanged at the next seqs, all in one transaction under the appenders'
//! lock, so no daemon's record lands inside it. [`super::chain::verify`] walks the segment.

use serde_json::{Value, json};

use super::chain::{self, ALG_HMAC, IMPORT_KIND, Row};
use super::db::{Db, Target};

/// What [`bring`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Brought {
    /// The target was empty: this many records copied as they are.
    Copied(usize),
    /// This many records imported after the `audit.import` record at seq `at`.
    Imported { records: usize, at: i64 },
}

/// Refuses, before anything is copied, what [`bring`] would refuse of a target that has
/// records: a source log that does not verify, or whose head is already in `to` (copied or
/// imported before).
pub fn check(from: &Target, to: &Target, key: Option<&[u8]>) -> Result<(), String> {
    let rows = Db::open_read(from).map_err(|e| e.to_string())?.rows()?;
    let present = Db::open(to).map_err(|e| e.to_string())?.rows()?;
    if present.is_empty() {
        return Ok(());
    }
    segment_body(from, to, &rows, &present, key).map(|_| ())
}

/// Brings every record of the log at `from` into the log at `to`; `key` is this
/// installation's (`[audit] key_file`): it signs the import record, and checks a keyed source.
/// Refused with nothing written as [`check`] says.
pub fn bring(from: &Target, to: &Target, key: Option<&[u8]>) -> Result<Brought, String> {
    let mut source = Db::open_read(from).map_err(|e| e.to_string())?;
    let rows = source.rows()?;
    let mut target = Db::open(to).map_err(|e| e.to_string())?;
    let present = target.rows()?;
    if present.is_empty() {
        target.insert_rows(&rows)?;
        // The signed checkpoints go along, so the copy's tree verifies as the original's did.
        for checkpoint in source.checkpoints()? {
            target.insert_checkpoint(&checkpoint)?;
        }
        return Ok(Brought::Copied(rows.len()));
    }
    let Some(body) = segment_body(from, to, &rows, &present, key)? else {
        return Ok(Brought::Copied(0));
    };
    let (at, _) = target.append_then(body, key, &rows)?;
    Ok(Brought::Imported {
        records: rows.len(),
        at,
    })
}

/// The `audit.import` record that opens `rows` (the source log) in a target holding
/// `present`; `None` when there is nothing to import.
fn segment_body(
    from: &Target,
    to: &Target,
    rows: &[Row],
    present: &[Row],
    key: Option<&[u8]>,
) -> Result<Option<Value>, String> {
    let Some(first) = rows.first() else {
        return Ok(None);
    };
    let keyed = serde_json::from_str::<Value>(&first.body).is_ok_and(|b| b["alg"] == ALG_HMAC);
    let source = chain::verify(rows, if keyed { key } else { None }).map_err(|broken| {
        format!(
            "the audit log {} does not verify (broken at seq {}: {}); nothing was copied",
            from.describe(),
            broken.seq,
            broken.reason
        )
    })?;
    if let Some(there) = present.iter().find(|r| r.hash == source.head_hash) {
        return Err(format!(
            "the audit log {} is already in {} (its head is record {} there); nothing was \
             copied",
            from.describe(),
            to.describe(),
            there.seq
        ));
    }
    Ok(Some(json!({
        "kind": IMPORT_KIND,
        "time_ms": crate::store::now_ms(),
        "source": from.describe(),
        "records": rows.len(),
        "first_seq": first.seq,
        "head_seq": source.head_seq,
        "head_hash": source.head_hash,
    })))
}
