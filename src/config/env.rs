//! The `ZEROCLAW_<path>` environment overlay: which variables are config keys, their paths, and
//! their values parsed as TOML scalars or arrays.

use super::ConfigError;

const PREFIX: &str = "ZEROCLAW_";

/// `ZEROCLAW_*` variables that configure the process itself and are not config keys.
pub const RESERVED_ENV_VARS: &[&str] = &[
    "ZEROCLAW_CONFIG_DIR",
    "ZEROCLAW_ACP_BRIDGE_TOKEN",
    "ZEROCLAW_LOG",
];

/// Sections whose second path segment is a user-chosen name, kept verbatim (not lowercased).
const MAP_SECTIONS: &[&str] = &["providers", "agents"];

/// One overlay entry: `ZEROCLAW_acp__max_sessions=20` is `["acp", "max_sessions"]` = `20`.
#[derive(Debug, Clone, PartialEq)]
pub struct EnvEntry {
    pub var: String,
    pub path: Vec<String>,
    pub value: toml::Value,
    /// The variable's text as given, for string keys whose value parsed as another scalar.
    pub literal: String,
}

/// The `ZEROCLAW_*` variables of this process; a non-UTF-8 one is an error naming it.
pub fn process_env() -> Result<Vec<(String, String)>, ConfigError> {
    let mut vars = Vec::new();
    for (name, value) in std::env::vars_os() {
        let Some(name) = name.to_str().filter(|n| n.starts_with(PREFIX)) else {
            continue;
        };
        let value = value.into_string().map_err(|_| ConfigError::EnvVar {
            var: name.to_owned(),
            message: "value is not valid UTF-8".to_owned(),
        })?;
        vars.push((name.to_owned(), value));
    }
    Ok(vars)
}

/// The overlay entries among `vars`, in a stable order (sorted by variable name).
pub fn overlay(vars: Vec<(String, String)>) -> Result<Vec<EnvEntry>, ConfigError> {
    let mut entries = Vec::new();
    for (var, value) in vars {
        let Some(tail) = var.strip_prefix(PREFIX) else {
            continue;
        };
        if RESERVED_ENV_VARS.contains(&var.as_str()) {
            continue;
        }
        let path = key_path(&var, tail)?;
        entries.push(EnvEntry {
            value: scalar(&value),
            literal: value,
            path,
            var,
        });
    }
    entries.sort_by(|a, b| a.var.cmp(&b.var));
    Ok(entries)
}

/// Splits the tail on `__`; schema names are lowercased, provider and agent names kept as is.
fn key_path(var: &str, tail: &str) -> Result<Vec<String>, ConfigError> {
    let segments: Vec<&str> = tail.split("__").collect();
    if segments.iter().any(|s| s.is_empty()) {
        return Err(ConfigError::EnvVar {
            var: var.to_owned(),
            message:
                "empty key segment (use `__` between segments, e.g. ZEROCLAW_acp__max_sessions)"
                    .to_owned(),
        });
    }
    let section = segments[0].to_lowercase();
    let keeps_name = |i: usize| i == 1 && MAP_SECTIONS.contains(&section.as_str());
    Ok(segments
        .iter()
        .enumerate()
        .map(|(i, s)| {
            if keeps_name(i) {
                (*s).to_owned()
            } else {
                s.to_lowercase()
            }
        })
        .collect())
}

/// A TOML scalar (integer, float, boolean, quoted string, datetime) or array
/// (`["unix:/run/z.sock", "tcp:127.0.0.1:1"]`), else the raw string. Tables are not values.
fn scalar(raw: &str) -> toml::Value {
    let parsed = format!("v = {raw}")
        .parse::<toml::Table>()
        .ok()
        .and_then(|mut t| t.remove("v"));
    match parsed {
        Some(v) if !matches!(v, toml::Value::Table(_)) => v,
        _ => toml::Value::String(raw.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(var: &str, value: &str) -> EnvEntry {
        let mut e = overlay(vec![(var.to_owned(), value.to_owned())]).unwrap();
        assert_eq!(e.len(), 1, "{var} should be an overlay key");
        e.remove(0)
    }

    #[test]
    fn integer_values_parse_as_integers() {
        let e = one("ZEROCLAW_acp__max_sessions", "20");
        assert_eq!(e.path, ["acp", "max_sessions"]);
        assert_eq!(e.value, toml::Value::Integer(20));
    }

    #[test]
    fn unparsable_values_are_strings() {
        assert_eq!(
            one("ZEROCLAW_agents__a__model", "anthropic/claude-sonnet-4.6").value,
            toml::Value::String("anthropic/claude-sonnet-4.6".into())
        );
        assert_eq!(
            one("ZEROCLAW_x", "http://127.0.0.1:1/v1").value,
            toml::Value::String("http://127.0.0.1:1/v1".into())
        );
        assert_eq!(
            one("ZEROCLAW_x", "{a = 1}").value,
            toml::Value::String("{a = 1}".into())
        );
    }

    #[test]
    fn arrays_parse_as_toml_arrays() {
        let e = one(
            "ZEROCLAW_gateway__listen",
            r#"["unix:/run/z.sock", "tcp:[::1]:9"]"#,
        );
        assert_eq!(e.path, ["gateway", "listen"]);
        assert_eq!(
            e.value,
            toml::Value::Array(vec!["unix:/run/z.sock".into(), "tcp:[::1]:9".into()])
        );
        assert_eq!(
            one("ZEROCLAW_x", "[1, 2]").value,
            toml::Value::Array(vec![1.into(), 2.into()])
        );
    }

    #[test]
    fn booleans_floats_and_quoted_strings_parse() {
        assert_eq!(one("ZEROCLAW_x", "true").value, toml::Value::Boolean(true));
        assert_eq!(one("ZEROCLAW_x", "1.5").value, toml::Value::Float(1.5));
        assert_eq!(
            one("ZEROCLAW_x", "\"42\"").value,
            toml::Value::String("42".into())
        );
    }

    #[test]
    fn map_names_keep_single_underscores_and_case() {
        let e = one("ZEROCLAW_providers__My_Local__BASE_URL", "x");
        assert_eq!(e.path, ["providers", "My_Local", "base_url"]);
    }

    #[test]
    fn reserved_and_foreign_variables_are_not_overlay_keys() {
        let vars = [
            "ZEROCLAW_CONFIG_DIR",
            "ZEROCLAW_LOG",
            "PATH",
            "ZEROCLAW_ACP_BRIDGE_TOKEN",
        ];
        let entries = overlay(vars.iter().map(|v| (v.to_string(), "1".into())).collect());
        assert!(entries.unwrap().is_empty());
    }

    #[test]
    fn empty_segments_are_errors_naming_the_variable() {
        let err = overlay(vec![("ZEROCLAW_acp____x".into(), "1".into())]).unwrap_err();
        assert!(err.to_string().contains("ZEROCLAW_acp____x"), "{err}");
    }
}
