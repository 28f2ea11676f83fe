//! The SQL of `session_files` on PostgreSQL; the semantics are the SQLite backend's.

use tokio_postgres::GenericClient;

use super::pg_error;
use crate::store::StoreError;
use crate::store::files::SessionFile;

/// Inserts `files` as turn `number`'s (or, with `number` `None`, each at its own turn and
/// time, as copied from another store).
pub async fn insert(
    tx: &impl GenericClient,
    id: &str,
    files: &[SessionFile],
    number: Option<i64>,
    now: i64,
) -> Result<(), StoreError> {
    for (seq, f) in files.iter().enumerate() {
        let (turn, at) = number.map_or((f.turn, f.created_at), |n| (n, now));
        tx.execute(
            "INSERT INTO session_files
             (session_id, turn, seq, kind, path, sha256, size, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
            &[
                &id,
                &turn,
                &(seq as i64),
                &f.kind,
                &f.path,
                &f.sha256,
                &f.size,
                &at,
            ],
        )
        .await
        .map_err(pg_error)?;
    }
    Ok(())
}

/// The session's files, by turn then in the order they were recorded.
pub async fn list(c: &impl GenericClient, id: &str) -> Result<Vec<SessionFile>, StoreError> {
    let rows = c
        .query(
            "SELECT turn, kind, path, sha256, size, created_at FROM session_files
             WHERE session_id = $1 ORDER BY turn, seq",
            &[&id],
        )
        .await
        .map_err(pg_error)?;
    Ok(rows
        .iter()
        .map(|r| SessionFile {
            turn: r.get(0),
            kind: r.get(1),
            path: r.get(2),
            sha256: r.get(3),
            size: r.get(4),
            created_at: r.get(5),
        })
        .collect())
}
