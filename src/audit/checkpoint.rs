//! Signed checkpoints of the audit log's Merkle tree ([`super::merkle`]): the C2SP
//! `tlog-checkpoint` body (origin, tree size, base64 root hash) in a C2SP `signed-note` with
//! an Ed25519 signature, and the keys that make and check them, in the note formats
//! (`PRIVATE+KEY+<name>+<hash>+<base64>` for the signer, `<name>+<hash>+<base64>` for the
//! verifier, hash = the first 4 bytes of SHA-256(name || "\n" || 0x01 || public key)).
//! The origin of a checkpoint is its key's name. `zeroclaw audit keygen` writes a pair.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use ed25519_dalek::{Signer as _, SigningKey, Verifier as _, VerifyingKey};
use sha2::{Digest, Sha256};

use super::merkle::Hash;

/// The signed-note algorithm byte of Ed25519.
const ALG_ED25519: u8 = 1;

/// The key id of `name`'s Ed25519 `public` key.
fn key_hash(name: &str, public: &[u8; 32]) -> u32 {
    let digest = Sha256::new()
        .chain_update(name.as_bytes())
        .chain_update(b"\n")
        .chain_update([ALG_ED25519])
        .chain_update(public)
        .finalize();
    u32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]])
}

fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty()
        || name.contains(['+', ' ', '\t', '\n'])
        || name.chars().any(char::is_control)
    {
        return Err(format!(
            "`{name}` is not a key name: non-empty, without spaces or `+`"
        ));
    }
    Ok(())
}

/// The private key that signs checkpoints.
pub struct Signer {
    name: String,
    key: SigningKey,
}

/// A public key that checks them.
#[derive(Clone)]
pub struct Verifier {
    name: String,
    hash: u32,
    key: VerifyingKey,
}

impl Signer {
    /// A new key named `name`, from the OS's random bytes.
    pub fn generate(name: &str) -> Result<Signer, String> {
        check_name(name)?;
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).map_err(|e| format!("no random bytes: {e}"))?;
        Ok(Signer {
            name: name.to_owned(),
            key: SigningKey::from_bytes(&seed),
        })
    }

    /// The key in the note signer format.
    pub fn encode(&self) -> String {
        let public = self.key.verifying_key().to_bytes();
        let mut bytes = vec![ALG_ED25519];
        bytes.extend_from_slice(&self.key.to_bytes());
        format!(
            "PRIVATE+KEY+{}+{:08x}+{}",
            self.name,
            key_hash(&self.name, &public),
            B64.encode(bytes)
        )
    }

    pub fn parse(text: &str) -> Result<Signer, String> {
        let bad = |why: &str| format!("not a signing key ({why})");
        let rest = text
            .trim()
            .strip_prefix("PRIVATE+KEY+")
            .ok_or_else(|| bad("no PRIVATE+KEY+ prefix"))?;
        let (name, hash, key) = split_key(rest).ok_or_else(|| bad("want NAME+HASH+KEY"))?;
        let bytes = B64.decode(key).map_err(|_| bad("the key is not base64"))?;
        let seed: [u8; 32] = match bytes.split_first() {
            Some((&ALG_ED25519, seed)) => seed.try_into().map_err(|_| bad("wrong length"))?,
            _ => return Err(bad("not an Ed25519 key")),
        };
        let signer = Signer {
            name: name.to_owned(),
            key: SigningKey::from_bytes(&seed),
        };
        if signer.verifier().hash != hash {
            return Err(bad("its hash does not match its name and key"));
        }
        Ok(signer)
    }

    /// The key file of `[audit] signing_key_file`: only its owner may read it.
    pub fn load(path: &Path) -> Result<Signer, String> {
        let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
        if meta.permissions().mode() & 0o077 != 0 {
            return Err(format!(
                "mode {:o} lets others read it; chmod 600 it",
                meta.permissions().mode() & 0o777
            ));
        }
        let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
        Signer::parse(&text)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn verifier(&self) -> Verifier {
        let key = self.key.verifying_key();
        Verifier {
            hash: key_hash(&self.name, &key.to_bytes()),
            name: self.name.clone(),
            key,
        }
    }

    /// `text` as a signed note with this key's signature line.
    pub fn sign_note(&self, text: &str) -> String {
        let signature = self.key.sign(text.as_bytes());
        let mut bytes = self.verifier().hash.to_be_bytes().to_vec();
        bytes.extend_from_slice(&signature.to_bytes());
        format!("{text}\n\u{2014} {} {}\n", self.name, B64.encode(bytes))
    }

    /// Signs `ed25519` over raw `message` (the DSSE pre-authentication encoding).
    pub fn sign_raw(&self, message: &[u8]) -> [u8; 64] {
        self.key.sign(message).to_bytes()
    }
}

fn split_key(text: &str) -> Option<(&str, u32, &str)> {
    let mut parts = text.splitn(3, '+');
    let name = parts.next()?;
    let hash = parts.next()?;
    let key = parts.next()?;
    if hash.len() != 8 {
        return None;
    }
    Some((name, u32::from_str_radix(hash, 16).ok()?, key))
}

impl Verifier {
    /// The key in the note verifier format.
    pub fn encode(&self) -> String {
        let mut bytes = vec![ALG_ED25519];
        bytes.extend_from_slice(&self.key.to_bytes());
        format!("{}+{:08x}+{}", self.name, self.hash, B64.encode(bytes))
    }

    pub fn parse(text: &str) -> Result<Verifier, String> {
        let bad = |why: &str| format!("not a verifier key ({why})");
        let (name, hash, key) = split_key(text.trim()).ok_or_else(|| bad("want NAME+HASH+KEY"))?;
        check_name(name)?;
        let bytes = B64.decode(key).map_err(|_| bad("the key is not base64"))?;
        let public: [u8; 32] = match bytes.split_first() {
            Some((&ALG_ED25519, key)) => key.try_into().map_err(|_| bad("wrong length"))?,
            _ => return Err(bad("not an Ed25519 key")),
        };
        if key_hash(name, &public) != hash {
            return Err(bad("its hash does not match its name and key"));
        }
        let key = VerifyingKey::from_bytes(&public).map_err(|e| bad(&e.to_string()))?;
        Ok(Verifier {
            name: name.to_owned(),
            hash,
            key,
        })
    }

    /// A verifier key file (`<signing key>.pub`).
    pub fn load(path: &Path) -> Result<Verifier, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Verifier::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The text of `note` when it carries a valid signature of this key.
    pub fn open_note<'a>(&self, note: &'a str) -> Result<&'a str, String> {
        let split = note
            .rfind("\n\n")
            .ok_or("not a signed note (no blank line before the signatures)")?;
        let (text, signatures) = (&note[..split + 1], &note[split + 2..]);
        let mut others = Vec::new();
        for line in signatures.lines() {
            let Some((name, sig)) = line
                .strip_prefix("\u{2014} ")
                .and_then(|l| l.rsplit_once(' '))
            else {
                return Err(format!("`{line}` is not a signature line"));
            };
            let bytes = B64.decode(sig).unwrap_or_default();
            if bytes.len() < 4 {
                return Err(format!("`{line}` is not a signature line"));
            }
            let hash = u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
            if name != self.name || hash != self.hash {
                others.push(format!("{name}+{hash:08x}"));
                continue;
            }
            let signature = ed25519_dalek::Signature::from_slice(&bytes[4..])
                .map_err(|_| "a signature of the wrong length".to_owned())?;
            return self
                .key
                .verify(text.as_bytes(), &signature)
                .map(|()| text)
                .map_err(|_| format!("the signature of {} does not verify", self.name));
        }
        Err(format!(
            "not signed by the key {}+{:08x} (signed by: {})",
            self.name,
            self.hash,
            if others.is_empty() {
                "nobody".to_owned()
            } else {
                others.join(", ")
            }
        ))
    }

    /// Verifies a raw Ed25519 signature (DSSE).
    pub fn verify_raw(&self, message: &[u8], signature: &[u8]) -> bool {
        ed25519_dalek::Signature::from_slice(signature)
            .is_ok_and(|s| self.key.verify(message, &s).is_ok())
    }
}

/// A checkpoint: the tree of `size` leaves of the log named `origin` has `root`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    pub origin: String,
    pub size: u64,
    pub root: Hash,
}

impl Checkpoint {
    /// The checkpoint body: three lines, each ending in a newline.
    pub fn body(&self) -> String {
        format!(
            "{}\n{}\n{}\n",
            self.origin,
            self.size,
            B64.encode(self.root)
        )
    }

    /// The checkpoint as a note signed by `signer` (whose name is the origin).
    pub fn sign(&self, signer: &Signer) -> String {
        signer.sign_note(&self.body())
    }

    /// Parses a checkpoint body.
    pub fn parse_body(text: &str) -> Result<Checkpoint, String> {
        let mut lines = text.lines();
        let (Some(origin), Some(size), Some(root)) = (lines.next(), lines.next(), lines.next())
        else {
            return Err("a checkpoint has an origin, a size and a root hash".into());
        };
        let size = size
            .parse()
            .map_err(|_| format!("`{size}` is not a tree size"))?;
        let root = B64
            .decode(root)
            .ok()
            .and_then(|r| r.try_into().ok())
            .ok_or_else(|| format!("`{root}` is not a base64 SHA-256 root"))?;
        Ok(Checkpoint {
            origin: origin.to_owned(),
            size,
            root,
        })
    }

    /// The checkpoint of `note` when `verifier` signed it (and it names the key's origin).
    pub fn open(note: &str, verifier: &Verifier) -> Result<Checkpoint, String> {
        let checkpoint = Checkpoint::parse_body(verifier.open_note(note)?)?;
        if checkpoint.origin != verifier.name {
            return Err(format!(
                "the checkpoint's origin `{}` is not the key's name `{}`",
                checkpoint.origin, verifier.name
            ));
        }
        Ok(checkpoint)
    }
}

/// A signed checkpoint as the log keeps it, with the subtree roots (the
/// [`super::merkle::Frontier`]) a writer extends the tree from; they are checked against the
/// signed root before use, so they need no signature of their own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    pub tree_size: i64,
    pub time_ms: i64,
    pub note: String,
    pub frontier: Vec<String>,
}

/// Writes a new key pair named `name`: the signer to `path` (mode 0600) and the verifier to
/// `path.pub`; an existing file is never replaced. Returns the verifier's path.
pub fn keygen(path: &Path, name: &str) -> Result<PathBuf, String> {
    let signer = Signer::generate(name)?;
    let public = PathBuf::from(format!("{}.pub", path.display()));
    for p in [path, public.as_path()] {
        if p.exists() {
            return Err(format!("{} exists; not replacing a key", p.display()));
        }
    }
    let write = |p: &Path, mode: u32, text: String| -> Result<(), String> {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(p)
            .map_err(|e| format!("{}: {e}", p.display()))?;
        file.write_all(format!("{text}\n").as_bytes())
            .and_then(|()| file.sync_all())
            .map_err(|e| format!("{}: {e}", p.display()))
    };
    write(path, 0o600, signer.encode())?;
    write(&public, 0o644, signer.verifier().encode())?;
    Ok(public)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signed_checkpoint_opens_with_its_key_and_not_with_another() {
        let signer = Signer::generate("example.com/audit").unwrap();
        let again = Signer::parse(&signer.encode()).unwrap();
        let verifier = Verifier::parse(&again.verifier().encode()).unwrap();
        let checkpoint = Checkpoint {
            origin: "example.com/audit".into(),
            size: 7,
            root: [3; 32],
        };
        let note = checkpoint.sign(&signer);
        assert!(note.starts_with("example.com/audit\n7\nAwMD"), "{note}");
        assert!(note.contains("\n\n\u{2014} example.com/audit "), "{note}");
        assert_eq!(Checkpoint::open(&note, &verifier).unwrap(), checkpoint);
        let other = Signer::generate("example.com/audit").unwrap().verifier();
        let err = Checkpoint::open(&note, &other).unwrap_err();
        assert!(err.contains("not signed by the key"), "{err}");
        let edited = note.replacen("\n7\n", "\n8\n", 1);
        assert!(Checkpoint::open(&edited, &verifier).is_err());
    }

    /// The Go `note` package's published example: our signer reproduces its note byte for
    /// byte (Ed25519 is deterministic) and our verifier opens it.
    #[test]
    fn the_go_note_example_signs_and_opens_byte_for_byte() {
        let signer = Signer::parse(
            "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz",
        )
        .unwrap();
        let verifier =
            Verifier::parse("PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW")
                .unwrap();
        assert_eq!(signer.verifier().encode(), verifier.encode());
        let text = "If you think cryptography is the answer to your problem,\n\
                    then you don't know what your problem is.\n";
        let note = format!(
            "{text}\n\u{2014} PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n"
        );
        assert_eq!(signer.sign_note(text), note);
        assert_eq!(verifier.open_note(&note).unwrap(), text);
    }
}
