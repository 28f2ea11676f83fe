//! git's config file format, read and written (for [`super::validate`]): a parser that
//! drops what it cannot read, and a canonical renderer, so a rewritten file holds exactly the
//! entries that were kept.

/// One parsed `key = value` with its section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Lowercase section name.
    pub section: String,
    /// Subsection, case kept.
    pub sub: Option<String>,
    /// Lowercase key name.
    pub key: String,
    /// The value (`None`: a bare key, boolean true).
    pub value: Option<String>,
}

/// Parses git's config format (sections, `[a "b"]` and `[a.b]` subsections, quoting,
/// escapes, comments, continuations). Lines it cannot read are dropped, never kept.
pub fn parse(text: &str) -> Vec<Entry> {
    lines(text).into_iter().filter_map(|l| l.entry).collect()
}

/// One logical line of a config text as [`parse`] reads it (a value's continuations
/// included), for the line-preserving filter ([`super::validate::filter_config_lines`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// Its bytes in the text, its ending newline included (none at the end of the text).
    pub range: std::ops::Range<usize>,
    /// Where the entry part starts (after the section headers and whitespace), from
    /// `range.start`: the bytes before it are headers and whitespace only.
    pub entry_at: usize,
    /// Whether every header on the line was read (a line without headers: true).
    pub headers_read: bool,
    /// Whether a section was current for the entry part (one read on this line or before).
    pub in_section: bool,
    /// Whether the entry part is empty or a comment.
    pub blank: bool,
    /// The entry read from the entry part, if any.
    pub entry: Option<Entry>,
}

/// Every logical line of `text`, as [`parse`] reads it.
pub fn lines(text: &str) -> Vec<Line> {
    let mut out = Vec::new();
    let (mut section, mut sub) = (String::new(), None::<String>);
    let mut chars = text.char_indices().peekable();
    while let Some(&(start, _)) = chars.peek() {
        let mut end = text.len();
        let line: String = {
            // One logical line: a value may continue past a newline after a backslash, but
            // not a comment (git ends a comment at the newline, backslash or not). The
            // continuation stays in the line as `\` + newline (a backslash ending the file
            // reads as one too, as git reads it): whitespace before it is kept in the value.
            let mut l = String::new();
            let (mut quoted, mut comment) = (false, false);
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' if !comment => match chars.next() {
                        Some((_, '\n')) | None => l.push_str("\\\n"),
                        Some((_, n)) => {
                            l.push('\\');
                            l.push(n);
                        }
                    },
                    '\n' => {
                        end = i + 1;
                        break;
                    }
                    '"' if !comment => {
                        quoted = !quoted;
                        l.push(c);
                    }
                    '#' | ';' if !quoted => {
                        comment = true;
                        l.push(c);
                    }
                    _ => l.push(c),
                }
            }
            l
        };
        // Section headers, several on a line as git reads them (`[a][b] k = v`), then an entry.
        let mut rest = line.trim_start_matches(git_space);
        let mut headers_read = true;
        while let Some(head) = rest.strip_prefix('[') {
            match parse_section(head) {
                Some((s, b, after)) => {
                    (section, sub) = (s, b);
                    rest = after.trim_start_matches(git_space);
                }
                None => {
                    section.clear();
                    headers_read = false;
                    rest = "";
                }
            }
        }
        // `line` equals the text's bytes from `start` but for a backslash ending the text,
        // read as a continuation (one byte more, at the end): offsets from the start agree.
        let entry_at = line.len() - rest.len();
        let entry = (!section.is_empty())
            .then(|| parse_entry(&section, &sub, rest))
            .flatten();
        out.push(Line {
            range: start..end,
            entry_at,
            headers_read,
            in_section: !section.is_empty(),
            blank: rest.is_empty() || rest.starts_with(['#', ';']),
            entry,
        });
    }
    out
}

/// Whitespace as git reads it (its `isspace`): space, tab, CR, LF, and no other (a vertical
/// tab or a no-break space is part of a value).
fn git_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

/// `section]`, `section "sub"]` or `section.sub]`, and what follows on the line.
fn parse_section(head: &str) -> Option<(String, Option<String>, &str)> {
    let end_name = head.find([']', ' ', '\t', '"']).unwrap_or(head.len());
    let name = &head[..end_name];
    let rest = head[end_name..].trim_start_matches(git_space);
    let valid = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.')
    };
    if let Some(after) = rest.strip_prefix(']') {
        if !valid(name) {
            return None;
        }
        return Some(match name.split_once('.') {
            Some((s, b)) => (s.to_ascii_lowercase(), Some(b.to_ascii_lowercase()), after),
            None => (name.to_ascii_lowercase(), None, after),
        });
    }
    let quoted = rest.strip_prefix('"')?;
    let (mut subname, mut it) = (String::new(), quoted.char_indices());
    loop {
        match it.next()? {
            (_, '\\') => subname.push(it.next()?.1),
            (i, '"') => {
                let after = quoted[i + 1..]
                    .trim_start_matches(git_space)
                    .strip_prefix(']')?;
                if !valid(name) || name.contains('.') {
                    return None;
                }
                return Some((name.to_ascii_lowercase(), Some(subname), after));
            }
            // git stops at a newline; a NUL could not be written back (see `escape_sub`).
            (_, '\n' | '\0') => return None,
            (_, c) => subname.push(c),
        }
    }
}

/// `key`, `key = value` (quotes, escapes, trailing comment).
fn parse_entry(section: &str, sub: &Option<String>, line: &str) -> Option<Entry> {
    let line = line.trim_start_matches(git_space);
    if line.is_empty() || line.starts_with(['#', ';']) {
        return None;
    }
    let end = line
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .unwrap_or(line.len());
    let key = &line[..end];
    if key.is_empty() || !key.starts_with(|c: char| c.is_ascii_alphabetic()) {
        return None;
    }
    let rest = line[end..].trim_start_matches(git_space);
    let value = if rest.is_empty() || rest.starts_with(['#', ';']) {
        None
    } else {
        Some(parse_value(rest.strip_prefix('=')?)?)
    };
    Some(Entry {
        section: section.to_string(),
        sub: sub.clone(),
        key: key.to_ascii_lowercase(),
        value,
    })
}

/// A value as git reads it: whitespace outside quotes is kept between the value's characters
/// (as written, tabs and CRs included), dropped before the first and after the last; a
/// continuation counts as a character there (the whitespace before it is kept) but adds none.
fn parse_value(raw: &str) -> Option<String> {
    let (mut out, mut quoted, mut pending_space) = (String::new(), false, String::new());
    let mut it = raw.trim_start_matches(git_space).chars();
    while let Some(c) = it.next() {
        match c {
            // A quote ends trailing whitespace, as any character does: `x  ""` keeps the
            // two spaces (git resets its trim point before toggling the quote).
            '"' => {
                out.push_str(&std::mem::take(&mut pending_space));
                quoted = !quoted;
            }
            '\\' => {
                let e = match it.next()? {
                    '\n' => {
                        out.push_str(&std::mem::take(&mut pending_space));
                        continue;
                    }
                    'n' => '\n',
                    't' => '\t',
                    'b' => '\u{8}',
                    c @ ('\\' | '"') => c,
                    _ => return None,
                };
                out.push_str(&std::mem::take(&mut pending_space));
                out.push(e);
            }
            '#' | ';' if !quoted => break,
            c if git_space(c) && !quoted => {
                if !out.is_empty() {
                    pending_space.push(c);
                }
            }
            c => {
                out.push_str(&std::mem::take(&mut pending_space));
                out.push(c);
            }
        }
    }
    (!quoted).then_some(out)
}

/// The canonical text of `entries` (grouped by section, values quoted and escaped).
pub fn render(entries: &[Entry]) -> String {
    let mut out = String::new();
    let mut current: Option<(&str, Option<&str>)> = None;
    for e in entries {
        let here = (e.section.as_str(), e.sub.as_deref());
        if current != Some(here) {
            match &e.sub {
                Some(sub) => out.push_str(&format!("[{} \"{}\"]\n", e.section, escape_sub(sub))),
                None => out.push_str(&format!("[{}]\n", e.section)),
            }
            current = Some(here);
        }
        match &e.value {
            Some(v) => out.push_str(&format!("\t{} = \"{}\"\n", e.key, escape(v))),
            None => out.push_str(&format!("\t{}\n", e.key)),
        }
    }
    out
}

/// A subsection name as git reads it back: in a section header a backslash takes the next
/// character literally (`\b` is `b`, not a backspace), so only `\` and `"` are escaped and
/// every other character is written as it is (a newline or NUL, which no header holds, is
/// dropped).
fn escape_sub(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        match c {
            '\\' | '"' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\0' => {}
            c => out.push(c),
        }
    }
    out
}

fn escape(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(section: &str, sub: Option<&str>, key: &str, value: &str) -> Entry {
        Entry {
            section: section.into(),
            sub: sub.map(Into::into),
            key: key.into(),
            value: Some(value.into()),
        }
    }

    /// git reads a second header on the same line (found by the `git_paths` fuzz target: a
    /// `core.hooksPath` after `[x][core]` was missed).
    #[test]
    fn several_headers_on_a_line_are_read_as_git_reads_them() {
        assert_eq!(
            parse("[cor.e][Core] hooksPath = a\n[x] [core \"s\"]\tk = b\n"),
            [
                entry("core", None, "hookspath", "a"),
                entry("core", Some("s"), "k", "b"),
            ]
        );
    }

    /// Only git's whitespace is trimmed from a value (found by the `git_paths` fuzz target:
    /// a path ending in a vertical tab was read without it, so another path was protected).
    #[test]
    fn only_gits_whitespace_is_trimmed() {
        assert_eq!(
            parse("[include]\n\tpath = l\u{b}\n\tpath = \u{a0}x\u{c} \t\r\n"),
            [
                entry("include", None, "path", "l\u{b}"),
                entry("include", None, "path", "\u{a0}x\u{c}"),
            ]
        );
    }

    /// Whitespace before an empty quoted string is kept: a quote ends trailing whitespace as
    /// any character does (found by the `git_paths` fuzz target: a `core.hooksPath` ending in
    /// `Path ="  ""` was read without its two spaces, so another path was protected). Expected
    /// values are what git 2.47 lists.
    #[test]
    fn a_quote_ends_trailing_whitespace() {
        let cases: [(&str, &str); 5] = [
            ("a = x  \"\"", "x  "),
            ("a = x\"  \"  \"\"  ", "x    "),
            ("a = \"\"  x  \"\"", "x  "),
            ("a = x \"\" # c", "x "),
            ("a = x  ; c", "x"),
        ];
        for (line, value) in cases {
            let text = format!("[s]\n{line}\n");
            assert_eq!(parse(&text), [entry("s", None, "a", value)], "{line:?}");
        }
    }

    /// Whitespace before a continuation is kept in the value, as written; whitespace with
    /// nothing before it in the value is not (found by the `git_paths` fuzz target: an
    /// `includeIf` path ending in CRs and a backslash at the end of the file was read without
    /// the CRs before the backslash). Expected values are what git 2.47 lists.
    #[test]
    fn whitespace_before_a_continuation_is_kept_as_written() {
        let cases: [(&str, &str); 12] = [
            ("a = x \\", "x "),
            ("a = x \\\n\n", "x "),
            ("a = \"x\" \\", "x "),
            ("a = x\" \"\\", "x "),
            ("a = \"x\"  \\\ny", "x  y"),
            ("a = x \\\n \n", "x "),
            ("a = \"q\" \t\\", "q \t"),
            ("a = q \r\\", "q \r"),
            ("a = \"q\"\r\r\\\nz", "q\r\rz"),
            ("a = \\\n   x\n", "x"),
            ("a = \"\" x\n", "x"),
            ("a = \" \" x\n", "  x"),
        ];
        for (line, value) in cases {
            assert_eq!(
                parse(&format!("[s]\n{line}")),
                [entry("s", None, "a", value)],
                "{line:?}"
            );
        }
        let found =
            "[Core]\n\t\r\r[includeIf \"gitdir:~/x/\"]\n\tpath = \r\r\"/etc/outs\r\r\"\r\r\\";
        assert_eq!(
            parse(found),
            [entry(
                "includeif",
                Some("gitdir:~/x/"),
                "path",
                "/etc/outs\r\r\r\r"
            )]
        );
    }

    /// A backslash ending a comment does not continue the line (found by the `git_paths`
    /// fuzz target: the next line, a hooksPath, was read as part of the comment).
    #[test]
    fn a_comment_ends_at_its_newline_backslash_or_not() {
        assert_eq!(
            parse("[core]\n\tk = \"v\" # c\\\n\thooksPath = h\n\tq = \"a\\\nb\" ; x\\\n"),
            [
                entry("core", None, "k", "v"),
                entry("core", None, "hookspath", "h"),
                entry("core", None, "q", "ab"),
            ]
        );
    }

    /// A subsection name holding a NUL is not read (it could not be written back; found by
    /// the `git_config` fuzz target: the rewritten file named one section twice).
    #[test]
    fn a_subsection_with_a_nul_is_not_read() {
        assert_eq!(parse("[remote \"a\0\"]\n\turl = x\n"), []);
    }

    /// A subsection name with a backspace renders to a header that parses back to the same
    /// name (found by the `git_config` fuzz target: it was written `\b`, which a header
    /// reads as `b`).
    #[test]
    fn rendered_subsections_parse_back_to_the_same_name() {
        for sub in ["mai\u{8}n", "a\\b", "q\"t", "tab\there", "]"] {
            let kept = [entry("branch", Some(sub), "remote", "origin")];
            assert_eq!(parse(&render(&kept)), kept, "{sub:?}");
        }
    }
}
