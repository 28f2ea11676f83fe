//! The output cap of one call: how much of each chunk is passed on, what is kept for the
//! [`super::Outcome`], and whether anything was cut.

use super::types::Stream;

/// Output counted against the cap (one cap for both streams together).
#[derive(Debug, Default)]
pub(super) struct Capped {
    /// Keep what is passed on (the daemon's calls); a foreground run only counts.
    keep: bool,
    used: u64,
    pub(super) stdout: Vec<u8>,
    pub(super) stderr: Vec<u8>,
    pub(super) truncated: bool,
}

impl Capped {
    pub(super) fn new(keep: bool) -> Capped {
        Capped {
            keep,
            ..Capped::default()
        }
    }

    /// How many leading bytes of `chunk` fit under `cap` (counted, and kept when keeping);
    /// fewer than all marks the output truncated.
    pub(super) fn admit(&mut self, stream: Stream, chunk: &[u8], cap: u64) -> usize {
        let room = cap.saturating_sub(self.used);
        let n = chunk.len().min(usize::try_from(room).unwrap_or(usize::MAX));
        self.used += n as u64;
        if self.keep {
            match stream {
                Stream::Stdout => self.stdout.extend_from_slice(&chunk[..n]),
                Stream::Stderr => self.stderr.extend_from_slice(&chunk[..n]),
            }
        }
        if n < chunk.len() {
            self.truncated = true;
        }
        n
    }
}
