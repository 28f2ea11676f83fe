//! Output caps: what a tool hands the model is bounded, and a cut says so.

/// Bytes of one stream (stdout, stderr, a file) the model sees at most.
pub const MODEL_TEXT_CAP: usize = 30 * 1024;

/// `bytes` as text, cut at `cap` bytes on a char boundary with a marker naming what was cut.
pub fn capped(bytes: &[u8], cap: usize) -> String {
    let text = String::from_utf8_lossy(bytes);
    if text.len() <= cap {
        return text.into_owned();
    }
    let mut end = cap;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n[... truncated: {} more bytes not shown ...]",
        &text[..end],
        text.len() - end
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_text_is_cut_with_a_marker() {
        assert_eq!(capped(b"short", 10), "short");
        let cut = capped("é".repeat(10).as_bytes(), 5);
        assert!(
            cut.starts_with("éé\n[... truncated: 16 more bytes"),
            "{cut}"
        );
    }
}
