//! The verifiable-log side of `zeroclaw audit`: `keygen` (an Ed25519 checkpoint key pair),
//! the tree check of `verify`, `checkpoint export` (the newest signed checkpoint),
//! `prove SEQ` (a record with its inclusion proof and checkpoint) and `check-proof FILE --key
//! PUB`, which an outsider runs with nothing but the public key.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::audit::chain::{Broken, Row};
use crate::audit::checkpoint::{self, Checkpoint, Stored, Verifier};
use crate::audit::merkle;
use crate::audit::tlog::{self, TreeVerified};
use crate::config::Config;

/// The key that checks the log's checkpoints: `--key PUB`, else the public half of
/// `[audit] signing_key_file`; `None` when neither is there.
pub fn verifier(config: &Config, key: Option<&Path>) -> anyhow::Result<Option<Verifier>> {
    if let Some(path) = key {
        return Ok(Some(Verifier::load(path).map_err(anyhow::Error::msg)?));
    }
    Ok(crate::audit::load_signer(config)?.map(|s| s.verifier()))
}

/// The tree part of `audit verify` over a verified chain: every checkpoint checked.
pub fn verify_tree(
    rows: &[Row],
    checkpoints: &[Stored],
    verifier: Option<&Verifier>,
) -> Result<TreeVerified, Broken> {
    let Some(verifier) = verifier else {
        if checkpoints.is_empty() {
            return Ok(TreeVerified {
                checkpoints: 0,
                latest: None,
                unsigned: rows.len() as u64,
            });
        }
        return Err(Broken {
            seq: checkpoints[0].tree_size,
            reason: format!(
                "the log has {} signed checkpoints and no key to check them: set [audit] \
                 signing_key_file or pass --key PUB",
                checkpoints.len()
            ),
        });
    };
    let leaves: Vec<(i64, merkle::Hash)> =
        rows.iter().map(|r| (r.seq, tlog::leaf(&r.body))).collect();
    tlog::verify(&leaves, checkpoints, verifier)
}

/// `audit keygen`: writes the pair and says where.
pub fn keygen(out: &Path, name: &str) -> anyhow::Result<()> {
    let public = checkpoint::keygen(out, name).map_err(anyhow::Error::msg)?;
    super::terminal::stdout().line(format_args!(
        "wrote the signing key {} (mode 600; set [audit] signing_key_file to it) and the \
         public key {} (give it to whoever checks the log)",
        out.display(),
        public.display()
    ))
}

/// The default key name: the host's name under `zeroclaw-audit/`.
pub fn default_key_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_default();
    format!(
        "zeroclaw-audit/{}",
        if host.is_empty() { "localhost" } else { &host }
    )
}

/// The default path of `keygen`'s private key.
pub fn default_key_path(config: &Config) -> PathBuf {
    config.config_dir.join("audit-signing.key")
}

/// The text of a stored note's checkpoint, unverified (the operator's own log).
fn unverified(stored: &Stored) -> Option<Checkpoint> {
    let split = stored.note.rfind("\n\n")?;
    Checkpoint::parse_body(&stored.note[..split + 1]).ok()
}

/// `audit prove SEQ`: the record, its inclusion proof in the newest checkpoint that covers
/// it, and that checkpoint's signed note, as one JSON object.
pub fn prove(rows: &[Row], checkpoints: &[Stored], seq: i64) -> Result<Value, String> {
    if rows.first().is_some_and(|r| r.seq != 1) {
        return Err("the log was pruned: an inclusion proof needs the records from seq 1".into());
    }
    let row = rows
        .iter()
        .find(|r| r.seq == seq)
        .ok_or_else(|| format!("no audit record with seq {seq}"))?;
    let leaves: Vec<merkle::Hash> = rows.iter().map(|r| tlog::leaf(&r.body)).collect();
    let (stored, checkpoint) = checkpoints
        .iter()
        .rev()
        .filter_map(|s| unverified(s).map(|c| (s, c)))
        .find(|(_, c)| c.size >= seq as u64 && c.size as usize <= leaves.len())
        .ok_or_else(|| {
            format!("no checkpoint covers seq {seq} yet (the next one is signed at the interval, a session's end or the writer's exit)")
        })?;
    let tree = merkle::Tree::new(leaves);
    if tree.root(checkpoint.size as usize) != checkpoint.root {
        return Err(format!(
            "the records do not match the checkpoint of size {} (run `zeroclaw audit verify`)",
            checkpoint.size
        ));
    }
    let index = (seq - 1) as usize;
    let proof = tree
        .inclusion_proof(index, checkpoint.size as usize)
        .expect("seq is in the tree");
    Ok(json!({
        "body": row.body,
        "leaf_index": index,
        "tree_size": checkpoint.size,
        "inclusion_proof": proof.iter().map(hex::encode).collect::<Vec<_>>(),
        "checkpoint": stored.note,
    }))
}

/// `audit check-proof`: checks a [`prove`] object with only the public key; returns the line
/// to print.
pub fn check_proof(proof: &Value, verifier: &Verifier) -> Result<String, String> {
    let text = |k: &str| {
        proof[k]
            .as_str()
            .ok_or_else(|| format!("the proof has no `{k}`"))
    };
    let number = |k: &str| {
        proof[k]
            .as_u64()
            .ok_or_else(|| format!("the proof has no `{k}`"))
    };
    let checkpoint = Checkpoint::open(text("checkpoint")?, verifier)?;
    let (body, index, size) = (text("body")?, number("leaf_index")?, number("tree_size")?);
    if size != checkpoint.size {
        return Err(format!(
            "the proof is for a tree of {size} records and its checkpoint signs {}",
            checkpoint.size
        ));
    }
    let record: Value =
        serde_json::from_str(body).map_err(|e| format!("the record is not JSON: {e}"))?;
    if record["seq"].as_u64() != Some(index + 1) {
        return Err(format!(
            "the record names seq {} and the proof is for leaf {index} (seq {})",
            record["seq"],
            index + 1
        ));
    }
    let path = proof["inclusion_proof"]
        .as_array()
        .ok_or("the proof has no `inclusion_proof`")?
        .iter()
        .map(|h| merkle::parse_hash(h.as_str().unwrap_or("")))
        .collect::<Result<Vec<_>, _>>()?;
    if !merkle::verify_inclusion(&tlog::leaf(body), index, size, &path, &checkpoint.root) {
        return Err(format!(
            "the record of seq {} is not in the tree the checkpoint of size {size} signs",
            index + 1
        ));
    }
    Ok(format!(
        "ok: record seq {} ({}) is in {} at size {size}, signed by {}",
        index + 1,
        record["kind"].as_str().unwrap_or("?"),
        checkpoint.origin,
        verifier.encode()
    ))
}

/// `audit checkpoint export`: the newest stored checkpoint's signed note.
pub fn latest_note(checkpoints: &[Stored]) -> Option<&str> {
    checkpoints
        .iter()
        .filter_map(|s| unverified(s).map(|c| (c.size, s)))
        .max_by_key(|(size, _)| *size)
        .map(|(_, s)| s.note.as_str())
}
