//! The stdio transport: NDJSON lines on stdin, one writer owning stdout.
//!
//! The writer drains everything queued, writes it, and flushes once the queue is empty: a burst
//! (a replayed history, a fast stream) costs one flush, a lone message is flushed at once.
//! For the process's own stdout the writer is a blocking thread on `std::io::Stdout`, which
//! avoids a hop through Tokio's blocking pool for every message.

use std::io::Write;
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use super::codec::LineReader;
use super::{Handler, Peer, serve};

/// Outgoing messages waiting for the writer; senders wait when it is full.
const OUTGOING_QUEUE: usize = 1024;
const READ_BUFFER: usize = 64 * 1024;
/// A burst is written in pieces of about this size.
const WRITE_BATCH: usize = 256 * 1024;

/// Serves `handler` on the process's stdin/stdout until end of input and every request has
/// been answered; returns once everything queued has been written.
pub async fn run_process_stdio<H: Handler>(max_line_bytes: usize, handler: Arc<H>) {
    let (tx, rx) = mpsc::channel(OUTGOING_QUEUE);
    let writer = tokio::task::spawn_blocking(move || write_blocking(rx, std::io::stdout()));
    read_and_serve(tokio::io::stdin(), max_line_bytes, Peer::new(tx), handler).await;
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
    let lines = LineReader::new(
        BufReader::with_capacity(READ_BUFFER, reader),
        max_line_bytes,
    );
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
