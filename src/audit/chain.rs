//! The hash chain: the canonical encoding of a record body, its link hash (SHA-256, or
//! HMAC-SHA-256 in keyed mode) and the walk that finds the first broken `seq`.
//!
//! Canonical encoding: the body is JSON with every object's keys sorted by their UTF-8 bytes,
//! no whitespace, strings escaped as `serde_json` escapes them, integers in decimal. The link
//! hash of a record is `H(prev_hash || "\n" || canonical(body))` in lowercase hex, where
//! `prev_hash` is the previous record's hash in hex (64 zeros for the first record) and `H` is
//! SHA-256, or HMAC-SHA-256 with the key when the body's `alg` is `hmac-sha256`.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// The `prev_hash` of the first record.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";
/// `alg` of an unkeyed record.
pub const ALG_SHA256: &str = "sha256";
/// `alg` of a keyed record.
pub const ALG_HMAC: &str = "hmac-sha256";
/// `kind` of the record that opens an imported segment (`zeroclaw store copy` into a log that
/// already has records): it names the imported chain's `records`, `first_seq`, `head_seq`
/// and `head_hash`, and that many records of the other log follow it unchanged.
pub const IMPORT_KIND: &str = "audit.import";

/// `value` in the canonical encoding.
pub fn canonical(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// SHA-256 of `value`'s canonical encoding, in hex (the argument digest of a tool call).
pub fn digest(value: &Value) -> String {
    hex::encode(Sha256::digest(canonical(value).as_bytes()))
}

/// The link hash of a record with this body after `prev_hash`; `key` selects HMAC.
pub fn link_hash(prev_hash: &str, body: &Value, key: Option<&[u8]>) -> String {
    let mut message = Vec::with_capacity(prev_hash.len() + 256);
    message.extend_from_slice(prev_hash.as_bytes());
    message.push(b'\n');
    message.extend_from_slice(canonical(body).as_bytes());
    match key {
        Some(key) => hex::encode(hmac_sha256(key, &message)),
        None => hex::encode(Sha256::digest(&message)),
    }
}

/// HMAC-SHA-256 (RFC 2104) over `message`.
pub fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    const BLOCK: usize = 64;
    let mut block_key = [0u8; BLOCK];
    if key.len() > BLOCK {
        block_key[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block_key[..key.len()].copy_from_slice(key);
    }
    let inner_pad: Vec<u8> = block_key.iter().map(|b| b ^ 0x36).collect();
    let outer_pad: Vec<u8> = block_key.iter().map(|b| b ^ 0x5c).collect();
    let inner = Sha256::new()
        .chain_update(&inner_pad)
        .chain_update(message)
        .finalize();
    Sha256::new()
        .chain_update(&outer_pad)
        .chain_update(inner)
        .finalize()
        .into()
}

/// One stored row as the verifier reads it.
#[derive(Debug, Clone)]
pub struct Row {
    pub seq: i64,
    pub body: String,
    pub prev_hash: String,
    pub hash: String,
}

impl Row {
    /// The `time_ms` of the row's body (0 when it has none).
    pub fn time_ms(&self) -> i64 {
        serde_json::from_str::<Value>(&self.body)
            .ok()
            .and_then(|b| b["time_ms"].as_i64())
            .unwrap_or(0)
    }
}

/// Where and why the chain breaks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Broken {
    pub seq: i64,
    pub reason: String,
}

/// What a successful walk saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub records: u64,
    pub first_seq: Option<i64>,
    pub head_seq: Option<i64>,
    pub head_hash: String,
}

/// Walks `rows` (in `seq` order) and checks every link; `key` is required for keyed records
/// and, when given, required of every record (an unkeyed record in a keyed log is forged).
/// An `audit.import` record opens a segment: the records after it are another log's, walked
/// as their own chain ([`verify_segment`]); the record after the segment links to its head.
pub fn verify(rows: &[Row], key: Option<&[u8]>) -> Result<Verified, Broken> {
    let broken = |seq: i64, reason: String| Broken { seq, reason };
    let mut bodies = Vec::with_capacity(rows.len());
    for row in rows {
        let body: Value = serde_json::from_str(&row.body)
            .map_err(|e| broken(row.seq, format!("the body is not JSON: {e}")))?;
        bodies.push(body);
    }
    let Some(first) = rows.first() else {
        return Ok(Verified {
            records: 0,
            first_seq: None,
            head_seq: None,
            head_hash: GENESIS.to_owned(),
        });
    };
    // A log that does not start at seq 1 was pruned: a checkpoint (itself in the chain) must
    // name the last pruned seq and its hash.
    if first.seq != 1 {
        let covered = bodies.iter().any(|b| {
            b["kind"] == "checkpoint"
                && b["pruned_through_seq"].as_i64() == Some(first.seq - 1)
                && b["pruned_head_hash"].as_str() == Some(first.prev_hash.as_str())
        });
        if !covered {
            return Err(broken(
                first.seq - 1,
                format!(
                    "records before seq {} are missing and no checkpoint covers them",
                    first.seq
                ),
            ));
        }
    } else if first.prev_hash != GENESIS {
        return Err(broken(
            1,
            "the first record does not start the chain".into(),
        ));
    }
    let mut expected_seq = first.seq;
    let mut prev_hash = first.prev_hash.clone();
    let mut at = 0;
    while let (Some(row), Some(body)) = (rows.get(at), bodies.get(at)) {
        at += 1;
        if row.seq != expected_seq {
            return Err(broken(
                expected_seq,
                format!("record {expected_seq} is missing (next is {})", row.seq),
            ));
        }
        if body["seq"].as_i64() != Some(row.seq) {
            return Err(broken(
                row.seq,
                format!("the body names seq {} (moved or swapped)", body["seq"]),
            ));
        }
        if row.prev_hash != prev_hash {
            return Err(broken(
                row.seq,
                "prev_hash does not match the previous record's hash".into(),
            ));
        }
        let record_key = match (body["alg"].as_str(), key) {
            (Some(ALG_HMAC), Some(key)) => Some(key),
            (Some(ALG_HMAC), None) => {
                return Err(broken(
                    row.seq,
                    "the record is keyed (hmac-sha256) and no key is configured ([audit] key_file)"
                        .into(),
                ));
            }
            (Some(ALG_SHA256), None) => None,
            (Some(ALG_SHA256), Some(_)) => {
                return Err(broken(
                    row.seq,
                    "an unkeyed record in a keyed log (forged or written without the key)".into(),
                ));
            }
            (other, _) => {
                return Err(broken(row.seq, format!("unknown alg {other:?}")));
            }
        };
        if link_hash(&row.prev_hash, body, record_key) != row.hash {
            return Err(broken(
                row.seq,
                "the hash does not match the record (edited)".into(),
            ));
        }
        prev_hash = row.hash.clone();
        expected_seq += 1;
        if body["kind"] == IMPORT_KIND {
            let (records, head_hash) = verify_segment(row, body, &rows[at..], key)?;
            at += records;
            expected_seq += records as i64;
            prev_hash = head_hash;
        }
    }
    Ok(Verified {
        records: rows.len() as u64,
        first_seq: Some(first.seq),
        head_seq: Some(expected_seq - 1),
        head_hash: prev_hash,
    })
}

/// Checks the segment the import record `import` (already verified as a link of its own
/// chain) opens: the `records` rows after it, at the next seqs, are the imported log's from
/// its `first_seq` on, a chain of their own (walked by [`verify`], so a pruned or itself
/// importing source verifies too) that ends at the named `head_hash`. Answers how many rows
/// the segment holds and its head; a break is named by the row's seq in this log.
fn verify_segment(
    import: &Row,
    body: &Value,
    following: &[Row],
    key: Option<&[u8]>,
) -> Result<(usize, String), Broken> {
    let field = |name: &str| {
        body.get(name).cloned().ok_or_else(|| Broken {
            seq: import.seq,
            reason: format!("the import record has no `{name}`"),
        })
    };
    let (records, first_seq, head_hash) =
        (field("records")?, field("first_seq")?, field("head_hash")?);
    let (Some(records), Some(first_seq), Some(head_hash)) =
        (records.as_u64(), first_seq.as_i64(), head_hash.as_str())
    else {
        return Err(Broken {
            seq: import.seq,
            reason: "the import record's `records`, `first_seq` or `head_hash` is malformed".into(),
        });
    };
    let records = records as usize;
    let segment = &following[..records.min(following.len())];
    // Every imported row at its place: a removed one shows as the seq that is missing.
    for (n, row) in segment.iter().enumerate() {
        let expected = import.seq + 1 + n as i64;
        if row.seq != expected {
            return Err(Broken {
                seq: expected,
                reason: format!(
                    "imported record {expected} is missing (the import at seq {} names {records})",
                    import.seq
                ),
            });
        }
    }
    if segment.len() < records {
        let missing = import.seq + 1 + segment.len() as i64;
        return Err(Broken {
            seq: missing,
            reason: format!(
                "imported record {missing} is missing (the import at seq {} names {records})",
                import.seq
            ),
        });
    }
    let offset = import.seq + 1 - first_seq;
    let theirs: Vec<Row> = segment
        .iter()
        .map(|row| Row {
            seq: row.seq - offset,
            ..row.clone()
        })
        .collect();
    let keyed = theirs
        .first()
        .and_then(|r| serde_json::from_str::<Value>(&r.body).ok())
        .is_some_and(|b| b["alg"] == ALG_HMAC);
    let verified = verify(&theirs, if keyed { key } else { None }).map_err(|b| Broken {
        seq: b.seq + offset,
        reason: format!(
            "imported record (seq {} of the log imported at seq {}): {}",
            b.seq, import.seq, b.reason
        ),
    })?;
    if verified.head_hash != head_hash {
        return Err(Broken {
            seq: import.seq + records as i64,
            reason: format!(
                "the imported records do not end at the head the import at seq {} names",
                import.seq
            ),
        });
    }
    Ok((records, verified.head_hash))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A number serde_json reads as a float re-reads as the same float from its canonical
    /// encoding (a record read back from the log hashes as it did when written; found by the
    /// `audit_canonical` fuzz target: without correctly rounded parsing it re-read 1 ULP off).
    #[test]
    fn canonical_encoding_of_a_float_reads_back_as_the_same_float() {
        for text in [
            "173353000008888888888888888888888888888800",
            "1.733530000088889e41",
        ] {
            let value: Value = serde_json::from_str(text).unwrap();
            let again: Value = serde_json::from_str(&canonical(&value)).unwrap();
            assert_eq!(again, value, "{text}");
        }
    }
    use serde_json::json;

    #[test]
    fn hmac_matches_rfc_4231_case_2() {
        let mac = hmac_sha256(b"Jefe", b"what do ya want for nothing?");
        assert_eq!(
            hex::encode(mac),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    /// A log of `n` records from seq `from` after `prev` (unkeyed).
    fn log(from: i64, n: i64, mut prev: String, kind: &str) -> Vec<Row> {
        (from..from + n)
            .map(|seq| {
                let body = json!({"kind": kind, "seq": seq, "alg": ALG_SHA256, "time_ms": seq});
                let hash = link_hash(&prev, &body, None);
                let row = Row {
                    seq,
                    body: canonical(&body),
                    prev_hash: prev.clone(),
                    hash: hash.clone(),
                };
                prev = hash;
                row
            })
            .collect()
    }

    /// `target` with `source` imported after it, then `after` more records.
    fn imported(target: Vec<Row>, source: &[Row], after: i64) -> Vec<Row> {
        let head = target.last().unwrap();
        let body = json!({
            "kind": IMPORT_KIND, "seq": head.seq + 1, "alg": ALG_SHA256, "time_ms": 0,
            "records": source.len(), "first_seq": source[0].seq,
            "head_seq": source.last().unwrap().seq, "head_hash": source.last().unwrap().hash,
        });
        let import = Row {
            seq: head.seq + 1,
            body: canonical(&body),
            prev_hash: head.hash.clone(),
            hash: link_hash(&head.hash, &body, None),
        };
        let mut rows = target;
        rows.push(import.clone());
        for (n, row) in source.iter().enumerate() {
            rows.push(Row {
                seq: import.seq + 1 + n as i64,
                ..row.clone()
            });
        }
        let last = rows.last().unwrap().clone();
        rows.extend(log(last.seq + 1, after, last.hash, "after"));
        rows
    }

    #[test]
    fn an_imported_segment_verifies_and_a_change_in_it_is_named() {
        let source = log(1, 4, GENESIS.to_owned(), "theirs");
        let rows = imported(log(1, 3, GENESIS.to_owned(), "ours"), &source, 2);
        let verified = verify(&rows, None).unwrap();
        assert_eq!(verified.records, 10);
        assert_eq!(verified.head_seq, Some(10));

        let mut edited = rows.clone();
        edited[5].body = edited[5].body.replace("theirs", "forged");
        let broken = verify(&edited, None).unwrap_err();
        assert_eq!(broken.seq, 6, "{broken:?}");
        assert!(
            broken.reason.contains("imported record (seq 2"),
            "{broken:?}"
        );

        let mut removed = rows.clone();
        removed.remove(6);
        assert_eq!(verify(&removed, None).unwrap_err().seq, 7);

        let mut cut = rows[..7].to_vec();
        assert_eq!(
            verify(&cut, None).unwrap_err().seq,
            8,
            "records after the cut"
        );
        cut = rows.clone();
        cut.remove(8);
        for (n, row) in cut.iter_mut().enumerate().skip(8) {
            row.seq = n as i64 + 1;
        }
        assert!(
            verify(&cut, None).is_err(),
            "a record moved into the segment"
        );
    }

    #[test]
    fn a_source_that_itself_imported_verifies_inside_a_segment() {
        let inner = log(1, 2, GENESIS.to_owned(), "inner");
        let source = imported(log(1, 2, GENESIS.to_owned(), "middle"), &inner, 1);
        let rows = imported(log(1, 1, GENESIS.to_owned(), "outer"), &source, 1);
        assert_eq!(verify(&rows, None).unwrap().records, 9);
        let mut edited = rows.clone();
        edited[6].body = edited[6].body.replace("inner", "forged");
        assert_eq!(verify(&edited, None).unwrap_err().seq, 7);
    }

    #[test]
    fn canonical_sorts_keys_at_every_level() {
        let v = json!({"b": 1, "a": {"d": [true, null], "c": "x\"y"}});
        assert_eq!(canonical(&v), r#"{"a":{"c":"x\"y","d":[true,null]},"b":1}"#);
    }
}
