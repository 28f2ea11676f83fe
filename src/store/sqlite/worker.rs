//! The thread that owns the SQLite connection; async callers send it closures.

use std::sync::mpsc;

use rusqlite::Connection;
use tokio::sync::oneshot;

use crate::store::StoreError;

type Job = Box<dyn FnOnce(&mut Connection) + Send>;

/// A sender of jobs to the store thread; the thread ends when the last clone is dropped.
#[derive(Clone)]
pub struct Worker {
    jobs: mpsc::Sender<Job>,
}

impl Worker {
    pub fn spawn(mut conn: Connection) -> Result<Worker, StoreError> {
        let (jobs, inbox) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("zeroclaw-store".into())
            .spawn(move || {
                for job in inbox {
                    // A panicking job loses its answer (the caller sees `Closed`), not the store;
                    // its open transaction, if any, rolls back as it unwinds.
                    let run = std::panic::AssertUnwindSafe(|| job(&mut conn));
                    if std::panic::catch_unwind(run).is_err() {
                        tracing::error!("a session store operation panicked");
                    }
                }
            })
            .map_err(|_| StoreError::Closed)?;
        Ok(Worker { jobs })
    }

    /// Runs `f` on the store thread and awaits its result without blocking the executor.
    pub async fn run<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let job: Job = Box::new(move |conn| {
            let _ = reply.send(f(conn));
        });
        self.jobs.send(job).map_err(|_| StoreError::Closed)?;
        answer.await.map_err(|_| StoreError::Closed)?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_panicking_job_does_not_stop_the_store_thread() {
        let worker = Worker::spawn(Connection::open_in_memory().unwrap()).unwrap();
        let lost = worker
            .run(|_| -> Result<(), StoreError> { panic!("boom") })
            .await;
        assert!(matches!(lost, Err(StoreError::Closed)));
        let answer = worker
            .run(|c| Ok(c.query_row("SELECT 41 + 1", [], |r| r.get::<_, i64>(0))?))
            .await;
        assert_eq!(answer.unwrap(), 42);
    }
}
