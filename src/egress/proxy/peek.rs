//! Reading ahead without losing anything: [`body_prefix`] reads a request body's first bytes
//! (for the placeholder check) and gives back a body replaying them before the rest;
//! [`Replayed`] is a client stream whose first bytes (a ClientHello already read for its SNI)
//! are read again before the socket's, for the TLS server of an intercepted tunnel.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use http_body_util::{BodyExt, BodyStream, StreamBody};
use hyper::body::{Frame, Incoming};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The proxy's body type.
pub(super) type Body = http_body_util::combinators::BoxBody<Bytes, hyper::Error>;

/// The first bytes of `body` (at least `limit` of them unless it is shorter; whole frames),
/// and the body replaying every frame read before the rest.
pub(super) async fn body_prefix(
    mut body: Incoming,
    limit: usize,
) -> Result<(Bytes, Body), hyper::Error> {
    let mut prefix = BytesMut::new();
    let mut frames: Vec<Frame<Bytes>> = Vec::new();
    let mut ended = false;
    while prefix.len() < limit {
        match body.frame().await {
            Some(frame) => {
                let frame = frame?;
                if let Some(data) = frame.data_ref() {
                    prefix.extend_from_slice(data);
                }
                frames.push(frame);
            }
            None => {
                ended = true;
                break;
            }
        }
    }
    let replay = futures::stream::iter(frames.into_iter().map(Ok));
    let body = if ended {
        BodyExt::boxed(StreamBody::new(replay))
    } else {
        BodyExt::boxed(StreamBody::new(replay.chain(BodyStream::new(body))))
    };
    Ok((prefix.freeze(), body))
}

/// A stream that reads `first` before `io`; writes go to `io`.
pub(super) struct Replayed<T> {
    first: Vec<u8>,
    at: usize,
    io: T,
}

impl<T> Replayed<T> {
    pub fn new(first: Vec<u8>, io: T) -> Replayed<T> {
        Replayed { first, at: 0, io }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Replayed<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if self.at < self.first.len() {
            let n = (self.first.len() - self.at).min(buf.remaining());
            let at = self.at;
            buf.put_slice(&self.first[at..at + n]);
            self.at += n;
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Replayed<T> {
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
