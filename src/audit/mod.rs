//! The tamper-evident audit log: one record per tool execution, policy decision, approval,
//! sandbox setup failure, authentication failure, session lifecycle event and configuration
//! reload, appended in order to `<workspace_dir>/sessions/audit.db` (or, with a PostgreSQL
//! `[store] url`, to that database, one chain for every daemon on it) and chained with
//! SHA-256 (or HMAC-SHA-256 with `[audit] key_file`). See `docs/audit.md`.
//!
//! [`init`] starts the process-wide log once (the writer thread of [`store`]); [`record`]
//! appends an [`Event`] and waits for its commit. With `[audit] mode = "required"` (the
//! default) a record that cannot be written is an error the caller fails with; in
//! `best_effort` it is logged and the caller goes on. [`db`] says where the log is ([`store`]:
//! SQLite, [`postgres`]), [`writer`] owns the thread that appends, [`reserve`] the room kept
//! for a SQLite log on a full file system. [`chain`] owns the canonical encoding
//! and verification, [`import`] another log brought in by `store copy`, [`network`] the egress
//! proxy's connection record, [`anchor`] the head written beside the file, [`tool`] the per-call
//! record, [`reload`] the configuration-reload record, [`prune`] the deletion of a prefix, [`export`] the JSONL and OCSF forms.
//! The verifiable log: [`merkle`] the RFC 6962 tree and proofs, [`checkpoint`] the signed
//! checkpoints and their Ed25519 keys (`[audit] signing_key_file`), [`tlog`] the tree over the
//! records, signed by the writer and checked by `audit verify`; [`attest`] the signed record
//! of one session (in-toto Statement, DSSE).
//! Secrets never enter a record: tool arguments are digested, env values are never read.

pub mod anchor;
pub mod attest;
pub mod chain;
pub mod checkpoint;
pub mod db;
pub mod export;
pub mod import;
pub mod merkle;
pub mod network;
pub mod postgres;
pub mod prune;
pub mod reload;
pub mod reserve;
pub mod store;
pub mod tlog;
pub mod tool;
pub mod writer;

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::OnceLock;

use serde_json::{Map, Value};

use crate::config::{AuditMode, Config};

/// Why a record was not written.
#[derive(Debug, Clone, thiserror::Error)]
pub enum AuditError {
    #[error("cannot open the audit log {at}: {message}")]
    Open { at: String, message: String },
    #[error("the audit key file {path} is unusable: {message}")]
    Key { path: PathBuf, message: String },
    #[error("cannot write the audit record to {at}: {message}")]
    Write { at: String, message: String },
}

impl AuditError {
    pub(crate) fn open(at: impl std::fmt::Display, message: String) -> AuditError {
        AuditError::Open {
            at: at.to_string(),
            message,
        }
    }
}

/// The process's audit log.
pub struct AuditLog {
    writer: writer::Writer,
    target: db::Target,
    mode: AuditMode,
}

static LOG: OnceLock<AuditLog> = OnceLock::new();

/// Starts the process's audit log from `config` (the first call wins; the log is not
/// reloaded). The file is opened on the writer thread; a failure is the answer to every
/// [`record`].
pub fn init(config: &Config) -> &'static AuditLog {
    LOG.get_or_init(|| {
        let target = db::Target::of(config);
        // An unusable signing key stops the log like an unusable HMAC key: nothing is
        // written unsigned when signing was asked for.
        let (key, signing) = match (load_key(config), load_signer(config)) {
            (Ok(key), Ok(signer)) => (
                Ok(key),
                signer.map(|signer| writer::Signing {
                    signer,
                    every: std::time::Duration::from_secs(config.audit.checkpoint_interval_secs),
                }),
            ),
            (Err(e), _) | (_, Err(e)) => (Err(e.to_string()), None),
        };
        AuditLog {
            writer: writer::Writer::spawn_at(target.clone(), config.audit_path(), key, signing),
            target,
            mode: config.audit.mode,
        }
    })
}

/// The process's audit log, if [`init`] ran (`zeroclaw acp`, `daemon` and `sessions delete` call it
/// at start; library tests do not, and record nothing).
pub fn global() -> Option<&'static AuditLog> {
    LOG.get()
}

/// The HMAC key of `[audit] key_file`: at least 32 bytes, in a file only its owner can read.
pub fn load_key(config: &Config) -> Result<Option<Vec<u8>>, AuditError> {
    let Some(path) = &config.audit.key_file else {
        return Ok(None);
    };
    let key_err = |message: String| AuditError::Key {
        path: path.clone(),
        message,
    };
    let meta = std::fs::metadata(path).map_err(|e| key_err(e.to_string()))?;
    if meta.permissions().mode() & 0o077 != 0 {
        return Err(key_err(format!(
            "mode {:o} lets others read it; chmod 600 it",
            meta.permissions().mode() & 0o777
        )));
    }
    let bytes = std::fs::read(path).map_err(|e| key_err(e.to_string()))?;
    let key = bytes.trim_ascii().to_vec();
    if key.len() < 32 {
        return Err(key_err(format!(
            "{} bytes; a key has at least 32 (e.g. `head -c 32 /dev/urandom | base64`)",
            key.len()
        )));
    }
    Ok(Some(key))
}

/// The checkpoint signer of `[audit] signing_key_file` (a key `zeroclaw audit keygen` wrote,
/// in a file only its owner can read).
pub fn load_signer(config: &Config) -> Result<Option<checkpoint::Signer>, AuditError> {
    let Some(path) = &config.audit.signing_key_file else {
        return Ok(None);
    };
    checkpoint::Signer::load(path)
        .map(Some)
        .map_err(|message| AuditError::Key {
            path: path.clone(),
            message,
        })
}

/// Writes the final anchor and checkpoint of the process's log and waits for them (at every
/// exit: end of input, SIGTERM, SIGINT, a daemon's shutdown). Bounded, so a database that is
/// gone does not hold the exit.
pub async fn finish() {
    let Some(log) = global() else {
        return;
    };
    match tokio::time::timeout(std::time::Duration::from_secs(10), log.writer.finish()).await {
        Ok(Ok(())) => {}
        Ok(Err(error)) => tracing::error!(%error, "the final audit checkpoint was not written"),
        Err(_) => tracing::error!("the final audit checkpoint timed out"),
    }
}

impl AuditLog {
    /// Which log records go to.
    pub fn target(&self) -> &db::Target {
        &self.target
    }

    pub fn mode(&self) -> AuditMode {
        self.mode
    }

    /// Waits until the log file is open; `Err` is why it cannot be (every record would fail).
    pub async fn opened(&self) -> Result<(), AuditError> {
        self.writer
            .probe()
            .await
            .map_err(|message| AuditError::Write {
                at: self.target.describe(),
                message,
            })
    }

    /// Whether records are being written: the file opened and the last append committed.
    pub fn writable(&self) -> bool {
        self.writer.healthy()
    }
}

/// One event to record: a `kind` and its fields (the log adds `seq` and `alg`).
#[derive(Debug, Clone)]
pub struct Event(Map<String, Value>);

impl Event {
    /// An event of `kind`, timed now.
    pub fn new(kind: &str) -> Event {
        let mut fields = Map::new();
        fields.insert("kind".into(), kind.into());
        fields.insert("time_ms".into(), crate::store::now_ms().into());
        Event(fields)
    }

    /// Sets `key` (a null value is left out).
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Event {
        let value = value.into();
        if !value.is_null() {
            self.0.insert(key.to_owned(), value);
        }
        self
    }

    /// The event timed now (a template made earlier, e.g. with a call's fields).
    pub fn at_now(mut self) -> Event {
        self.0
            .insert("time_ms".into(), crate::store::now_ms().into());
        self
    }

    pub fn kind(&self) -> &str {
        self.0["kind"].as_str().unwrap_or("")
    }
}

/// Appends `event` to the process's log and waits for its commit. `Err` only in `required`
/// mode; without an initialized log (library tests) nothing is recorded.
pub async fn record(event: Event) -> Result<(), AuditError> {
    let Some(log) = global() else {
        return Ok(());
    };
    let kind = event.kind().to_owned();
    let started = std::time::Instant::now();
    let written = log.writer.append(Value::Object(event.0)).await;
    crate::metrics::get().audit_write(started.elapsed());
    match written {
        Ok(_) => Ok(()),
        Err(message) => {
            let error = AuditError::Write {
                at: log.target.describe(),
                message,
            };
            match log.mode {
                AuditMode::Required => Err(error),
                AuditMode::BestEffort => {
                    tracing::warn!(%kind, %error, "audit record lost (audit.mode = best_effort)");
                    Ok(())
                }
            }
        }
    }
}

/// Records an event the caller cannot undo (an authentication failure, a session closing):
/// a failure is logged, never returned.
pub async fn note(event: Event) {
    let kind = event.kind().to_owned();
    if let Err(error) = record(event).await {
        tracing::error!(%kind, %error, "audit record not written");
    }
}

/// A session lifecycle event (`session.create`, `session.load`, `session.close`, ...).
pub fn session_event(kind: &str, session: &str, principal: Option<&str>) -> Event {
    Event::new(kind)
        .with("session", session)
        .with("principal", principal.map(str::to_owned))
}
