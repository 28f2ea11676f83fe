//! A server-sent-events decoder that accepts its input split at any byte.
//!
//! Lines end in LF, CRLF or CR (also when the CR and LF arrive in different pieces); `:` lines
//! are comments; several `data:` lines join with `\n`; a blank line dispatches the event.
//! Only `data` matters for chat completions, so other fields are ignored.

/// The longest line accepted; a longer one means the server is broken or hostile.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// Incremental decoder: [`SseDecoder::feed`] bytes as they arrive, then [`SseDecoder::finish`].
#[derive(Debug, Default)]
pub struct SseDecoder {
    line: Vec<u8>,
    data: Option<String>,
    after_cr: bool,
}

/// The input broke the SSE framing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    #[error("an SSE line is longer than {MAX_LINE_BYTES} bytes")]
    LineTooLong,
    #[error("an SSE line is not valid UTF-8")]
    InvalidUtf8,
}

impl SseDecoder {
    pub fn new() -> SseDecoder {
        SseDecoder::default()
    }

    /// Consumes `bytes` and returns the data of every event they completed.
    pub fn feed(&mut self, mut bytes: &[u8]) -> Result<Vec<String>, SseError> {
        let mut events = Vec::new();
        while let Some((&first, rest)) = bytes.split_first() {
            if std::mem::take(&mut self.after_cr) && first == b'\n' {
                bytes = rest; // the LF of a CRLF split from its CR
                continue;
            }
            let Some(end) = bytes.iter().position(|&b| b == b'\n' || b == b'\r') else {
                self.push(bytes)?;
                break;
            };
            self.push(&bytes[..end])?;
            self.after_cr = bytes[end] == b'\r';
            self.end_line(&mut events)?;
            bytes = &bytes[end + 1..];
        }
        Ok(events)
    }

    /// Ends the input: an event still being built (no trailing blank line) is dispatched.
    pub fn finish(&mut self) -> Result<Option<String>, SseError> {
        let mut events = Vec::new();
        if !self.line.is_empty() {
            self.end_line(&mut events)?;
        }
        Ok(events.pop().or_else(|| self.data.take()))
    }

    fn push(&mut self, piece: &[u8]) -> Result<(), SseError> {
        if self.line.len() + piece.len() > MAX_LINE_BYTES {
            return Err(SseError::LineTooLong);
        }
        self.line.extend_from_slice(piece);
        Ok(())
    }

    fn end_line(&mut self, events: &mut Vec<String>) -> Result<(), SseError> {
        let line = std::mem::take(&mut self.line);
        if line.is_empty() {
            events.extend(self.data.take());
            return Ok(());
        }
        let line = String::from_utf8(line).map_err(|_| SseError::InvalidUtf8)?;
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line.as_str(), ""),
        };
        if field == "data" {
            match &mut self.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => self.data = Some(value.to_owned()),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `input` in pieces of `size` bytes and collects every event.
    fn decode_in_pieces(input: &[u8], size: usize) -> Vec<String> {
        let mut decoder = SseDecoder::new();
        let mut events = Vec::new();
        for piece in input.chunks(size) {
            events.extend(decoder.feed(piece).unwrap());
        }
        events.extend(decoder.finish().unwrap());
        events
    }

    fn decode_every_split(input: &str, expected: &[&str]) {
        for size in 1..=input.len() {
            assert_eq!(
                decode_in_pieces(input.as_bytes(), size),
                expected,
                "pieces of {size}"
            );
        }
    }

    #[test]
    fn events_survive_every_split_point() {
        let input = "data: {\"a\":1}\n\ndata: {\"b\":\"é✓\"}\n\ndata: [DONE]\n\n";
        decode_every_split(input, &["{\"a\":1}", "{\"b\":\"é✓\"}", "[DONE]"]);
    }

    #[test]
    fn crlf_and_bare_cr_line_endings_work_when_split() {
        decode_every_split("data: x\r\n\r\ndata: y\r\rdata: z\n\n", &["x", "y", "z"]);
    }

    #[test]
    fn comments_and_other_fields_are_ignored() {
        let input = ": keep-alive\n\nevent: message\nid: 7\nretry: 10\ndata: x\n\n: OPENROUTER PROCESSING\n\n";
        decode_every_split(input, &["x"]);
    }

    #[test]
    fn multi_line_data_joins_with_newlines() {
        decode_every_split("data: a\ndata:b\ndata\n\n", &["a\nb\n"]);
    }

    #[test]
    fn a_final_event_without_blank_line_is_still_delivered() {
        decode_every_split("data: a\n\ndata: last", &["a", "last"]);
    }

    #[test]
    fn a_blank_line_without_data_dispatches_nothing() {
        decode_every_split("\n\n\r\n: c\n\n", &[]);
    }

    #[test]
    fn an_endless_line_is_refused() {
        let mut decoder = SseDecoder::new();
        let piece = vec![b'x'; 1024 * 1024];
        let result = (0..=16).try_for_each(|_| decoder.feed(&piece).map(drop));
        assert_eq!(result, Err(SseError::LineTooLong));
    }

    #[test]
    fn invalid_utf8_in_a_line_is_an_error() {
        let mut decoder = SseDecoder::new();
        assert_eq!(decoder.feed(b"data: \xff\n"), Err(SseError::InvalidUtf8));
    }
}
