//! The `config.reload` record: what a configuration reload changed, as the dotted names of
//! the sections and entries that differ (`agents.b`, `providers.local`, `gateway.require_auth`),
//! never their values, so a changed API key shows only as its provider's name.

use serde_json::Value;

use crate::config::Config;

/// The names, at most two levels deep, under which `old` and `new` differ, sorted.
pub fn changed_sections(old: &Config, new: &Config) -> Vec<String> {
    let (old, new) = match (serde_json::to_value(old), serde_json::to_value(new)) {
        (Ok(old), Ok(new)) => (old, new),
        _ => return vec!["*".to_owned()],
    };
    let mut changed = Vec::new();
    diff("", &old, &new, 2, &mut changed);
    changed.sort();
    changed
}

fn diff(prefix: &str, old: &Value, new: &Value, depth: usize, out: &mut Vec<String>) {
    if old == new {
        return;
    }
    let (Value::Object(a), Value::Object(b), true) = (old, new, depth > 0) else {
        out.push(prefix.to_owned());
        return;
    };
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    for key in keys {
        let name = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        let missing = Value::Null;
        diff(
            &name,
            a.get(key).unwrap_or(&missing),
            b.get(key).unwrap_or(&missing),
            depth - 1,
            out,
        );
    }
}

/// A reload that was applied, with the sections it changed.
pub fn applied(old: &Config, new: &Config) -> super::Event {
    super::Event::new("config.reload")
        .with("outcome", "applied")
        .with("changed", changed_sections(old, new))
}

/// A reload refused because the new configuration did not load (the previous one stays). The
/// error text is not recorded: a parse error quotes the file, which may hold a key.
pub fn rejected() -> super::Event {
    super::Event::new("config.reload").with("outcome", "rejected")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_changed_entries_without_values() {
        let dir = tempfile::tempdir().unwrap();
        let old = Config::load_with_env(dir.path(), Vec::new()).unwrap();
        let mut new = old.clone();
        new.audit.mode = crate::config::AuditMode::BestEffort;
        new.workspace_dir = "/elsewhere".into();
        assert_eq!(
            changed_sections(&old, &new),
            ["audit.mode", "workspace_dir"]
        );
        assert!(changed_sections(&old, &old).is_empty());
    }
}
