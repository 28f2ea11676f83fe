//! The stdio transport: NDJSON lines on stdin, one writer task owning stdout.

use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use super::codec::LineReader;
use super::{Handler, Peer, serve};

/// Outgoing messages waiting for the writer; senders wait when it is full.
const OUTGOING_QUEUE: usize = 1024;
const READ_BUFFER: usize = 64 * 1024;

/// Serves `handler` over a byte stream pair until `reader` reaches end of input and every
/// request has been answered; returns once everything queued has been written.
pub async fn run<H, R, W>(reader: R, writer: W, max_line_bytes: usize, handler: Arc<H>)
where
    H: Handler,
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (tx, rx) = mpsc::channel(OUTGOING_QUEUE);
    let writer_task = tokio::spawn(write_lines(rx, writer));
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
    serve(Box::pin(incoming), Peer::new(tx), handler).await;
    let _ = writer_task.await;
}

/// The single writer: each message is one line, flushed at once.
async fn write_lines<W: AsyncWrite + Unpin>(mut rx: mpsc::Receiver<String>, mut writer: W) {
    while let Some(mut line) = rx.recv().await {
        line.push('\n');
        let written = async {
            writer.write_all(line.as_bytes()).await?;
            writer.flush().await
        };
        if let Err(error) = written.await {
            tracing::warn!(%error, "writing to the client failed; dropping output");
            break;
        }
    }
}
