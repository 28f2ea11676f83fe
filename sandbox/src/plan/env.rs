//! The confined command's environment: an allowlist. Its `PATH` is the caller's own entries
//! the child can read, in the caller's order, then the default system directories; its
//! `GIT_CONFIG_GLOBAL` names the user's validated git config (see `crate::git::global`).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::carve::{at_or_below, normalized};
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
    set("PATH", path_var(profile, facts).into());
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
    if facts.parent_repository.is_some() {
        // The workspace shown inside a larger repository may be a mount of its own (the
        // transactional workspace's overlay): git's discovery must cross it to find the
        // repository, which lies on the workspace's file system on the host.
        set("GIT_DISCOVERY_ACROSS_FILESYSTEM", "1".into());
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

/// The caller's `PATH` entries that are absolute directories the child can read (inside one
/// of the profile's roots, outside its denied paths), in the caller's order, then each of
/// `~/.cargo/bin` and [`crate::profile::DEFAULT_PATH`]'s directories not already there: the
/// user's toolchains (pyenv shims, nvm's node, rustup's cargo bin, `~/.local/bin`) win over
/// the system's as they do in the user's shell.
fn path_var(profile: &Profile, facts: &HostFacts) -> String {
    // Normalized once and compared as bytes (`carve::at_or_below`, what `Path::starts_with`
    // says): a full shell's profile has a hundred roots for each PATH entry.
    let roots: Vec<PathBuf> = (profile.read_only.iter().filter(|r| facts.exists(r)))
        .chain(profile.writable_roots())
        .map(|r| normalized(r))
        .collect();
    let denied: Vec<PathBuf> = profile.denied.iter().map(|d| normalized(d)).collect();
    let readable = |dir: &Path| {
        let dir = normalized(dir);
        roots.iter().any(|r| at_or_below(&dir, r)) && !denied.iter().any(|d| at_or_below(&dir, d))
    };
    let mut dirs: Vec<PathBuf> = Vec::new();
    for dir in path_entries(facts) {
        if facts.is_dir(dir) && readable(dir) && !dirs.iter().any(|d| d == dir) {
            dirs.push(dir.to_path_buf());
        }
    }
    // `~/.cargo/bin` as before when the caller's PATH lacks it (a service's minimal PATH).
    let cargo = facts.home.as_ref().map(|h| h.join(".cargo/bin"));
    let cargo = cargo.filter(|c| facts.is_dir(c) && readable(c));
    let defaults = crate::profile::DEFAULT_PATH.split(':').map(PathBuf::from);
    for dir in cargo.into_iter().chain(defaults) {
        if !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    let shown: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    shown.join(":")
}

/// The caller's `PATH` entries that are absolute paths without `..` (a relative one would
/// name a directory of the child's cwd), in order.
pub(super) fn path_entries(facts: &HostFacts) -> impl Iterator<Item = &Path> {
    use std::os::unix::ffi::OsStrExt;
    let path = facts.var("PATH").map(|p| p.as_bytes()).unwrap_or_default();
    path.split(|b| *b == b':')
        .map(|entry| Path::new(std::ffi::OsStr::from_bytes(entry)))
        .filter(|dir| {
            let parent = std::path::Component::ParentDir;
            dir.is_absolute() && !dir.components().any(|c| c == parent)
        })
}

/// Sets `GIT_CONFIG_GLOBAL` to the user's validated git config at `copy`, unless the profile
/// set or passed one (see `crate::git::global`).
pub(super) fn git_config_global(env: &mut Vec<(OsString, OsString)>, copy: &Path) {
    if !env.iter().any(|(k, _)| k == "GIT_CONFIG_GLOBAL") {
        env.push(("GIT_CONFIG_GLOBAL".into(), copy.into()));
    }
}
