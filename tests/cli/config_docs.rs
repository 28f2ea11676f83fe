//! `docs/configuration.md` stays true: its example loads, and it documents every key that
//! `config show` prints.

use std::collections::BTreeSet;

use zeroclaw::config::Config;

const DOC: &str = include_str!("../../docs/configuration.md");

/// The body of the first ```toml block after `heading`.
fn toml_block_after(heading: &str) -> &'static str {
    let section = &DOC[DOC.find(heading).expect("heading present")..];
    let start = section.find("```toml\n").expect("toml block") + "```toml\n".len();
    let len = section[start..].find("```").expect("closing fence");
    &section[start..start + len]
}

#[test]
fn the_example_config_loads() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.toml"),
        toml_block_after("## Example"),
    )
    .unwrap();
    let config = Config::load_with_env(dir.path(), Vec::new()).expect("documented example loads");
    assert_eq!(config.acp.default_agent.as_deref(), Some("coder"));
    assert!(!config.agents["reviewer"].enabled);
}

#[test]
fn every_resolved_key_is_documented() {
    let dir = tempfile::tempdir().unwrap();
    let env = [
        ("ZEROCLAW_providers__openrouter__api_key", "x"),
        ("ZEROCLAW_agents__a__provider", "openrouter"),
        ("ZEROCLAW_agents__a__model", "m"),
        ("ZEROCLAW_agents__a__system_prompt", "p"),
        ("ZEROCLAW_acp__default_agent", "a"),
    ];
    let config =
        Config::load_with_env(dir.path(), env.map(|(k, v)| (k.to_owned(), v.to_owned()))).unwrap();
    let tree = toml::Value::try_from(&config).unwrap();
    let mut keys = BTreeSet::new();
    collect_leaf_keys(&tree, &mut keys);
    for key in keys {
        assert!(
            DOC.contains(&format!("`{key}`")),
            "docs/configuration.md does not document `{key}`"
        );
    }
}

fn collect_leaf_keys(value: &toml::Value, out: &mut BTreeSet<String>) {
    if let toml::Value::Table(table) = value {
        for (key, v) in table {
            if v.is_table() {
                collect_leaf_keys(v, out);
            } else {
                out.insert(key.clone());
            }
        }
    }
}
