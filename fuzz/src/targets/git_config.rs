//! The validator of a repository config a confined run wrote ([`filter_config`]): parse, keep
//! the allowlisted keys, render anew. Properties: the rendered text parses back to exactly the
//! entries kept, all allowlisted, and filters to itself with nothing refused; and git itself
//! reads the rendered text as those entries and no others (so no refused key reaches the
//! host's git).

use zeroclaw_sandbox::git::config::parse;
use zeroclaw_sandbox::git::validate::{allowed, filter_config};

pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (rendered, _refused) = filter_config(text, ".git/config");
    let kept = parse(&rendered);
    for e in &kept {
        assert!(allowed(&e.section, e.sub.as_deref(), &e.key), "{e:?}");
    }

    let (again, refused) = filter_config(&rendered, ".git/config");
    assert_eq!(again, rendered);
    assert!(refused.is_empty(), "{refused:?}");
    let Some(git) = crate::git::list(&rendered) else {
        return;
    };
    let ours: Vec<(String, Option<String>)> = kept
        .iter()
        .map(|e| {
            let name = match &e.sub {
                Some(sub) => format!("{}.{sub}.{}", e.section, e.key),
                None => format!("{}.{}", e.section, e.key),
            };
            (name, e.value.clone())
        })
        .collect();
    assert_eq!(
        git, ours,
        "git reads the rendered config differently:\n{rendered}"
    );
}
