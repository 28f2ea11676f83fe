//! The confined command's environment: an allowlist.

use std::ffi::OsString;
use std::path::Path;

use crate::profile::{Profile, home_dir};

/// PATH, LANG, TERM, a private HOME and TMPDIR, pass-through names, explicit values.
pub fn environment(profile: &Profile, home: &Path, tmp: &Path) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = Vec::new();
    let mut set = |k: &str, v: OsString| {
        env.retain(|(name, _)| name != k);
        env.push((k.into(), v));
    };
    set("PATH", path_var().into());
    set(
        "LANG",
        std::env::var_os("LANG").unwrap_or_else(|| "C.UTF-8".into()),
    );
    set(
        "TERM",
        std::env::var_os("TERM").unwrap_or_else(|| "dumb".into()),
    );
    set("HOME", home.into());
    set("TMPDIR", tmp.into());
    if let Some(real_home) = home_dir() {
        let rustup = real_home.join(".rustup");
        if rustup.is_dir() {
            set("RUSTUP_HOME", rustup.into());
        }
    }
    for name in &profile.env.pass {
        if let Some(v) = std::env::var_os(name) {
            set(name, v);
        }
    }
    for (k, v) in &profile.env.set {
        set(k, v.into());
    }
    env
}

fn path_var() -> String {
    let mut dirs: Vec<String> = Vec::new();
    if let Some(home) = home_dir() {
        let cargo = home.join(".cargo/bin");
        if cargo.is_dir() {
            dirs.push(cargo.display().to_string());
        }
    }
    let base = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
    dirs.push(base.to_string());
    dirs.join(":")
}
