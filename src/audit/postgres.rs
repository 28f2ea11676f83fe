//! The audit log in the PostgreSQL session store (`[store] url = "postgres://…"`): the
//! `audit_records` table (the store's schema version 6), one connection per writer, and the
//! append that keeps one chain across daemons.
//!
//! Every append is one transaction that takes a transaction-level advisory lock, reads the
//! head, links the new record to it and commits; the lock serialises the daemons' appends, and
//! `seq` being the primary key makes a fork impossible even without it. The calls block: they
//! run on the writer thread's (or the CLI's) own runtime. A lost connection is made again on
//! the next call, so the log works again after the database comes back. Every write (append,
//! copy, prune) notes its transaction id, so the retry after a connection lost while its COMMIT
//! was answered asks the server whether it committed instead of writing the record twice.

use std::cell::RefCell;

use serde_json::Value;
use tokio_postgres::{Client, Transaction};

use super::chain::{self, ALG_HMAC, ALG_SHA256, GENESIS, Row};
use super::checkpoint::Stored;
use crate::store::{Location, postgres_client};

/// An arbitrary key of PostgreSQL's advisory lock space, held while appending.
const APPEND_LOCK: i64 = 0x7a63_6175_6469_7421;

/// The audit log of one PostgreSQL database.
pub struct PgLog {
    url: String,
    runtime: tokio::runtime::Runtime,
    client: Option<Client>,
}

impl PgLog {
    /// Connects (migrating the database when it is older).
    pub fn open(url: &str) -> Result<PgLog, String> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        let mut log = PgLog {
            url: url.to_owned(),
            runtime,
            client: None,
        };
        log.client()?;
        Ok(log)
    }

    /// Where the log is, for messages (no password).
    pub fn location(&self) -> String {
        format!("{} (audit_records)", Location::Postgres(self.url.clone()))
    }

    fn client(&mut self) -> Result<&Client, String> {
        if self.client.as_ref().is_none_or(Client::is_closed) {
            self.client = None;
            let client = self
                .runtime
                .block_on(postgres_client(&self.url))
                .map_err(|e| e.to_string())?;
            self.client = Some(client);
        }
        Ok(self.client.as_ref().expect("connected above"))
    }

    /// Runs `work` on a live connection. A connection the server closed is noticed only when
    /// used (its task runs while a call does), so a call that finds it closed is made again,
    /// once, on a new connection.
    fn run<T>(
        &mut self,
        work: impl AsyncFn(&mut Client) -> Result<T, tokio_postgres::Error>,
    ) -> Result<T, String> {
        let mut retried = false;
        loop {
            self.client()?;
            let PgLog {
                runtime, client, ..
            } = self;
            let live = client.as_mut().expect("connected above");
            let answer = runtime.block_on(work(live));
            // The server may say why it closed it (`FATAL: terminating connection …`).
            let closed = live.is_closed();
            match answer {
                Ok(value) => return Ok(value),
                Err(e) if (closed || e.is_closed()) && !retried => {
                    *client = None;
                    retried = true;
                }
                Err(e) => return Err(crate::store::pg_message(&e)),
            }
        }
    }

    /// Runs the writing `work` in one transaction that holds [`APPEND_LOCK`], so that a
    /// retry after a lost connection never does it twice. The first attempt notes its
    /// transaction id before it commits; when the connection is lost before the answer to its
    /// COMMIT arrives, the retry (holding the lock, so the first transaction has ended) asks
    /// the server whether that transaction committed: if it did, its answer is the answer and
    /// nothing is written again; if it was rolled back, `work` runs again.
    fn write<T: Clone>(
        &mut self,
        work: impl AsyncFn(&Transaction<'_>) -> Result<T, tokio_postgres::Error>,
    ) -> Result<T, String> {
        let sent: RefCell<Option<(i64, T)>> = RefCell::new(None);
        self.run(async |client| {
            let tx = client.transaction().await?;
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&APPEND_LOCK])
                .await?;
            let earlier = sent.borrow_mut().take();
            if let Some((xid, answer)) = earlier {
                let row = tx.query_one("SELECT txid_status($1)", &[&xid]).await?;
                match row.get::<_, Option<String>>(0).as_deref() {
                    Some("committed") => return Ok(Ok(answer)),
                    Some("aborted") => {}
                    other => {
                        return Ok(Err(format!(
                            "the connection was lost while committing and transaction {xid} \
                             is {}; check the log before writing again",
                            other.unwrap_or("unknown")
                        )));
                    }
                }
            }
            let xid: i64 = tx.query_one("SELECT txid_current()", &[]).await?.get(0);
            let answer = work(&tx).await?;
            *sent.borrow_mut() = Some((xid, answer.clone()));
            tx.commit().await?;
            Ok(Ok(answer))
        })?
    }

    /// Appends `body` as the next record; returns its seq and hash.
    pub fn append(&mut self, body: Value, key: Option<&[u8]>) -> Result<(i64, String), String> {
        self.append_then(body, key, &[])
    }

    /// Appends `body` like [`PgLog::append`] and, in the same transaction (so no daemon's
    /// record lands between them), `rows` after it as they are (an imported segment: their
    /// own hashes, at the next seqs); returns the appended seq and hash.
    pub fn append_then(
        &mut self,
        body: Value,
        key: Option<&[u8]>,
        rows: &[Row],
    ) -> Result<(i64, String), String> {
        self.write(async |tx| {
            let mut body = body.clone();
            let head = tx
                .query_opt(
                    "SELECT seq, hash FROM audit_records ORDER BY seq DESC LIMIT 1",
                    &[],
                )
                .await?;
            let (seq, prev_hash): (i64, String) = match head {
                Some(row) => (row.get::<_, i64>(0) + 1, row.get(1)),
                None => (1, GENESIS.to_owned()),
            };
            body["seq"] = seq.into();
            body["alg"] = if key.is_some() { ALG_HMAC } else { ALG_SHA256 }.into();
            let time_ms = body["time_ms"].as_i64().unwrap_or(0);
            let hash = chain::link_hash(&prev_hash, &body, key);
            tx.execute(
                "INSERT INTO audit_records (seq, time_ms, body, prev_hash, hash)
                 VALUES ($1, $2, $3, $4, $5)",
                &[&seq, &time_ms, &chain::canonical(&body), &prev_hash, &hash],
            )
            .await?;
            for (n, row) in rows.iter().enumerate() {
                tx.execute(
                    "INSERT INTO audit_records (seq, time_ms, body, prev_hash, hash)
                     VALUES ($1, $2, $3, $4, $5)",
                    &[
                        &(seq + 1 + n as i64),
                        &row.time_ms(),
                        &row.body,
                        &row.prev_hash,
                        &row.hash,
                    ],
                )
                .await?;
            }
            Ok((seq, hash))
        })
    }

    /// Inserts `rows` as they are, in one transaction.
    pub fn insert_rows(&mut self, rows: &[Row]) -> Result<(), String> {
        self.write(async |tx| {
            for row in rows {
                tx.execute(
                    "INSERT INTO audit_records (seq, time_ms, body, prev_hash, hash)
                     VALUES ($1, $2, $3, $4, $5)",
                    &[
                        &row.seq,
                        &row.time_ms(),
                        &row.body,
                        &row.prev_hash,
                        &row.hash,
                    ],
                )
                .await?;
            }
            Ok(())
        })
    }

    /// Every row in seq order.
    pub fn rows(&mut self) -> Result<Vec<Row>, String> {
        self.run(async |client| {
            let rows = client
                .query(
                    "SELECT seq, body, prev_hash, hash FROM audit_records ORDER BY seq",
                    &[],
                )
                .await?;
            Ok(rows
                .iter()
                .map(|r| Row {
                    seq: r.get(0),
                    body: r.get(1),
                    prev_hash: r.get(2),
                    hash: r.get(3),
                })
                .collect())
        })
    }

    /// The first seq at or after `before_ms`, and the newest seq.
    pub fn bounds(&mut self, before_ms: i64) -> Result<(Option<i64>, Option<i64>), String> {
        self.run(async |client| {
            let row = client
                .query_one(
                    "SELECT (SELECT MIN(seq) FROM audit_records WHERE time_ms >= $1),
                            (SELECT MAX(seq) FROM audit_records)",
                    &[&before_ms],
                )
                .await?;
            Ok((row.get(0), row.get(1)))
        })
    }

    /// The hash of record `seq`, if it is there.
    pub fn hash_of(&mut self, seq: i64) -> Result<Option<String>, String> {
        self.run(async |client| {
            let row = client
                .query_opt("SELECT hash FROM audit_records WHERE seq = $1", &[&seq])
                .await?;
            Ok(row.map(|r| r.get(0)))
        })
    }

    /// Deletes the records up to `through`; returns how many went.
    pub fn delete_through(&mut self, through: i64) -> Result<u64, String> {
        self.write(async |tx| {
            tx.execute("DELETE FROM audit_records WHERE seq <= $1", &[&through])
                .await
        })
    }

    /// The bodies of the records after `seq`, in seq order.
    pub fn bodies_after(&mut self, seq: i64) -> Result<Vec<(i64, String)>, String> {
        self.run(async |client| {
            let rows = client
                .query(
                    "SELECT seq, body FROM audit_records WHERE seq > $1 ORDER BY seq",
                    &[&seq],
                )
                .await?;
            Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
        })
    }

    /// Stores a signed checkpoint.
    pub fn insert_checkpoint(&mut self, checkpoint: &Stored) -> Result<(), String> {
        let frontier = serde_json::to_string(&checkpoint.frontier).unwrap_or_default();
        self.run(async |client| {
            client
                .execute(
                    "INSERT INTO audit_checkpoints (tree_size, time_ms, note, frontier)
                     VALUES ($1, $2, $3, $4)",
                    &[
                        &checkpoint.tree_size,
                        &checkpoint.time_ms,
                        &checkpoint.note,
                        &frontier,
                    ],
                )
                .await
                .map(|_| ())
        })
    }

    /// Every stored checkpoint, by tree size (then as stored).
    pub fn checkpoints(&mut self) -> Result<Vec<Stored>, String> {
        self.run(async |client| {
            let rows = client
                .query(
                    "SELECT tree_size, time_ms, note, frontier FROM audit_checkpoints
                     ORDER BY tree_size, id",
                    &[],
                )
                .await?;
            Ok(rows
                .iter()
                .map(|r| Stored {
                    tree_size: r.get(0),
                    time_ms: r.get(1),
                    note: r.get(2),
                    frontier: serde_json::from_str(r.get::<_, &str>(3)).unwrap_or_default(),
                })
                .collect())
        })
    }
}
