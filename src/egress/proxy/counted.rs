//! An upstream stream that counts the bytes it carries each way, for the connection's report.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::observed::{Observed, Observer};

/// The bytes written to and read from a [`Counted`] stream.
#[derive(Debug, Default)]
pub(super) struct Bytes {
    sent: AtomicU64,
    received: AtomicU64,
}

impl Bytes {
    /// (sent, received) so far.
    pub fn totals(&self) -> (u64, u64) {
        (
            self.sent.load(Ordering::Relaxed),
            self.received.load(Ordering::Relaxed),
        )
    }

    pub fn add_sent(&self, n: usize) {
        self.sent.fetch_add(n as u64, Ordering::Relaxed);
    }

    pub fn add_received(&self, n: usize) {
        self.received.fetch_add(n as u64, Ordering::Relaxed);
    }
}

/// A stream whose writes count as sent and reads as received.
pub(super) type Counted<T> = Observed<T, Arc<Bytes>>;

/// `io`, counted, and its counts.
pub(super) fn counted<T>(io: T) -> (Counted<T>, Arc<Bytes>) {
    let bytes = Arc::<Bytes>::default();
    (Observed::new(io, bytes.clone()), bytes)
}

impl Observer for Arc<Bytes> {
    fn read(&mut self, bytes: &[u8]) {
        self.add_received(bytes.len());
    }

    fn wrote(&mut self, n: usize) {
        self.add_sent(n);
    }
}
