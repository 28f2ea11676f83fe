//! The raw head of a client's request, as it passes to hyper: hyper settles a request that
//! carries both `Content-Length` and `Transfer-Encoding` by itself (the length is dropped), so
//! the handler could not see it; [`Scanned`] notes which framing headers the head named, for
//! the proxy to refuse the request rather than pick one. A client connection carries one
//! request (the proxy does not keep it alive), so only the first head is scanned.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::observed::{Observed, Observer};

/// What the head named (read by the handler once hyper parsed it).
#[derive(Debug, Default)]
pub(super) struct Framing {
    content_length: AtomicBool,
    transfer_encoding: AtomicBool,
}

impl Framing {
    /// Whether the head named both `Content-Length` and `Transfer-Encoding`.
    pub fn both(&self) -> bool {
        self.content_length.load(Ordering::Relaxed)
            && self.transfer_encoding.load(Ordering::Relaxed)
    }
}

/// The longest header-name prefix looked at (`transfer-encoding:`).
const PREFIX: usize = 18;

/// A client stream whose first request head is scanned as it is read.
pub(super) type Scanned<T> = Observed<T, HeadScan>;

/// `io`, its first request head scanned as it is read.
pub(super) fn scanned<T>(io: T) -> Scanned<T> {
    Observed::new(io, HeadScan::default())
}

/// The scan of a request head's lines for its framing headers.
#[derive(Default)]
pub(super) struct HeadScan {
    framing: Arc<Framing>,
    done: bool,
    /// The start of the current line, lowercase.
    line: [u8; PREFIX],
    len: usize,
    /// Bytes of the current line so far.
    col: usize,
    /// Whether the request line began: hyper (httparse) skips empty lines before it, so the
    /// head ends at the first blank line after a line that is not blank.
    started: bool,
}

impl HeadScan {
    pub fn framing(&self) -> Arc<Framing> {
        self.framing.clone()
    }
}

impl Observer for HeadScan {
    fn read(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if self.done {
                return;
            }
            if b == b'\n' {
                let line = &self.line[..self.len];
                if line.starts_with(b"content-length:") {
                    self.framing.content_length.store(true, Ordering::Relaxed);
                } else if line.starts_with(b"transfer-encoding:") {
                    self.framing
                        .transfer_encoding
                        .store(true, Ordering::Relaxed);
                }
                let blank = self.col == 0 || (self.col == 1 && self.line[0] == b'\r');
                self.done = blank && self.started;
                self.started |= !blank;
                self.len = 0;
                self.col = 0;
                continue;
            }
            if self.len < PREFIX {
                self.line[self.len] = b.to_ascii_lowercase();
                self.len += 1;
            }
            self.col += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names_both(head: &[u8]) -> bool {
        let mut scan = HeadScan::default();
        scan.read(head);
        scan.framing().both()
    }

    #[test]
    fn both_framings_are_seen_after_empty_lines_before_the_request_line() {
        let head = b"POST http://a.example/ HTTP/1.1\r\nContent-Length: 4\r\n\
                     Transfer-Encoding: chunked\r\n\r\n";
        for lead in [&b""[..], b"\r\n", b"\r\n\r\n", b"\n\n\n"] {
            assert!(names_both(&[lead, &head[..]].concat()), "{lead:?}");
        }
        // A blank line after the request line still ends the head.
        assert!(!names_both(
            b"GET http://a.example/ HTTP/1.1\r\n\r\nContent-Length: 1\r\nTransfer-Encoding: x\r\n"
        ));
    }
}
