//! Where each configuration key came from (a command-line flag, an environment variable, the
//! file, or the defaults), so that load and validation errors can name it.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::env::EnvEntry;
use super::{FlagOverride, Source};

/// Which source each key came from.
pub(super) struct Sources {
    file: Option<PathBuf>,
    /// Keys set by the environment, by dotted path.
    env: BTreeMap<String, EnvEntry>,
    /// Keys set by command-line flags, by dotted path, with the flag.
    flags: BTreeMap<String, &'static str>,
}

impl Sources {
    /// `file` when the configuration file exists; the environment overlay and the flags applied
    /// over it.
    pub(super) fn new(file: Option<PathBuf>, env: &[EnvEntry], flags: &[FlagOverride]) -> Self {
        Sources {
            file,
            env: env.iter().map(|e| (e.path.join("."), e.clone())).collect(),
            flags: flags.iter().map(|f| (f.key.to_owned(), f.flag)).collect(),
        }
    }

    /// The environment variable that set exactly `key`.
    pub(super) fn env_entry(&self, key: &str) -> Option<&EnvEntry> {
        self.env.get(key)
    }

    /// The flag that set `key`, else the variable that set it (or a key below it), else the
    /// file, else the defaults.
    pub(super) fn of(&self, key: &str) -> Source {
        if let Some(flag) = self.flags.get(key) {
            return Source::Flag((*flag).to_owned());
        }
        if let Some(entry) = self.env.get(key) {
            return Source::Env(entry.var.clone());
        }
        let below = format!("{key}.");
        let under = self.env.iter().find(|(k, _)| k.starts_with(&below));
        match (under, &self.file) {
            (Some((_, entry)), _) => Source::Env(entry.var.clone()),
            (None, Some(path)) => Source::File(path.clone()),
            (None, None) => Source::Defaults,
        }
    }
}
