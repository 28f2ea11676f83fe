//! The writer thread of the process's audit log: it opens the log ([`super::db`], SQLite or
//! PostgreSQL) itself, appends one record at a time and answers each caller after the commit,
//! minding a SQLite log's reserve ([`super::reserve`]), writes the anchor ([`super::anchor`]) at most once a second while records come in, and
//! with a signing key signs a checkpoint ([`super::tlog`]) at the configured interval. Both are
//! also written when a session ends (its `session.close` or `session.delete` record) and when
//! the process stops ([`Writer::finish`]), so the last records of a process are covered.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::oneshot;

use super::anchor;
use super::checkpoint::Signer;
use super::db::{Db, Target};
use super::reserve::{self, Need, Reserve};
use super::tlog::Checkpointer;

/// How often, at most, the anchor is rewritten while records come in.
const ANCHOR_EVERY: Duration = Duration::from_secs(1);

/// The record kinds that end a session: the anchor and a checkpoint follow them at once.
const SESSION_ENDS: [&str; 2] = ["session.close", "session.delete"];

/// What the thread is asked to do.
enum Work {
    Append(Value),
    /// Answered with the open state.
    Probe,
    /// Writes the anchor and a checkpoint of everything appended so far (the process stops).
    Finish,
}

type Job = (Work, oneshot::Sender<Result<i64, String>>);

/// The checkpoint key and how often, at most, it signs while records come in.
pub struct Signing {
    pub signer: Signer,
    pub every: Duration,
}

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

/// The thread's state besides the connection: what is not yet anchored or signed.
struct Seal {
    anchor_at: PathBuf,
    /// The newest head not yet anchored, and when the anchor was last written.
    unanchored: Option<(i64, String)>,
    anchored_at: Instant,
    checkpointer: Option<(Checkpointer, Duration)>,
    /// Records appended since the last checkpoint, and when it was signed.
    unsigned: bool,
    signed_at: Instant,
}

impl Seal {
    fn anchor(&mut self, key: Option<&[u8]>) {
        if let Some((seq, hash)) = self.unanchored.take() {
            if let Err(error) = anchor::write(&self.anchor_at, seq, &hash, key) {
                tracing::warn!(%error, "cannot write the audit anchor");
            }
            self.anchored_at = Instant::now();
        }
    }

    fn checkpoint(&mut self, db: &mut Db) -> Result<(), String> {
        let Some((checkpointer, _)) = &mut self.checkpointer else {
            return Ok(());
        };
        if !self.unsigned {
            return Ok(());
        }
        let signed = checkpointer.checkpoint(db);
        self.signed_at = Instant::now();
        match signed {
            Ok(_) => {
                self.unsigned = false;
                Ok(())
            }
            Err(error) => {
                tracing::error!(%error, "cannot sign an audit checkpoint");
                Err(error)
            }
        }
    }

    /// Whether the interval since the last checkpoint has passed with records unsigned.
    fn checkpoint_due(&self) -> bool {
        self.unsigned
            && self
                .checkpointer
                .as_ref()
                .is_some_and(|(_, every)| self.signed_at.elapsed() >= *every)
    }
}

impl Writer {
    /// Starts the thread, which opens `path` itself (start-up does not wait for the disk);
    /// an open failure is the answer to every append.
    /// `key` is the HMAC key (or why it is unusable: then nothing is written, never unkeyed).
    pub fn spawn(path: PathBuf, key: Result<Option<Vec<u8>>, String>) -> Writer {
        Writer::spawn_at(Target::Sqlite(path.clone()), path, key, None)
    }

    /// [`Writer::spawn`] for any log; the anchor is written beside `anchor_at`
    /// ([`anchor::path_for`]); with `signing`, checkpoints are signed.
    pub fn spawn_at(
        target: Target,
        anchor_at: PathBuf,
        key: Result<Option<Vec<u8>>, String>,
        signing: Option<Signing>,
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
                let mut seal = Seal {
                    anchor_at,
                    unanchored: None,
                    anchored_at: Instant::now(),
                    checkpointer: signing.map(|s| (Checkpointer::new(s.signer), s.every)),
                    unsigned: false,
                    signed_at: Instant::now(),
                };
                loop {
                    let job = match inbox.recv_timeout(ANCHOR_EVERY) {
                        Ok(job) => Some(job),
                        Err(mpsc::RecvTimeoutError::Timeout) => None,
                        Err(mpsc::RecvTimeoutError::Disconnected) => break,
                    };
                    if let Some((work, reply)) = job {
                        // A database that was down when the daemon started is tried again
                        // (a lost connection is remade by the PostgreSQL log itself).
                        if conn.is_err()
                            && let (Target::Postgres(_), Ok(key)) = (&target, &key)
                        {
                            conn = open().map(|db| (db, key.clone()));
                        }
                        let ends_session = match &work {
                            Work::Append(body) => {
                                SESSION_ENDS.contains(&body["kind"].as_str().unwrap_or(""))
                            }
                            _ => false,
                        };
                        let answer = match (&mut conn, work) {
                            (Ok((db, key)), Work::Append(body)) => {
                                append(db, body, key.as_deref(), reserve.as_ref())
                            }
                            (Ok(_), Work::Probe) => Ok((0, String::new())),
                            (Ok((db, key)), Work::Finish) => {
                                seal.anchor(key.as_deref());
                                seal.checkpoint(db).map(|()| (0, String::new()))
                            }
                            (Err(e), _) => Err(e.clone()),
                        };
                        health.store(answer.is_ok(), Ordering::SeqCst);
                        if let Ok((seq, hash)) = &answer
                            && *seq > 0
                        {
                            seal.unanchored = Some((*seq, hash.clone()));
                            seal.unsigned = true;
                        }
                        if ends_session && let Ok((db, key)) = &mut conn {
                            seal.anchor(key.as_deref());
                            let _ = seal.checkpoint(db);
                        }
                        let _ = reply.send(answer.map(|(seq, _)| seq));
                        if seal.anchored_at.elapsed() < ANCHOR_EVERY {
                            continue;
                        }
                    }
                    if let Ok((db, key)) = &mut conn {
                        seal.anchor(key.as_deref());
                        if seal.checkpoint_due() {
                            let _ = seal.checkpoint(db);
                        }
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
        self.send(Work::Append(body)).await
    }

    /// Writes the anchor and a checkpoint of every record appended so far, and waits for
    /// them (the process is about to exit).
    pub async fn finish(&self) -> Result<(), String> {
        self.send(Work::Finish).await.map(|_| ())
    }

    /// Waits until the thread has opened the file; `Err` says why it could not.
    pub async fn probe(&self) -> Result<(), String> {
        self.send(Work::Probe).await.map(|_| ())
    }

    async fn send(&self, work: Work) -> Result<i64, String> {
        let (reply, answer) = oneshot::channel();
        self.jobs
            .send((work, reply))
            .map_err(|_| "the audit writer is not running".to_owned())?;
        answer
            .await
            .map_err(|_| "the audit writer stopped".to_owned())?
    }
}
