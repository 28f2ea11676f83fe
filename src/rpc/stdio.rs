//! The stdio transport: NDJSON lines on stdin, one writer owning stdout.
//!
//! The writer drains everything queued, writes it, and flushes once the queue is empty: a burst
//! (a replayed history, a fast stream) costs one flush, a lone message is flushed at once.
//! For the process's own stdout the writer is a blocking thread on `std::io::Stdout`, which
//! avoids a hop through Tokio's blocking pool for every message; likewise the process's stdin
//! is read by a thread of its own, which hands each piece read to the serving loop
//! ([`Pieces`]): Tokio's `Stdin` woke a blocking-pool thread for every read, so each request
//! cost a thread wake-up more.

use std::io::{Read, Write};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncBufRead, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use super::codec::LineReader;
use super::{Handler, Peer, serve};

/// Outgoing messages waiting for the writer; senders wait when it is full.
const OUTGOING_QUEUE: usize = 1024;
const READ_BUFFER: usize = 64 * 1024;
/// Pieces of input read ahead of the serving loop; the reader waits when they are not taken.
const INCOMING_QUEUE: usize = 4;
/// A burst is written in pieces of about this size.
const WRITE_BATCH: usize = 256 * 1024;

/// Serves `handler` on the process's stdin/stdout until end of input and every request has
/// been answered; returns once everything queued has been written.
pub async fn run_process_stdio<H: Handler>(max_line_bytes: usize, handler: Arc<H>) {
    let (tx, rx) = mpsc::channel(OUTGOING_QUEUE);
    let writer = tokio::task::spawn_blocking(move || write_blocking(rx, std::io::stdout()));
    let input = Pieces::read_on_thread(std::io::stdin());
    serve_lines(input, max_line_bytes, Peer::new(tx), handler).await;
    let _ = writer.await;
}

/// Serves `handler` over any byte stream pair (tests, pipes, sockets), like
/// [`run_process_stdio`].
pub async fn run<H, R, W>(reader: R, writer: W, max_line_bytes: usize, handler: Arc<H>)
where
    H: Handler,
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (tx, rx) = mpsc::channel(OUTGOING_QUEUE);
    let writer = tokio::spawn(write_async(rx, writer));
    read_and_serve(reader, max_line_bytes, Peer::new(tx), handler).await;
    let _ = writer.await;
}

async fn read_and_serve<H, R>(reader: R, max_line_bytes: usize, peer: Peer, handler: Arc<H>)
where
    H: Handler,
    R: AsyncRead + Unpin + Send,
{
    let input = BufReader::with_capacity(READ_BUFFER, reader);
    serve_lines(input, max_line_bytes, peer, handler).await;
}

async fn serve_lines<H, R>(input: R, max_line_bytes: usize, peer: Peer, handler: Arc<H>)
where
    H: Handler,
    R: AsyncBufRead + Unpin + Send,
{
    let lines = LineReader::new(input, max_line_bytes);
    let incoming = futures::stream::unfold(lines, |mut lines| async move {
        match lines.next_frame().await {
            Ok(Some(frame)) => Some((frame, lines)),
            Ok(None) => None,
            Err(error) => {
                tracing::warn!(%error, "reading the input failed");
                None
            }
        }
    });
    serve(Box::pin(incoming), peer, handler).await;
}

/// Input read by a thread of its own (blocking reads), as the pieces it read, in order; a
/// read error ends the input with that error. The thread ends at end of input, or once this
/// is dropped and its next read returns.
struct Pieces {
    rx: mpsc::Receiver<std::io::Result<Vec<u8>>>,
    piece: Vec<u8>,
    pos: usize,
}

impl Pieces {
    fn read_on_thread(input: impl Read + Send + 'static) -> Pieces {
        let (tx, rx) = mpsc::channel(INCOMING_QUEUE);
        let spawned = std::thread::Builder::new()
            .name("zeroclaw-stdin".into())
            .spawn(move || read_blocking(input, tx));
        if let Err(error) = spawned {
            // Without the thread there is no input: served as end of input, with the reason.
            tracing::error!(%error, "cannot start the input reader thread");
        }
        Pieces {
            rx,
            piece: Vec::new(),
            pos: 0,
        }
    }
}

fn read_blocking(mut input: impl Read, tx: mpsc::Sender<std::io::Result<Vec<u8>>>) {
    let mut buf = vec![0u8; READ_BUFFER];
    loop {
        let piece = match input.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => Ok(buf[..n].to_vec()),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => Err(e),
        };
        let failed = piece.is_err();
        if tx.blocking_send(piece).is_err() || failed {
            return;
        }
    }
}

impl AsyncRead for Pieces {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let available = ready!(self.as_mut().poll_fill_buf(cx))?;
        let n = available.len().min(out.remaining());
        out.put_slice(&available[..n]);
        self.consume(n);
        Poll::Ready(Ok(()))
    }
}

impl AsyncBufRead for Pieces {
    fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<&[u8]>> {
        let this = self.get_mut();
        while this.pos == this.piece.len() {
            match ready!(this.rx.poll_recv(cx)) {
                Some(Ok(piece)) => (this.piece, this.pos) = (piece, 0),
                Some(Err(error)) => return Poll::Ready(Err(error)),
                None => return Poll::Ready(Ok(&[])),
            }
        }
        Poll::Ready(Ok(&this.piece[this.pos..]))
    }

    fn consume(self: Pin<&mut Self>, amt: usize) {
        let this = self.get_mut();
        this.pos = (this.pos + amt).min(this.piece.len());
    }
}

/// Appends `line` and everything already queued behind it (up to a batch) to `buf`.
fn take_batch(first: String, rx: &mut mpsc::Receiver<String>, buf: &mut Vec<u8>) {
    buf.extend_from_slice(first.as_bytes());
    buf.push(b'\n');
    while buf.len() < WRITE_BATCH {
        match rx.try_recv() {
            Ok(line) => {
                buf.extend_from_slice(line.as_bytes());
                buf.push(b'\n');
            }
            Err(_) => break,
        }
    }
}

fn write_blocking(mut rx: mpsc::Receiver<String>, out: impl Write) {
    let mut out = out;
    let mut buf = Vec::new();
    while let Some(line) = rx.blocking_recv() {
        buf.clear();
        take_batch(line, &mut rx, &mut buf);
        if let Err(error) = out.write_all(&buf).and_then(|()| out.flush()) {
            tracing::warn!(%error, "writing to the client failed; dropping output");
            return;
        }
    }
}

async fn write_async<W: AsyncWrite + Unpin>(mut rx: mpsc::Receiver<String>, mut out: W) {
    let mut buf = Vec::new();
    while let Some(line) = rx.recv().await {
        buf.clear();
        take_batch(line, &mut rx, &mut buf);
        let written = async {
            out.write_all(&buf).await?;
            out.flush().await
        };
        if let Err(error) = written.await {
            tracing::warn!(%error, "writing to the client failed; dropping output");
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads `pieces` one per call, then fails with `error` (or ends when `None`).
    struct Scripted {
        pieces: std::collections::VecDeque<&'static [u8]>,
        error: Option<std::io::ErrorKind>,
    }

    impl Read for Scripted {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            match self.pieces.pop_front() {
                Some(piece) => {
                    buf[..piece.len()].copy_from_slice(piece);
                    Ok(piece.len())
                }
                None => match self.error.take() {
                    Some(kind) => Err(kind.into()),
                    None => Ok(0),
                },
            }
        }
    }

    async fn frames(input: Scripted, max: usize) -> (Vec<String>, std::io::Result<()>) {
        let mut lines = LineReader::new(Pieces::read_on_thread(input), max);
        let mut frames = Vec::new();
        loop {
            match lines.next_frame().await {
                Ok(Some(Ok(line))) => frames.push(line),
                Ok(Some(Err(error))) => frames.push(format!("{error:?}")),
                Ok(None) => return (frames, Ok(())),
                Err(error) => return (frames, Err(error)),
            }
        }
    }

    #[tokio::test]
    async fn lines_split_across_reads_and_a_last_line_without_newline_are_framed() {
        let input = Scripted {
            pieces: [&b"{\"a\":"[..], b"1}\n\n{\"b\"", b":2}\n", b"x", b"yz"].into(),
            error: None,
        };
        let (frames, end) = frames(input, 1024).await;
        assert_eq!(frames, ["{\"a\":1}", "{\"b\":2}", "xyz"]);
        assert!(end.is_ok());
    }

    #[tokio::test]
    async fn an_oversize_line_is_reported_and_the_input_goes_on() {
        let input = Scripted {
            pieces: [&b"0123456789"[..], b"0123456789\nok\n"].into(),
            error: None,
        };
        let (frames, _) = frames(input, 8).await;
        assert_eq!(frames, ["TooLong { len: 20, max: 8 }", "ok"]);
    }

    #[tokio::test]
    async fn a_read_error_ends_the_input_with_that_error() {
        let input = Scripted {
            pieces: [&b"one\n"[..]].into(),
            error: Some(std::io::ErrorKind::PermissionDenied),
        };
        let (frames, end) = frames(input, 64).await;
        assert_eq!(frames, ["one"]);
        assert_eq!(
            end.unwrap_err().kind(),
            std::io::ErrorKind::PermissionDenied
        );
    }
}
