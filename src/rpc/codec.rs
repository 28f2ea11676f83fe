//! Newline-delimited framing with a maximum line length.
//!
//! A line longer than the limit is discarded *while it is read* (its bytes are never kept), and
//! reported as [`FrameError::TooLong`] once its newline arrives, so the connection lives on.

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// Why a line could not become a text frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameError {
    /// The line exceeded the limit; `len` is its full length in bytes.
    TooLong { len: usize, max: usize },
    /// The line is not valid UTF-8.
    InvalidUtf8,
}

/// Reads lines from `inner`, at most `max` bytes each (excluding the newline).
pub struct LineReader<R> {
    inner: R,
    max: usize,
    buf: Vec<u8>,
    /// Length of the oversize line being skipped, if one is.
    skipping: Option<usize>,
}

impl<R: AsyncBufRead + Unpin> LineReader<R> {
    pub fn new(inner: R, max: usize) -> Self {
        Self {
            inner,
            max,
            buf: Vec::new(),
            skipping: None,
        }
    }

    /// The next non-blank line, `Ok(None)` at end of input.
    pub async fn next_frame(&mut self) -> std::io::Result<Option<Result<String, FrameError>>> {
        loop {
            match self.next_line().await? {
                None => return Ok(None),
                Some(Ok(line)) if line.trim().is_empty() => continue,
                Some(frame) => return Ok(Some(frame)),
            }
        }
    }

    async fn next_line(&mut self) -> std::io::Result<Option<Result<String, FrameError>>> {
        loop {
            let available = self.inner.fill_buf().await?;
            if available.is_empty() {
                if self.buf.is_empty() && self.skipping.is_none() {
                    return Ok(None);
                }
                return Ok(Some(self.finish_line()));
            }
            match available.iter().position(|b| *b == b'\n') {
                Some(i) => {
                    let (line, _) = available.split_at(i);
                    let line = line.to_vec();
                    self.inner.consume(i + 1);
                    self.accept(&line);
                    return Ok(Some(self.finish_line()));
                }
                None => {
                    let chunk = available.to_vec();
                    let n = chunk.len();
                    self.inner.consume(n);
                    self.accept(&chunk);
                }
            }
        }
    }

    /// Adds bytes of the current line, switching to skip mode when the line gets too long.
    fn accept(&mut self, bytes: &[u8]) {
        if let Some(len) = self.skipping.as_mut() {
            *len += bytes.len();
        } else if self.buf.len() + bytes.len() > self.max {
            self.skipping = Some(self.buf.len() + bytes.len());
            self.buf = Vec::new();
        } else {
            self.buf.extend_from_slice(bytes);
        }
    }

    fn finish_line(&mut self) -> Result<String, FrameError> {
        if let Some(len) = self.skipping.take() {
            return Err(FrameError::TooLong { len, max: self.max });
        }
        let mut bytes = std::mem::take(&mut self.buf);
        if bytes.last() == Some(&b'\r') {
            bytes.pop();
        }
        String::from_utf8(bytes).map_err(|_| FrameError::InvalidUtf8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn frames(input: &[u8], max: usize) -> Vec<Result<String, FrameError>> {
        let reader = tokio::io::BufReader::with_capacity(4, input);
        let mut lines = LineReader::new(reader, max);
        let mut out = Vec::new();
        while let Some(frame) = lines.next_frame().await.unwrap() {
            out.push(frame);
        }
        out
    }

    #[tokio::test]
    async fn splits_lines_and_skips_blank_ones() {
        let got = frames(b"{\"a\":1}\n\n  \r\n{\"b\":2}\r\n{\"c\":3}", 100).await;
        assert_eq!(
            got,
            vec![
                Ok("{\"a\":1}".to_owned()),
                Ok("{\"b\":2}".to_owned()),
                Ok("{\"c\":3}".to_owned())
            ]
        );
    }

    #[tokio::test]
    async fn oversize_line_is_reported_and_the_next_line_still_read() {
        let mut input = vec![b'x'; 50];
        input.extend_from_slice(b"\nok\n");
        let got = frames(&input, 10).await;
        assert_eq!(
            got,
            vec![
                Err(FrameError::TooLong { len: 50, max: 10 }),
                Ok("ok".to_owned())
            ]
        );
    }

    #[tokio::test]
    async fn line_of_exactly_the_limit_is_accepted() {
        let got = frames(b"0123456789\n", 10).await;
        assert_eq!(got, vec![Ok("0123456789".to_owned())]);
    }

    #[tokio::test]
    async fn invalid_utf8_is_reported() {
        let got = frames(b"\xff\xfe\nok\n", 100).await;
        assert_eq!(got, vec![Err(FrameError::InvalidUtf8), Ok("ok".to_owned())]);
    }
}
