//! The verifiable log: the audit records as the leaves of a Merkle tree ([`super::merkle`]),
//! in seq order from seq 1 and independent of how the hash chain links them. Leaf `i` is the
//! stored canonical body of the record of seq `i + 1` (an outsider can recompute it from the
//! record alone, also in keyed mode, where the chain hash is an HMAC they cannot check).
//!
//! [`Checkpointer`] is the writer's side: it extends a [`Frontier`] with the records appended
//! since its last checkpoint (by any process on the log) and stores a signed checkpoint
//! ([`super::checkpoint`]) with it. [`verify`] is `audit verify`'s side: every checkpoint's
//! signature, its root against the records, and the consistency proof between consecutive
//! checkpoints.

use super::checkpoint::{Checkpoint, Signer, Stored, Verifier};
use super::db::Db;
use super::merkle::{self, Frontier, Hash};

/// The leaf hash of a record with this stored body.
pub fn leaf(body: &str) -> Hash {
    merkle::leaf_hash(body.as_bytes())
}

/// Signs checkpoints of the log for one writer.
pub struct Checkpointer {
    signer: Signer,
    /// The tree so far (loaded lazily from the newest checkpoint this key signed).
    tree: Option<Frontier>,
    /// The size of the last checkpoint stored (by this process or found at start).
    signed: u64,
}

impl Checkpointer {
    pub fn new(signer: Signer) -> Checkpointer {
        Checkpointer {
            signer,
            tree: None,
            signed: 0,
        }
    }

    /// Brings the tree to the log's head (or to `upto` records), reading only what is new.
    fn advance(&mut self, db: &mut Db, upto: Option<u64>) -> Result<&Frontier, String> {
        if self.tree.is_none() {
            let verifier = self.signer.verifier();
            // The newest checkpoint of this key whose subtree roots give its signed root.
            let start = db
                .checkpoints()?
                .into_iter()
                .rev()
                .find_map(|stored| {
                    let checkpoint = Checkpoint::open(&stored.note, &verifier).ok()?;
                    let tree = Frontier::from_hex(checkpoint.size, &stored.frontier).ok()?;
                    (tree.root() == checkpoint.root && upto.is_none_or(|u| checkpoint.size <= u))
                        .then_some(tree)
                })
                .unwrap_or_default();
            self.signed = start.size();
            self.tree = Some(start);
        }
        let tree = self.tree.as_mut().expect("loaded above");
        for (seq, body) in db.bodies_after(tree.size() as i64)? {
            if upto.is_some_and(|u| tree.size() >= u) {
                break;
            }
            if seq as u64 != tree.size() + 1 {
                return Err(format!(
                    "the tree has {} leaves and the next record is seq {seq} (pruned without a \
                     checkpoint); no checkpoint can be signed",
                    tree.size()
                ));
            }
            tree.push(leaf(&body));
        }
        Ok(tree)
    }

    /// Signs and stores a checkpoint of the log's head when it grew since the last one;
    /// returns its size.
    pub fn checkpoint(&mut self, db: &mut Db) -> Result<Option<u64>, String> {
        let tree = self.advance(db, None)?.clone();
        if tree.size() == self.signed && tree.size() > 0 {
            return Ok(None);
        }
        self.store(db, &tree)?;
        Ok(Some(tree.size()))
    }

    /// Signs and stores a checkpoint of exactly the first `size` records (before a prune).
    pub fn checkpoint_at(&mut self, db: &mut Db, size: u64) -> Result<(), String> {
        self.tree = None;
        let tree = self.advance(db, Some(size))?.clone();
        if tree.size() != size {
            return Err(format!("the log has only {} records", tree.size()));
        }
        self.store(db, &tree)?;
        self.tree = None;
        Ok(())
    }

    fn store(&mut self, db: &mut Db, tree: &Frontier) -> Result<(), String> {
        let checkpoint = Checkpoint {
            origin: self.signer.name().to_owned(),
            size: tree.size(),
            root: tree.root(),
        };
        db.insert_checkpoint(&Stored {
            tree_size: tree.size() as i64,
            time_ms: crate::store::now_ms(),
            note: checkpoint.sign(&self.signer),
            frontier: tree.to_hex(),
        })?;
        self.signed = tree.size();
        Ok(())
    }
}

/// What the tree check saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeVerified {
    /// How many checkpoints were checked.
    pub checkpoints: usize,
    /// The newest: its size and root.
    pub latest: Option<(u64, Hash)>,
    /// Records after the newest checkpoint (not signed yet).
    pub unsigned: u64,
}

/// Where and why the tree check fails (`seq` as in [`super::chain::Broken`]).
pub use super::chain::Broken;

/// Checks `checkpoints` against `rows` (a chain already verified): each is signed by
/// `verifier`, the log still holds every record it covers, the first one's root is the
/// records' root and each next one is consistent with the one before (RFC 6962 consistency
/// proof). A pruned log starts from the checkpoint at the pruned seq, whose subtree roots give
/// its signed root.
pub fn verify(
    leaves: &[(i64, Hash)],
    checkpoints: &[Stored],
    verifier: &Verifier,
) -> Result<TreeVerified, Broken> {
    let broken = |seq: i64, reason: String| Broken { seq, reason };
    let head = leaves.last().map_or(0, |(seq, _)| *seq);
    let first = leaves.first().map_or(1, |(seq, _)| *seq);
    let mut opened = Vec::with_capacity(checkpoints.len());
    for stored in checkpoints {
        let checkpoint = Checkpoint::open(&stored.note, verifier).map_err(|e| {
            broken(
                stored.tree_size,
                format!("the checkpoint of size {}: {e}", stored.tree_size),
            )
        })?;
        if checkpoint.size as i64 != stored.tree_size {
            return Err(broken(
                stored.tree_size,
                format!(
                    "the checkpoint stored as size {} signs size {}",
                    stored.tree_size, checkpoint.size
                ),
            ));
        }
        opened.push((checkpoint, stored));
    }
    let Some((newest, _)) = opened.last() else {
        return Ok(TreeVerified {
            checkpoints: 0,
            latest: None,
            unsigned: leaves.len() as u64,
        });
    };
    if newest.size as i64 > head {
        return Err(broken(
            head + 1,
            format!(
                "records after seq {head} are missing: the checkpoint of size {} covers them",
                newest.size
            ),
        ));
    }
    // The tree's start: the empty tree, or after a prune the checkpoint at the pruned seq.
    let base = first as u64 - 1;
    let mut tree = if base == 0 {
        Frontier::default()
    } else {
        let found = opened.iter().find_map(|(c, s)| {
            (c.size == base)
                .then(|| Frontier::from_hex(c.size, &s.frontier).ok())
                .flatten()
                .filter(|t| t.root() == c.root)
        });
        found.ok_or_else(|| {
            broken(
                base as i64,
                format!(
                    "records before seq {first} were pruned and no checkpoint of size {base} \
                     vouches for them"
                ),
            )
        })?
    };
    // Unpruned, the whole tree is kept so each consistency proof costs O(log² n).
    let all = (base == 0).then(|| merkle::Tree::new(leaves.iter().map(|(_, h)| *h).collect()));
    let mut checked = 0;
    let mut previous: Option<&Checkpoint> = None;
    let mut next_leaf = leaves.iter();
    for (checkpoint, _) in opened.iter().filter(|(c, _)| c.size >= base) {
        while tree.size() < checkpoint.size {
            let (_, h) = next_leaf.next().expect("the head is past every checkpoint");
            tree.push(*h);
        }
        let consistent = match (previous, &all) {
            (Some(old), Some(all)) => {
                let proof = all
                    .consistency_proof(old.size as usize, checkpoint.size as usize)
                    .unwrap_or_default();
                merkle::verify_consistency(
                    old.size,
                    checkpoint.size,
                    &old.root,
                    &checkpoint.root,
                    &proof,
                )
            }
            _ => tree.root() == checkpoint.root,
        };
        if !consistent {
            let since = previous.map_or(base, |p| p.size);
            return Err(broken(
                since as i64 + 1,
                match previous {
                    Some(old) => format!(
                        "the records do not match the checkpoint of size {}: the consistency \
                         proof from the checkpoint of size {} fails (history rewritten after \
                         seq {})",
                        checkpoint.size, old.size, old.size
                    ),
                    None => format!(
                        "the records up to seq {} do not match the checkpoint of size {} \
                         (history rewritten)",
                        checkpoint.size, checkpoint.size
                    ),
                },
            ));
        }
        previous = Some(checkpoint);
        checked += 1;
    }
    Ok(TreeVerified {
        checkpoints: checked,
        latest: previous.map(|c| (c.size, c.root)),
        unsigned: (head as u64).saturating_sub(previous.map_or(0, |c| c.size)),
    })
}
