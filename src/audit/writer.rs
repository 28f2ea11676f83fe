//! The writer thread of the process's audit log: it opens the log ([`super::db`], SQLite or
//! PostgreSQL) itself, appends one record at a time and answers each caller after the commit,
//! minding a SQLite log's reserve ([`super::reserve`]), and writes the anchor
//! ([`super::anchor`]) at most once a second while records come in.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::oneshot;

use super::anchor;
use super::db::{Db, Target};
use super::reserve::{self, Need, Reserve};

/// How often, at most, the anchor is rewritten while records come in.
const ANCHOR_EVERY: Duration = Duration::from_secs(1);

/// A body to append, or `None`: a probe answered with the open state.
type Job = (Option<Value>, oneshot::Sender<Result<i64, String>>);

/// The sender side of the writer thread.
#[derive(Clone)]
pub struct Writer {
    jobs: mpsc::Sender<Job>,
    /// Whether the file opened and the last append committed (for `/readyz`).
    healthy: Arc<AtomicBool>,
}

/// Appends `body`; with a `reserve` (a SQLite log), a record that lets a call go on is
/// refused unless the reserve is held, and one that ends a call under way is written again
/// in the reserve's room when the file system is full.
fn append(
    db: &mut Db,
    body: Value,
    key: Option<&[u8]>,
    reserve: Option<&Reserve>,
) -> Result<(i64, String), String> {
    let Some(reserve) = reserve else {
        return db.append(body, key);
    };
    match Need::of(&body) {
        Need::Start => {
            reserve.hold().map_err(|e| {
                format!("the file system is full: {e}; no tool call starts until space is freed")
            })?;
            db.append(body, key)
        }
        Need::Finish => match db.append(body.clone(), key) {
            Err(e) if reserve::is_full(&e) && reserve.release() => {
                tracing::error!(
                    reserve = %reserve.path().display(),
                    "the audit log's file system is full: its reserve is released for the \
                     records of the calls under way, and no tool call starts until space is freed"
                );
                db.append(body, key)
            }
            written => written,
        },
        Need::Other => db.append(body, key),
    }
}

impl Writer {
    /// Starts the thread, which opens `path` itself (start-up does not wait for the disk);
    /// an open failure is the answer to every append.
    /// `key` is the HMAC key (or why it is unusable: then nothing is written, never unkeyed).
    pub fn spawn(path: PathBuf, key: Result<Option<Vec<u8>>, String>) -> Writer {
        Writer::spawn_at(Target::Sqlite(path.clone()), path, key)
    }

    /// [`Writer::spawn`] for any log; the anchor is written beside `anchor_at`
    /// ([`anchor::path_for`]).
    pub fn spawn_at(
        target: Target,
        anchor_at: PathBuf,
        key: Result<Option<Vec<u8>>, String>,
    ) -> Writer {
        let (jobs, inbox) = mpsc::channel::<Job>();
        let healthy = Arc::new(AtomicBool::new(false));
        let health = healthy.clone();
        let started = std::thread::Builder::new()
            .name("zeroclaw-audit".into())
            .spawn(move || {
                let open = || Db::open(&target).map_err(|e| e.to_string());
                let mut conn = key.clone().and_then(|key| Ok((open()?, key)));
                health.store(conn.is_ok(), Ordering::SeqCst);
                let reserve = match &target {
                    Target::Sqlite(path) if conn.is_ok() => Some(Reserve::beside(path)),
                    _ => None,
                };
                if let Some(Err(error)) = reserve.as_ref().map(Reserve::hold) {
                    tracing::warn!(%error, "tool calls are refused until it can be made");
                }
                // The newest head not yet anchored, and when the anchor was last written.
                let mut unanchored: Option<(i64, String)> = None;
                let mut anchored_at = Instant::now();
                loop {
                    let job = match inbox.recv_timeout(ANCHOR_EVERY) {
                        Ok(job) => Some(job),
                        Err(mpsc::RecvTimeoutError::Timeout) => None,
                        Err(mpsc::RecvTimeoutError::Disconnected) => break,
                    };
                    if let Some((body, reply)) = job {
                        // A database that was down when the daemon started is tried again
                        // (a lost connection is remade by the PostgreSQL log itself).
                        if conn.is_err()
                            && let (Target::Postgres(_), Ok(key)) = (&target, &key)
                        {
                            conn = open().map(|db| (db, key.clone()));
                        }
                        let answer = match (&mut conn, body) {
                            (Ok((db, key)), Some(body)) => {
                                append(db, body, key.as_deref(), reserve.as_ref())
                            }
                            (Ok(_), None) => Ok((0, String::new())),
                            (Err(e), _) => Err(e.clone()),
                        };
                        health.store(answer.is_ok(), Ordering::SeqCst);
                        if let Ok((seq, hash)) = &answer
                            && *seq > 0
                        {
                            unanchored = Some((*seq, hash.clone()));
                        }
                        let _ = reply.send(answer.map(|(seq, _)| seq));
                        if anchored_at.elapsed() < ANCHOR_EVERY {
                            continue;
                        }
                    }
                    if let (Some((seq, hash)), Ok((_, key))) = (unanchored.take(), &conn) {
                        if let Err(error) = anchor::write(&anchor_at, seq, &hash, key.as_deref()) {
                            tracing::warn!(%error, "cannot write the audit anchor");
                        }
                        anchored_at = Instant::now();
                    }
                }
            });
        if let Err(error) = started {
            tracing::error!(%error, "cannot start the audit writer thread");
        }
        Writer { jobs, healthy }
    }

    /// The file opened and the last append (if any) committed.
    pub fn healthy(&self) -> bool {
        self.healthy.load(Ordering::SeqCst)
    }

    /// Appends `body` and waits for its commit.
    pub async fn append(&self, body: Value) -> Result<i64, String> {
        self.send(Some(body)).await
    }

    /// Waits until the thread has opened the file; `Err` says why it could not.
    pub async fn probe(&self) -> Result<(), String> {
        self.send(None).await.map(|_| ())
    }

    async fn send(&self, body: Option<Value>) -> Result<i64, String> {
        let (reply, answer) = oneshot::channel();
        self.jobs
            .send((body, reply))
            .map_err(|_| "the audit writer is not running".to_owned())?;
        answer
            .await
            .map_err(|_| "the audit writer stopped".to_owned())?
    }
}
