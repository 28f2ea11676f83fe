//! A stream that shows what passes through it to an [`Observer`]: each read's bytes and each
//! write's count. The one shape of the proxy's byte counting ([`super::counted`]), request-head
//! scanning ([`super::head`]) and idle watching ([`super::tunnel`]); the stream itself is
//! untouched.

use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// What an [`Observed`] stream tells.
pub(super) trait Observer {
    /// `bytes` were just read (never empty).
    fn read(&mut self, bytes: &[u8]);
    /// `n` bytes were just written.
    fn wrote(&mut self, _n: usize) {}
}

/// `io`, with its reads and writes shown to `observer`.
pub(super) struct Observed<T, O> {
    pub(super) io: T,
    pub(super) observer: O,
}

impl<T, O> Observed<T, O> {
    pub fn new(io: T, observer: O) -> Self {
        Observed { io, observer }
    }

    pub fn into_inner(self) -> T {
        self.io
    }
}

impl<T: AsyncRead + Unpin, O: Observer + Unpin> AsyncRead for Observed<T, O> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let poll = Pin::new(&mut self.io).poll_read(cx, buf);
        if buf.filled().len() > before {
            let this = &mut *self;
            this.observer.read(&buf.filled()[before..]);
        }
        poll
    }
}

impl<T: AsyncWrite + Unpin, O: Observer + Unpin> AsyncWrite for Observed<T, O> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let poll = Pin::new(&mut self.io).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = poll {
            self.observer.wrote(n);
        }
        poll
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}
