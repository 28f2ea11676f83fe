//! The raw head of a client's request, as it passes to hyper: hyper settles a request that
//! carries both `Content-Length` and `Transfer-Encoding` by itself (the length is dropped), so
//! the handler could not see it; [`Scanned`] notes which framing headers the head named, for
//! the proxy to refuse the request rather than pick one. A client connection carries one
//! request (the proxy does not keep it alive), so only the first head is scanned.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

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
pub(super) struct Scanned<T> {
    io: T,
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

impl<T> Scanned<T> {
    pub fn new(io: T) -> Scanned<T> {
        Scanned {
            io,
            framing: Arc::default(),
            done: false,
            line: [0; PREFIX],
            len: 0,
            col: 0,
            started: false,
        }
    }

    pub fn framing(&self) -> Arc<Framing> {
        self.framing.clone()
    }

    pub fn into_inner(self) -> T {
        self.io
    }

    pub(super) fn scan(&mut self, bytes: &[u8]) {
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

impl<T: AsyncRead + Unpin> AsyncRead for Scanned<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let poll = Pin::new(&mut self.io).poll_read(cx, buf);
        if !self.done && buf.filled().len() > before {
            self.scan(&buf.filled()[before..]);
        }
        poll
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Scanned<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names_both(head: &[u8]) -> bool {
        let mut scanned = Scanned::new(());
        scanned.scan(head);
        scanned.framing().both()
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
