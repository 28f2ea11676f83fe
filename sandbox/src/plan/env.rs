//! The confined command's environment: an allowlist.

use std::ffi::OsString;
use std::path::Path;

use super::facts::HostFacts;
use crate::profile::Profile;

/// PATH, LANG, TERM, a private HOME and TMPDIR, pass-through names, explicit values.
pub fn environment(
    profile: &Profile,
    facts: &HostFacts,
    home: &Path,
    tmp: &Path,
) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = Vec::new();
    let mut set = |k: &str, v: OsString| {
        env.retain(|(name, _)| name != k);
        env.push((k.into(), v));
    };
    set("PATH", path_var(facts).into());
    set(
        "LANG",
        facts
            .var("LANG")
            .cloned()
            .unwrap_or_else(|| "C.UTF-8".into()),
    );
    set(
        "TERM",
        facts.var("TERM").cloned().unwrap_or_else(|| "dumb".into()),
    );
    set("HOME", home.into());
    set("TMPDIR", tmp.into());
    if let Some(real_home) = &facts.home {
        let rustup = real_home.join(".rustup");
        if facts.is_dir(&rustup) {
            set("RUSTUP_HOME", rustup.into());
        }
    }
    for name in &profile.env.pass {
        if let Some(v) = facts.var(name) {
            set(name, v.clone());
        }
    }
    for (k, v) in &profile.env.set {
        set(k, v.into());
    }
    env
}

fn path_var(facts: &HostFacts) -> String {
    let mut dirs: Vec<String> = Vec::new();
    if let Some(home) = &facts.home {
        let cargo = home.join(".cargo/bin");
        if facts.is_dir(&cargo) {
            dirs.push(cargo.display().to_string());
        }
    }
    dirs.push(crate::profile::DEFAULT_PATH.to_string());
    dirs.join(":")
}
