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

/// Dotted names in code spans that start like a section but are not configuration keys
/// (besides the audit record kinds, which [`record_kinds`] reads from docs/audit.md).
const NOT_KEYS: &[(&str, &str)] = &[
    ("audit.db", "the SQLite file of the audit log"),
    ("audit.head", "the audit log's anchor file"),
    ("audit.db.reserve", "the audit log's reserve file"),
];

/// The audit record kinds docs/audit.md's kind table names (its rows start with the kinds in
/// code spans): `sandbox.failure`, `audit.import`, … read like keys but are not.
fn record_kinds() -> BTreeSet<String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let audit = std::fs::read_to_string(root.join("docs/audit.md")).unwrap();
    audit
        .lines()
        .filter_map(|line| line.strip_prefix("| `"))
        .filter_map(|row| row.split(" | ").next())
        .flat_map(|cell| cell.split(", "))
        .map(|kind| kind.trim_matches('`').to_owned())
        .collect()
}

/// Override tables whose keys are those of another section (the reference's row for the
/// override says "any `[autonomy]` key").
const OVERRIDES: &[(&str, &str)] = &[("agents.<alias>.autonomy", "autonomy")];

/// A configuration key (or, with `key` `None`, a section) a document names.
#[derive(Debug)]
struct Mention {
    file: String,
    section: String,
    key: Option<String>,
}

/// What the reference's table documents: its sections and `(section, key)` pairs.
struct Reference {
    sections: BTreeSet<String>,
    keys: BTreeSet<(String, String)>,
}

impl Reference {
    /// The rows of the key table: `` | `[section]` `key`, `key2` | … ``, or a section alone;
    /// a top-level key (`` | `workspace_dir` | ``) under the section "".
    fn parse() -> Reference {
        let (mut sections, mut keys) = (BTreeSet::new(), BTreeSet::new());
        for line in DOC.lines().filter(|l| l.starts_with("| `")) {
            let first_cell = line[1..].split(" | ").next().unwrap_or("");
            let spans = code_spans(first_cell);
            let (section, names) = match spans.first().and_then(|(_, s)| header(s)) {
                Some((section, _, "")) => (section, &spans[1..]),
                Some(_) => continue,
                None => (String::new(), &spans[..]),
            };
            for (_, name) in names {
                if is_key(name) {
                    keys.insert((section.clone(), (*name).to_owned()));
                }
            }
            sections.insert(section);
        }
        Reference { sections, keys }
    }

    /// The sections whose entries are names the operator chooses (`agents.<alias>`): `agents`.
    fn named_maps(&self) -> Vec<(&str, &str)> {
        self.sections
            .iter()
            .filter_map(|s| {
                let (map, placeholder) = s.split_once(".<")?;
                let placeholder = placeholder.split('.').next()?;
                Some((map, placeholder.trim_end_matches('>')))
            })
            .collect()
    }

    /// `section` with a chosen name (`agents.coder`) written as the reference's placeholder.
    fn normalize(&self, section: &str) -> String {
        let segments: Vec<&str> = section.split('.').collect();
        let mut out: Vec<String> = Vec::new();
        for (i, segment) in segments.iter().enumerate() {
            let parent = segments[..i].join(".");
            let named = self.named_maps().into_iter().find(|(m, _)| *m == parent);
            match named {
                Some((_, placeholder)) if i > 0 => out.push(format!("<{placeholder}>")),
                _ => out.push((*segment).to_owned()),
            }
        }
        out.join(".")
    }

    fn documents(&self, section: &str, key: Option<&str>) -> bool {
        let Some(key) = key else {
            let as_key = section
                .rsplit_once('.')
                .is_some_and(|(s, k)| self.keys.contains(&(s.to_owned(), k.to_owned())));
            let parent = self
                .sections
                .iter()
                .any(|s| s.starts_with(&format!("{section}.")));
            return self.sections.contains(section) || as_key || parent;
        };
        let pair = |s: &str| self.keys.contains(&(s.to_owned(), key.to_owned()));
        pair(section)
            || OVERRIDES.iter().any(|(o, base)| *o == section && pair(base))
            // `agents.coder` names an agent, documented as `[agents.<alias>]`.
            || self.named_maps().iter().any(|(m, _)| *m == section)
    }
}

/// The inline code spans of `text` outside fenced blocks, each with the offset of its end;
/// ``double`` spans count as one.
fn code_spans(text: &str) -> Vec<(usize, &str)> {
    let mut spans = Vec::new();
    let mut offset = 0;
    let mut fenced = false;
    for line in text.split_inclusive('\n') {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            let mut rest = 0;
            while let Some(open) = line[rest..].find('`') {
                let start = rest + open;
                let fence = if line[start..].starts_with("``") {
                    "``"
                } else {
                    "`"
                };
                let body = start + fence.len();
                let Some(len) = line[body..].find(fence) else {
                    break;
                };
                spans.push((offset + body + len + fence.len(), &line[body..body + len]));
                rest = body + len + fence.len();
            }
        }
        offset += line.len();
    }
    spans
}

/// A `[section]` / `[[section]]` header at the start of a span: the section (placeholders
/// kept), whether it is an array of tables, and what follows it.
fn header(span: &str) -> Option<(String, bool, &str)> {
    let array = span.starts_with("[[");
    let open = if array { 2 } else { 1 };
    let close = if array { "]]" } else { "]" };
    let inner = span.strip_prefix(&"[["[..open])?;
    let end = inner.find(close)?;
    let section = &inner[..end];
    let valid = section.split('.').enumerate().all(|(i, s)| {
        let placeholder =
            i > 0 && s.starts_with('<') && s.ends_with('>') && is_key(&s[1..s.len() - 1]);
        placeholder || (is_key(s) && (i > 0 || s.starts_with(|c: char| c.is_ascii_lowercase())))
    });
    valid.then(|| (section.to_owned(), array, &inner[end + close.len()..]))
}

fn is_key(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// The key after a header: `` `[s] key` ``, `` `[s] key = v` ``, `` `[s].key` ``, or the next
/// span when only a space separates them (`` `[s]` `key` ``).
fn key_after<'a>(rest: &'a str, text: &'a str, span_end: usize) -> Option<&'a str> {
    let name = if let Some(r) = rest.strip_prefix(' ').or(rest.strip_prefix('.')) {
        r.split(' ').next()?
    } else if rest.is_empty() {
        let next = text[span_end..].strip_prefix(" `")?;
        &next[..next.find('`')?]
    } else {
        return None;
    };
    is_key(name).then_some(name)
}

/// Every section and key `text` names: `[s] key`, `[s]` `key`, `[s].key`, `[s]`, and dotted
/// `s.key` whose first part is a section of the reference.
fn mentions(file: &str, text: &str, reference: &Reference) -> Vec<Mention> {
    let tops: BTreeSet<&str> = reference
        .sections
        .iter()
        .filter_map(|s| s.split('.').next())
        .filter(|s| !s.is_empty())
        .collect();
    let kinds = record_kinds();
    let mut out = Vec::new();
    let mut add = |section: &str, key: Option<&str>| {
        out.push(Mention {
            file: file.to_owned(),
            section: reference.normalize(section),
            key: key.map(str::to_owned),
        });
    };
    for (end, span) in code_spans(text) {
        if let Some((section, _, rest)) = header(span) {
            add(&section, key_after(rest, text, end));
        } else if let Some((section, key)) = span.rsplit_once('.')
            && span.split('.').all(is_key)
            && tops.contains(span.split('.').next().unwrap_or(""))
            && !NOT_KEYS.iter().any(|(name, _)| *name == span)
            && !kinds.contains(span)
        {
            add(section, Some(key));
        }
    }
    out
}

/// Whether the configuration loader knows `section` (and `key` in it): it refuses unknown
/// keys naming them, so a probe file with the key is loaded and any other error (a wrong
/// type, a missing required key) means the key exists.
fn schema_knows(section: &str, key: Option<&str>) -> Result<(), String> {
    let concrete: Vec<&str> = section
        .split('.')
        .map(|s| if s.starts_with('<') { "x" } else { s })
        .collect();
    let array = section == "mcp.servers";
    let (head, probe) = match key {
        Some(key) => (concrete.join("."), key.to_owned()),
        None => {
            let (last, parent) = concrete.split_last().expect("a section");
            (parent.join("."), (*last).to_owned())
        }
    };
    let toml = match (head.as_str(), array && key.is_some()) {
        ("", _) => format!("{probe} = []\n"),
        (_, true) => format!("[[{head}]]\n{probe} = []\n"),
        (_, false) => format!("[{head}]\n{probe} = []\n"),
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.toml"), &toml).unwrap();
    match Config::load_with_env(dir.path(), Vec::new()) {
        Err(e) if e.to_string().contains(&format!("unknown field `{probe}`")) => Err(e.to_string()),
        _ => Ok(()),
    }
}

/// The documents that describe the product: README.md, docs/*.md, sandbox/README.md and
/// packaging/README.md.
fn documents() -> Vec<(String, String)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut paths = vec![
        root.join("README.md"),
        root.join("sandbox/README.md"),
        root.join("packaging/README.md"),
    ];
    for entry in std::fs::read_dir(root.join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            paths.push(path);
        }
    }
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            let name = p.strip_prefix(root).unwrap().display().to_string();
            (name, text)
        })
        .collect()
}

#[test]
fn every_key_the_docs_name_is_in_the_reference_and_the_schema() {
    let reference = Reference::parse();
    assert!(reference.keys.len() > 50, "the key table was not found");
    let mut wrong = Vec::new();
    let mut checked = 0;
    for (file, text) in documents() {
        for m in mentions(&file, &text, &reference) {
            checked += 1;
            let key = m.key.as_deref();
            let named = match key {
                Some(key) => format!("[{}] {key}", m.section),
                None => format!("[{}]", m.section),
            };
            if !reference.documents(&m.section, key) {
                wrong.push(format!(
                    "{}: {named} is not in docs/configuration.md",
                    m.file
                ));
            }
            if let Err(error) = schema_knows(&m.section, key) {
                wrong.push(format!("{}: {named} is not a key: {error}", m.file));
            }
        }
    }
    assert!(checked > 100, "only {checked} mentions found");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_key_matcher_reads_every_form_and_leaves_prose_alone() {
    let reference = Reference::parse();
    let text = "`[sandbox] backend`, `[sandbox.network]` `mode`, `[gateway].listen`, \
                `[audit] mode = \"required\"`, `[[mcp.servers]]` `env`, `[agents.coder.autonomy] level`, \
                `acp.max_sessions`, `[sandbox.limits]`\n\
                not keys: `audit.db`, `session.create`, `[Service]`, `[443, 80]`, `config.toml`, \
                ``config key `acp.max_sesions` in config.toml``\n```toml\n[sandbox]\nnope = 1\n```\n";
    let found: Vec<String> = mentions("t", text, &reference)
        .iter()
        .map(|m| format!("{} {}", m.section, m.key.as_deref().unwrap_or("-")))
        .collect();
    assert_eq!(
        found,
        [
            "sandbox backend",
            "sandbox.network mode",
            "gateway listen",
            "audit mode",
            "mcp.servers env",
            "agents.<alias>.autonomy level",
            "acp max_sessions",
            "sandbox.limits -",
        ]
    );
    assert!(schema_knows("sandbox", Some("protected_paths")).is_err());
    assert!(schema_knows("sandbox.limitz", None).is_err());
    assert!(schema_knows("agents.<alias>.autonomy", Some("level")).is_ok());
    assert!(!reference.documents("sandbox", Some("protected_paths")));
}

#[test]
fn environment_values_read_as_documented() {
    let dir = tempfile::tempdir().unwrap();
    let load = |var: &str, value: &str| {
        Config::load_with_env(dir.path(), vec![(var.to_owned(), value.to_owned())])
    };
    let roots = r#"[{ path = "/srv/data", write = true }]"#;
    assert!(
        DOC.contains(&format!("`ZEROCLAW_autonomy__allowed_roots='{roots}'`")),
        "the array-of-tables example"
    );
    let config = load("ZEROCLAW_autonomy__allowed_roots", roots).expect("an array of tables");
    let root = &config.autonomy.allowed_roots[0];
    assert_eq!((root.path.to_str(), root.write), (Some("/srv/data"), true));

    assert!(DOC.contains("`ZEROCLAW_sandbox__network__mode=proxy`"));
    let config = load("ZEROCLAW_sandbox__network__mode", "proxy").unwrap();
    assert_eq!(
        config.sandbox.network.mode,
        zeroclaw::config::NetworkMode::Proxy
    );
    let error = load("ZEROCLAW_sandbox__network", "{ mode = \"proxy\" }")
        .expect_err("an inline table alone is a string");
    assert!(
        error.to_string().contains("ZEROCLAW_sandbox__network"),
        "{error}"
    );
}
