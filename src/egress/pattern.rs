//! Domain patterns of `allow_domains` / `deny_domains`: an exact name, or `*.suffix` for every
//! name under `suffix` (not `suffix` itself). Names compare lowercase, without a trailing dot
//! (a requested name is put in that form by [`super::Host::parse`]).

use std::fmt;

/// One parsed domain pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DomainPattern {
    /// Exactly this name.
    Exact(String),
    /// Any name ending in `.suffix`.
    Suffix(String),
}

impl DomainPattern {
    /// Parses `registry.example` or `*.registry.example`; the error says what is wrong.
    pub fn parse(text: &str) -> Result<DomainPattern, String> {
        let lower = text.trim().to_ascii_lowercase();
        let (suffix, name) = match lower.strip_prefix("*.") {
            Some(rest) => (true, rest.to_owned()),
            None => (false, lower),
        };
        let name = name.strip_suffix('.').unwrap_or(&name).to_owned();
        if name.parse::<std::net::IpAddr>().is_ok() {
            return Err(format!(
                "`{text}` is an IP address: list addresses in allow_cidrs"
            ));
        }
        check_name(&name).map_err(|why| format!("`{text}` is not a domain pattern: {why}"))?;
        Ok(if suffix {
            DomainPattern::Suffix(name)
        } else {
            DomainPattern::Exact(name)
        })
    }

    /// Whether `name` (canonical, from [`super::Host::parse`]) matches.
    pub fn matches(&self, name: &str) -> bool {
        match self {
            DomainPattern::Exact(exact) => name == exact,
            DomainPattern::Suffix(suffix) => name
                .strip_suffix(suffix.as_str())
                .is_some_and(|head| head.len() > 1 && head.ends_with('.')),
        }
    }
}

impl fmt::Display for DomainPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DomainPattern::Exact(name) => f.write_str(name),
            DomainPattern::Suffix(suffix) => write!(f, "*.{suffix}"),
        }
    }
}

/// Why `name` (lowercase, no trailing dot) is not a plausible DNS name, if it is not.
pub(super) fn check_name(name: &str) -> Result<(), &'static str> {
    if name.is_empty() || name.len() > 253 {
        return Err("a name has 1 to 253 characters");
    }
    for label in name.split('.') {
        if label.is_empty() || label.len() > 63 {
            return Err("every label has 1 to 63 characters");
        }
        if !label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(
                "labels hold only letters, digits, `-` and `_` (`*` only as a leading `*.`)",
            );
        }
        if label.starts_with('-') || label.ends_with('-') {
            return Err("a label neither starts nor ends with `-`");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> DomainPattern {
        DomainPattern::parse(s).unwrap()
    }

    #[test]
    fn exact_matches_only_itself() {
        assert!(p("registry.example").matches("registry.example"));
        assert!(!p("registry.example").matches("files.registry.example"));
        assert!(!p("registry.example").matches("evilregistry.example"));
    }

    #[test]
    fn wildcard_matches_names_under_the_suffix_only() {
        let w = p("*.registry.example");
        assert!(w.matches("files.registry.example"));
        assert!(w.matches("a.b.registry.example"));
        assert!(!w.matches("registry.example"));
        assert!(!w.matches("evilregistry.example"));
        assert!(!w.matches(".registry.example"));
    }

    #[test]
    fn patterns_and_names_compare_case_and_dot_insensitively() {
        assert_eq!(
            p("Registry.Example."),
            DomainPattern::Exact("registry.example".into())
        );
    }

    #[test]
    fn malformed_patterns_are_refused_with_a_reason() {
        for bad in [
            "",
            "*",
            "*.",
            "a..b",
            "a.*.b",
            "reg*.example",
            "-a.example",
            "a b",
            "10.0.0.1",
            "::1",
            "**.x",
        ] {
            assert!(DomainPattern::parse(bad).is_err(), "{bad:?} accepted");
        }
        assert!(
            DomainPattern::parse("10.0.0.1")
                .unwrap_err()
                .contains("allow_cidrs")
        );
    }
}
