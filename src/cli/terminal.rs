//! What the human-readable CLI commands print on stdout: every line goes through [`Terminal`],
//! which shows control characters a model, a client or a file chose as visible escapes (a
//! newline cannot forge a line, an escape sequence cannot retitle the window or write the
//! clipboard), and turns a closed stdout (`| head`) into [`StdoutClosed`], which `main` ends
//! quietly with [`EXIT_STDOUT_CLOSED`]. Machine output (`--json`, `audit export`) is written
//! with [`Terminal::raw`]: exact bytes, the same closed-pipe handling; JSON or TOML shown to a
//! person goes through [`structured_for_terminal`] first.

use std::borrow::Cow;
use std::fmt::{self, Write as _};
use std::io::{ErrorKind, Write};

/// The exit status of a command whose reader went away: 128 + SIGPIPE, what a shell reports
/// for a program the signal ended.
pub const EXIT_STDOUT_CLOSED: u8 = 141;

/// The reader of stdout closed it before the command was done printing.
#[derive(Debug)]
pub struct StdoutClosed;

impl fmt::Display for StdoutClosed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("stdout was closed")
    }
}

impl std::error::Error for StdoutClosed {}

/// Whether `error` is a closed stdout (to end quietly rather than report it).
pub fn is_stdout_closed(error: &anyhow::Error) -> bool {
    error.downcast_ref::<StdoutClosed>().is_some()
}

/// The process's stdout, locked, for one command's output.
pub struct Terminal {
    out: std::io::StdoutLock<'static>,
}

/// [`Terminal`] on the process's stdout.
pub fn stdout() -> Terminal {
    Terminal {
        out: std::io::stdout().lock(),
    }
}

impl Terminal {
    /// One line of human-readable text, its controls (newlines too) escaped.
    pub fn line(&mut self, text: impl fmt::Display) -> anyhow::Result<()> {
        let text = text.to_string();
        self.raw(&(escape(&text).into_owned() + "\n"))
    }

    /// A block the command laid out in lines itself (doctor's tables): each line
    /// printed as by [`line`](Self::line).
    pub fn lines(&mut self, text: &str) -> anyhow::Result<()> {
        let mut shown = String::with_capacity(text.len() + 1);
        for line in text.strip_suffix('\n').unwrap_or(text).split('\n') {
            shown.push_str(&escape(line));
            shown.push('\n');
        }
        self.raw(&shown)
    }

    /// Machine output (JSON, JSON lines), exactly as given.
    pub fn raw(&mut self, text: &str) -> anyhow::Result<()> {
        self.out
            .write_all(text.as_bytes())
            .and_then(|()| self.out.flush())
            .map_err(closed_or_error)
    }
}

fn closed_or_error(error: std::io::Error) -> anyhow::Error {
    if error.kind() == ErrorKind::BrokenPipe {
        anyhow::Error::new(StdoutClosed)
    } else {
        anyhow::Error::new(error).context("writing to stdout")
    }
}

/// `text` with every character a terminal would act on shown as an escape: `\n`, `\r`, `\t`,
/// the other C0 controls, DEL and ESC as `\x1b`-style, C1 controls and the line, paragraph and
/// bidirectional-override characters as `\u{9b}`-style. Backslashes stay as they are (an
/// exact value is in the command's JSON output).
pub fn escape(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_ascii_control() => {
                let _ = write!(out, "\\x{:02x}", u32::from(c));
            }
            c if needs_escape(c) => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// JSON or TOML text (as `serde_json` and `toml` write it, escaping the C0 controls in
/// strings) with the characters they leave raw that a terminal acts on (DEL, C1 controls, line
/// and bidi controls) written as `\uXXXX`, an escape both formats read: the same values, safe
/// to show. Such characters only occur inside strings (a TOML literal string, which has no
/// escapes, then shows the escape itself); a raw C0 control is the layout's own whitespace.
pub fn structured_for_terminal(json: &str) -> Cow<'_, str> {
    let escaped = |c: char| needs_escape(c) && u32::from(c) >= 0x20;
    if !json.chars().any(escaped) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 8);
    for c in json.chars() {
        if escaped(c) {
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_shown_as_escapes() {
        assert_eq!(escape("plain text / ü ✓"), "plain text / ü ✓");
        assert_eq!(escape("a\nb\r\tc"), "a\\nb\\r\\tc");
        assert_eq!(escape("\u{1b}]0;title\u{7}"), "\\x1b]0;title\\x07");
        assert_eq!(escape("\u{7f}\u{9b}31m"), "\\x7f\\u{9b}31m");
        assert_eq!(escape("a\u{202e}b\u{2028}"), "a\\u{202e}b\\u{2028}");
        assert_eq!(escape("keep \\n"), "keep \\n");
    }

    #[test]
    fn json_keeps_its_values() {
        let value = serde_json::json!({"c": "x\u{9b}\u{1b}]52;c;aGk=\u{7}\n\u{7f}"});
        let text = serde_json::to_string_pretty(&value).unwrap();
        let shown = structured_for_terminal(&text);
        assert!(
            !shown.contains(['\u{9b}', '\u{1b}', '\u{7}', '\u{7f}']),
            "{shown}"
        );
        let back: serde_json::Value = serde_json::from_str(&shown).unwrap();
        assert_eq!(back, value);
    }
}
