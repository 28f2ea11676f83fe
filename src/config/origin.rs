//! The syntax of a `[gateway] allowed_origins` entry (checked when the configuration loads;
//! `crate::gateway::origin` applies the list to requests).

/// Why `entry` cannot be an `allowed_origins` entry: an origin is `scheme://host[:port]`,
/// exactly as a browser sends it (no path, no trailing slash, no wildcard).
pub fn entry_problem(entry: &str) -> Option<String> {
    let example =
        "write it as a browser sends it, e.g. `https://app.example` or `http://localhost:5173`";
    let Some((scheme, authority)) = entry.split_once("://") else {
        return Some(format!("`{entry}` is not an origin: {example}"));
    };
    let scheme_ok = scheme
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    let authority_ok = !authority.is_empty()
        && !authority.contains(['/', '?', '#', '*', '@'])
        && !authority.contains(char::is_whitespace);
    (!scheme_ok || !authority_ok).then(|| format!("`{entry}` is not an origin: {example}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_bare_origins() {
        for good in [
            "https://app.example",
            "http://localhost:5173",
            "http://[::1]:8080",
            "vscode-webview://abc",
        ] {
            assert_eq!(entry_problem(good), None, "{good}");
        }
        for bad in [
            "app.example",
            "https://app.example/",
            "https://*.example",
            "null",
            "https://",
            "://x",
        ] {
            assert!(entry_problem(bad).is_some(), "{bad}");
        }
    }
}
