//! The sandbox's read of a workspace's git config for paths as powerful as the config itself
//! (`core.hooksPath`, `include.path`, `includeIf.*.path`), which it then protects. Property:
//! every such key git itself reads in the text is found, with the value git reads (a path
//! git would use but the sandbox missed is left writable to the confined run).

use zeroclaw_sandbox::git::targets::config_paths;

pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let ours = config_paths(text);
    if !text.to_ascii_lowercase().contains("path") {
        return;
    }
    let Some(git) = crate::git::list(text) else {
        return;
    };
    for (name, value) in git {
        let key = match name.split_once('.') {
            Some(("includeif", rest)) if rest.ends_with(".path") => "includeif.path".to_owned(),
            // `includeIf.path` without a condition is not an include: git ignores it.
            Some(("includeif", _)) => continue,
            _ => name.clone(),
        };
        if !matches!(
            key.as_str(),
            "core.hookspath" | "include.path" | "includeif.path"
        ) {
            continue;
        }
        // A bare key is no path (git refuses it where it reads the path).
        let Some(value) = value else {
            continue;
        };
        assert!(
            ours.contains(&(key.clone(), value.clone())),
            "git reads {name} = {value:?}, the sandbox found {ours:?} in {text:?}"
        );
    }
}
