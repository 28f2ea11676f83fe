//! The Merkle tree over the audit records (RFC 6962 / RFC 9162 hashing): leaf and node
//! hashes with their 0x00 / 0x01 prefixes, the root of any prefix of the leaves, the compact
//! range ([`Frontier`]) a writer keeps to extend the tree without its leaves, and inclusion
//! and consistency proofs with their verification.
//!
//! A leaf of the audit tree is a record's stored canonical body (`records.body`), so leaf `i`
//! (0-based) is the record of seq `i + 1`; see `docs/audit.md` ("Verifiable log").

use sha2::{Digest, Sha256};

/// A 32-byte SHA-256 hash.
pub type Hash = [u8; 32];

/// The root of the empty tree: SHA-256 of nothing.
pub fn empty_root() -> Hash {
    Sha256::digest([]).into()
}

/// `SHA-256(0x00 || data)`.
pub fn leaf_hash(data: &[u8]) -> Hash {
    Sha256::new()
        .chain_update([0u8])
        .chain_update(data)
        .finalize()
        .into()
}

/// `SHA-256(0x01 || left || right)`.
pub fn node_hash(left: &Hash, right: &Hash) -> Hash {
    Sha256::new()
        .chain_update([1u8])
        .chain_update(left)
        .chain_update(right)
        .finalize()
        .into()
}

/// The largest power of two smaller than `n` (n > 1).
fn split(n: usize) -> usize {
    let mut k = 1;
    while k * 2 < n {
        k *= 2;
    }
    k
}

/// The root of the tree whose leaf hashes are `leaves` (RFC 6962 MTH).
pub fn root(leaves: &[Hash]) -> Hash {
    match leaves.len() {
        0 => empty_root(),
        1 => leaves[0],
        n => {
            let k = split(n);
            node_hash(&root(&leaves[..k]), &root(&leaves[k..]))
        }
    }
}

/// The inclusion proof of leaf `index` in the tree of `leaves` (RFC 6962 PATH), leaf side first.
pub fn inclusion_proof(leaves: &[Hash], index: usize) -> Option<Vec<Hash>> {
    if index >= leaves.len() {
        return None;
    }
    let mut proof = Vec::new();
    path(leaves, index, &mut proof);
    Some(proof)
}

fn path(leaves: &[Hash], index: usize, out: &mut Vec<Hash>) {
    let n = leaves.len();
    if n <= 1 {
        return;
    }
    let k = split(n);
    if index < k {
        path(&leaves[..k], index, out);
        out.push(root(&leaves[k..]));
    } else {
        path(&leaves[k..], index - k, out);
        out.push(root(&leaves[..k]));
    }
}

/// Whether `proof` shows `leaf` at `index` in the tree of `size` leaves with `root`
/// (RFC 9162, 2.1.3.2).
pub fn verify_inclusion(leaf: &Hash, index: u64, size: u64, proof: &[Hash], root: &Hash) -> bool {
    if index >= size {
        return false;
    }
    let (mut fn_, mut sn) = (index, size - 1);
    let mut r = *leaf;
    for p in proof {
        if sn == 0 {
            return false;
        }
        if fn_ & 1 == 1 || fn_ == sn {
            r = node_hash(p, &r);
            if fn_ & 1 == 0 {
                while fn_ & 1 == 0 && fn_ != 0 {
                    fn_ >>= 1;
                    sn >>= 1;
                }
            }
        } else {
            r = node_hash(&r, p);
        }
        fn_ >>= 1;
        sn >>= 1;
    }
    sn == 0 && r == *root
}

/// The consistency proof from the tree of the first `old` leaves to the tree of all `leaves`
/// (RFC 6962 PROOF).
pub fn consistency_proof(leaves: &[Hash], old: usize) -> Option<Vec<Hash>> {
    if old > leaves.len() {
        return None;
    }
    let mut proof = Vec::new();
    if old > 0 && old < leaves.len() {
        subproof(old, leaves, true, &mut proof);
    }
    Some(proof)
}

fn subproof(m: usize, leaves: &[Hash], complete: bool, out: &mut Vec<Hash>) {
    let n = leaves.len();
    if m == n {
        if !complete {
            out.push(root(leaves));
        }
        return;
    }
    let k = split(n);
    if m <= k {
        subproof(m, &leaves[..k], complete, out);
        out.push(root(&leaves[k..]));
    } else {
        subproof(m - k, &leaves[k..], false, out);
        out.push(root(&leaves[..k]));
    }
}

/// Whether `proof` shows the tree of `old` leaves with `old_root` is a prefix of the tree of
/// `new` leaves with `new_root` (RFC 9162, 2.1.4.2).
pub fn verify_consistency(
    old: u64,
    new: u64,
    old_root: &Hash,
    new_root: &Hash,
    proof: &[Hash],
) -> bool {
    if old > new {
        return false;
    }
    if old == new {
        return proof.is_empty() && old_root == new_root;
    }
    if old == 0 {
        return proof.is_empty();
    }
    if proof.is_empty() {
        return false;
    }
    let mut proof = proof.to_vec();
    if old.is_power_of_two() {
        proof.insert(0, *old_root);
    }
    let (mut fn_, mut sn) = (old - 1, new - 1);
    while fn_ & 1 == 1 {
        fn_ >>= 1;
        sn >>= 1;
    }
    let (mut fr, mut sr) = (proof[0], proof[0]);
    for c in &proof[1..] {
        if sn == 0 {
            return false;
        }
        if fn_ & 1 == 1 || fn_ == sn {
            fr = node_hash(c, &fr);
            sr = node_hash(c, &sr);
            if fn_ & 1 == 0 {
                while fn_ & 1 == 0 && fn_ != 0 {
                    fn_ >>= 1;
                    sn >>= 1;
                }
            }
        } else {
            sr = node_hash(&sr, c);
        }
        fn_ >>= 1;
        sn >>= 1;
    }
    sn == 0 && fr == *old_root && sr == *new_root
}

/// The compact range of the first `size` leaves: the roots of the perfect subtrees they
/// make, largest (leftmost) first. Enough to append leaves and compute the root, in
/// O(log size) memory.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Frontier {
    size: u64,
    /// `(height, hash)`, heights strictly decreasing.
    nodes: Vec<(u32, Hash)>,
}

impl Frontier {
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Appends one leaf hash.
    pub fn push(&mut self, leaf: Hash) {
        let mut node = (0u32, leaf);
        while let Some(&(height, left)) = self.nodes.last() {
            if height != node.0 {
                break;
            }
            self.nodes.pop();
            node = (height + 1, node_hash(&left, &node.1));
        }
        self.nodes.push(node);
        self.size += 1;
    }

    /// The root of the tree of the leaves pushed so far.
    pub fn root(&self) -> Hash {
        let mut nodes = self.nodes.iter().rev();
        let Some(&(_, last)) = nodes.next() else {
            return empty_root();
        };
        nodes.fold(last, |right, (_, left)| node_hash(left, &right))
    }

    /// The subtree roots in hex, largest first (as stored beside a checkpoint).
    pub fn to_hex(&self) -> Vec<String> {
        self.nodes.iter().map(|(_, h)| hex::encode(h)).collect()
    }

    /// The frontier of a tree of `size` leaves from its subtree roots ([`Frontier::to_hex`]).
    pub fn from_hex(size: u64, nodes: &[String]) -> Result<Frontier, String> {
        let heights: Vec<u32> = (0..64).rev().filter(|b| size >> b & 1 == 1).collect();
        if heights.len() != nodes.len() {
            return Err(format!(
                "{} subtree roots for a tree of {size} leaves (want {})",
                nodes.len(),
                heights.len()
            ));
        }
        let nodes = heights
            .into_iter()
            .zip(nodes)
            .map(|(height, h)| Ok((height, parse_hash(h)?)))
            .collect::<Result<_, String>>()?;
        Ok(Frontier { size, nodes })
    }
}

/// A tree over all its leaves with every aligned perfect subtree's root kept (about 2n
/// hashes): the root of any prefix and the proofs cost O(log² n) each instead of O(n), so
/// `audit verify` checks a consistency proof per checkpoint in time linear in the log.
pub struct Tree {
    /// `levels[h][i]` is the root of leaves `i·2^h .. (i+1)·2^h`.
    levels: Vec<Vec<Hash>>,
}

impl Tree {
    pub fn new(leaves: Vec<Hash>) -> Tree {
        let mut levels = vec![leaves];
        while levels.last().is_some_and(|l| l.len() > 1) {
            let below = levels.last().expect("checked");
            let next = below
                .chunks_exact(2)
                .map(|pair| node_hash(&pair[0], &pair[1]))
                .collect();
            levels.push(next);
        }
        Tree { levels }
    }

    pub fn size(&self) -> usize {
        self.levels[0].len()
    }

    /// The root of the leaves `start .. start + len` (as the RFC 6962 recursion splits them,
    /// every perfect part is aligned, so it is kept).
    fn range_root(&self, start: usize, len: usize) -> Hash {
        match len {
            0 => empty_root(),
            _ if len.is_power_of_two() && start.is_multiple_of(len) => {
                let h = len.trailing_zeros() as usize;
                self.levels[h][start >> h]
            }
            _ => {
                let k = split(len);
                node_hash(
                    &self.range_root(start, k),
                    &self.range_root(start + k, len - k),
                )
            }
        }
    }

    /// The root of the first `size` leaves.
    pub fn root(&self, size: usize) -> Hash {
        self.range_root(0, size.min(self.size()))
    }

    /// [`inclusion_proof`] of leaf `index` in the tree of the first `size` leaves.
    pub fn inclusion_proof(&self, index: usize, size: usize) -> Option<Vec<Hash>> {
        if index >= size || size > self.size() {
            return None;
        }
        let mut proof = Vec::new();
        let (mut start, mut len, mut index) = (0, size, index);
        let mut sides = Vec::new();
        while len > 1 {
            let k = split(len);
            if index < k {
                sides.push(self.range_root(start + k, len - k));
                len = k;
            } else {
                sides.push(self.range_root(start, k));
                start += k;
                index -= k;
                len -= k;
            }
        }
        proof.extend(sides.into_iter().rev());
        Some(proof)
    }

    /// [`consistency_proof`] from the first `old` leaves to the first `new`.
    pub fn consistency_proof(&self, old: usize, new: usize) -> Option<Vec<Hash>> {
        if old > new || new > self.size() {
            return None;
        }
        let mut proof = Vec::new();
        if old == 0 || old == new {
            return Some(proof);
        }
        let (mut start, mut len, mut m, mut complete) = (0, new, old, true);
        let mut sides = Vec::new();
        while m != len {
            let k = split(len);
            if m <= k {
                sides.push(self.range_root(start + k, len - k));
                len = k;
            } else {
                sides.push(self.range_root(start, k));
                start += k;
                m -= k;
                len -= k;
                complete = false;
            }
        }
        if !complete {
            proof.push(self.range_root(start, len));
        }
        proof.extend(sides.into_iter().rev());
        Some(proof)
    }
}

/// A 32-byte hash from hex.
pub fn parse_hash(text: &str) -> Result<Hash, String> {
    hex::decode(text)
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| format!("`{text}` is not a 32-byte hex hash"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The leaves and roots of the certificate-transparency reference tests.
    const LEAVES: [&str; 8] = [
        "",
        "00",
        "10",
        "2021",
        "3031",
        "40414243",
        "5051525354555657",
        "606162636465666768696a6b6c6d6e6f",
    ];
    const ROOTS: [&str; 9] = [
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
        "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
        "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
        "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
        "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
        "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
        "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
    ];

    fn leaves() -> Vec<Hash> {
        LEAVES
            .iter()
            .map(|l| leaf_hash(&hex::decode(l).unwrap()))
            .collect()
    }

    fn h(text: &str) -> Hash {
        parse_hash(text).unwrap()
    }

    #[test]
    fn roots_match_the_reference_tree_for_every_size() {
        let leaves = leaves();
        let mut frontier = Frontier::default();
        assert_eq!(hex::encode(frontier.root()), ROOTS[0]);
        for n in 0..=8 {
            assert_eq!(hex::encode(root(&leaves[..n])), ROOTS[n], "size {n}");
            if n > 0 {
                frontier.push(leaves[n - 1]);
                assert_eq!(hex::encode(frontier.root()), ROOTS[n], "frontier {n}");
                let again = Frontier::from_hex(n as u64, &frontier.to_hex()).unwrap();
                assert_eq!(again, frontier);
            }
        }
    }

    #[test]
    fn proofs_match_the_reference_vectors() {
        let leaves = leaves();
        let inclusion = [
            (
                0,
                vec![
                    "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
                    "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
                    "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
                ],
            ),
            (
                5,
                vec![
                    "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
                    "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
                    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
                ],
            ),
        ];
        for (index, want) in inclusion {
            let proof = inclusion_proof(&leaves, index).unwrap();
            assert_eq!(proof.iter().map(hex::encode).collect::<Vec<_>>(), want);
            assert!(verify_inclusion(
                &leaves[index],
                index as u64,
                8,
                &proof,
                &h(ROOTS[8])
            ));
        }
        let consistency = [
            (
                2,
                vec![
                    "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
                    "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
                ],
            ),
            (
                6,
                vec![
                    "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
                    "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
                    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
                ],
            ),
        ];
        for (old, want) in consistency {
            let proof = consistency_proof(&leaves, old).unwrap();
            assert_eq!(proof.iter().map(hex::encode).collect::<Vec<_>>(), want);
            assert!(verify_consistency(
                old as u64,
                8,
                &h(ROOTS[old]),
                &h(ROOTS[8]),
                &proof
            ));
        }
    }

    #[test]
    fn the_kept_tree_gives_the_same_roots_and_proofs() {
        let leaves: Vec<Hash> = (0u32..70).map(|i| leaf_hash(&i.to_le_bytes())).collect();
        let tree = Tree::new(leaves.clone());
        for n in 0..=leaves.len() {
            assert_eq!(tree.root(n), root(&leaves[..n]), "root {n}");
            for i in 0..n {
                assert_eq!(
                    tree.inclusion_proof(i, n),
                    inclusion_proof(&leaves[..n], i),
                    "inclusion {i}/{n}"
                );
            }
            for m in 0..=n {
                assert_eq!(
                    tree.consistency_proof(m, n),
                    consistency_proof(&leaves[..n], m),
                    "consistency {m}->{n}"
                );
            }
        }
    }

    #[test]
    fn every_proof_of_many_sizes_verifies_and_a_changed_one_does_not() {
        let leaves: Vec<Hash> = (0u32..40).map(|i| leaf_hash(&i.to_be_bytes())).collect();
        for n in 1..=leaves.len() {
            let tree = &leaves[..n];
            let r = root(tree);
            for i in 0..n {
                let proof = inclusion_proof(tree, i).unwrap();
                assert!(verify_inclusion(&tree[i], i as u64, n as u64, &proof, &r));
                assert!(
                    !verify_inclusion(&tree[(i + 1) % n], i as u64, n as u64, &proof, &r) || n == 1
                );
            }
            for m in 0..=n {
                let proof = consistency_proof(tree, m).unwrap();
                let old = root(&tree[..m]);
                assert!(
                    verify_consistency(m as u64, n as u64, &old, &r, &proof),
                    "{m}->{n}"
                );
                if m > 0 && m < n {
                    let mut rewritten = tree.to_vec();
                    rewritten[m - 1] = leaf_hash(b"rewritten");
                    let forged = consistency_proof(&rewritten, m).unwrap();
                    assert!(
                        !verify_consistency(m as u64, n as u64, &old, &root(&rewritten), &forged),
                        "rewrite {m}->{n}"
                    );
                }
            }
        }
    }
}
