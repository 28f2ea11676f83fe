//! Bearer tokens: `<config_dir>/tokens.json` (mode 0600, replaced atomically) holds only their
//! SHA-256 hashes; a presented token is hashed and compared with every entry in constant time.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

pub const TOKENS_FILE: &str = "tokens.json";
/// Every token starts with this, so a leaked one is recognisable in logs and scanners.
const TOKEN_PREFIX: &str = "zc_";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenEntry {
    pub name: String,
    /// Hex SHA-256 of the token.
    pub sha256: String,
    /// Seconds since the Unix epoch.
    pub created: u64,
}

/// A token made by [`Tokens::prepare`], stored by [`Tokens::commit`].
pub struct NewToken {
    pub name: String,
    pub token: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct TokenFile {
    tokens: Vec<TokenEntry>,
}

/// The token file of one config directory.
#[derive(Debug, Clone)]
pub struct Tokens {
    path: PathBuf,
}

impl Tokens {
    pub fn in_dir(config_dir: &Path) -> Tokens {
        Tokens {
            path: config_dir.join(TOKENS_FILE),
        }
    }

    pub fn list(&self) -> anyhow::Result<Vec<TokenEntry>> {
        Ok(self.read()?.tokens)
    }

    /// Creates a token named `name` (default `token-<n>`); returns the name and the token,
    /// which is never stored.
    pub fn create(&self, name: Option<&str>) -> anyhow::Result<(String, String)> {
        let new = self.prepare(name)?;
        self.commit(&new)?;
        Ok((new.name, new.token))
    }

    /// A new token with a checked, unused name, not yet stored: nothing is written, so a
    /// caller can fail (a taken name, a busy output path) before touching anything.
    pub fn prepare(&self, name: Option<&str>) -> anyhow::Result<NewToken> {
        let file = self.read()?;
        let name = match name {
            Some(name) => valid_name(name)?.to_owned(),
            None => free_name(&file.tokens),
        };
        ensure_free(&file, &name)?;
        let mut secret = [0u8; 32];
        getrandom::fill(&mut secret).map_err(|e| anyhow::anyhow!("no randomness: {e}"))?;
        let token = format!("{TOKEN_PREFIX}{}", hex::encode(secret));
        Ok(NewToken { name, token })
    }

    /// Stores the hash of a prepared token (its name checked again against the file).
    pub fn commit(&self, new: &NewToken) -> anyhow::Result<()> {
        let mut file = self.read()?;
        ensure_free(&file, &new.name)?;
        file.tokens.push(TokenEntry {
            name: new.name.clone(),
            sha256: hash(&new.token),
            created: now_secs(),
        });
        self.write(&file)
    }

    /// Removes the token `name`; `false` if there was none.
    pub fn revoke(&self, name: &str) -> anyhow::Result<bool> {
        let mut file = self.read()?;
        let before = file.tokens.len();
        file.tokens.retain(|t| t.name != name);
        if file.tokens.len() == before {
            return Ok(false);
        }
        self.write(&file)?;
        Ok(true)
    }

    /// The name of the token matching `presented`; every entry is compared, in constant time.
    pub fn verify(&self, presented: &str) -> Option<String> {
        let tokens = match self.read() {
            Ok(file) => file.tokens,
            Err(error) => {
                tracing::warn!(%error, "token file unreadable; refusing tokens");
                return None;
            }
        };
        let presented = Sha256::digest(presented.as_bytes());
        let mut found = None;
        for entry in tokens {
            let Ok(stored) = hex::decode(&entry.sha256) else {
                continue;
            };
            if bool::from(stored.ct_eq(presented.as_slice())) {
                found = Some(entry.name);
            }
        }
        found
    }

    fn read(&self) -> anyhow::Result<TokenFile> {
        match std::fs::read(&self.path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .with_context(|| format!("{} is not a token file", self.path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(TokenFile::default()),
            Err(e) => Err(e).with_context(|| format!("reading {}", self.path.display())),
        }
    }

    /// Writes a 0600 temp file next to the target, syncs it and renames it over the target.
    fn write(&self, file: &TokenFile) -> anyhow::Result<()> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let tmp = dir.join(format!(".{TOKENS_FILE}.{}.tmp", std::process::id()));
        let _ = std::fs::remove_file(&tmp);
        let mut out = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .with_context(|| format!("creating {}", tmp.display()))?;
        out.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        out.write_all(&serde_json::to_vec_pretty(file)?)?;
        out.sync_all()?;
        std::fs::rename(&tmp, &self.path)
            .with_context(|| format!("replacing {}", self.path.display()))
    }
}

fn hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

fn ensure_free(file: &TokenFile, name: &str) -> anyhow::Result<()> {
    if file.tokens.iter().any(|t| t.name == name) {
        anyhow::bail!("a token named `{name}` already exists (revoke it first)");
    }
    Ok(())
}

fn valid_name(name: &str) -> anyhow::Result<&str> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.@".contains(c));
    if !ok {
        anyhow::bail!("token name `{name}`: use 1-64 letters, digits, `-`, `_`, `.` or `@`");
    }
    Ok(name)
}

fn free_name(tokens: &[TokenEntry]) -> String {
    (1..)
        .map(|n| format!("token-{n}"))
        .find(|candidate| tokens.iter().all(|t| &t.name != candidate))
        .expect("an unused name exists")
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_verify_revoke() {
        let dir = tempfile::tempdir().unwrap();
        let tokens = Tokens::in_dir(dir.path());
        let (name, token) = tokens.create(Some("ci")).unwrap();
        assert_eq!(name, "ci");
        assert_eq!(tokens.verify(&token).as_deref(), Some("ci"));
        assert_eq!(tokens.verify("zc_wrong"), None);
        let text = std::fs::read_to_string(dir.path().join(TOKENS_FILE)).unwrap();
        assert!(!text.contains(&token), "only the hash is stored");
        let mode = std::fs::metadata(dir.path().join(TOKENS_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(tokens.create(Some("ci")).is_err(), "names are unique");
        assert_eq!(tokens.create(None).unwrap().0, "token-1");
        assert!(tokens.revoke("ci").unwrap());
        assert!(!tokens.revoke("ci").unwrap());
        assert_eq!(tokens.verify(&token), None);
    }
}
