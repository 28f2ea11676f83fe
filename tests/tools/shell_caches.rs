//! Package caches persist, and nothing else of the child's HOME does, on every rung the
//! machine has and at each level where a shell runs: a file a `shell` call writes under
//! `~/.cache` or `~/.cargo/registry` is read by the next call, by a new session in the same
//! workspace and after a restart, not by a session in another workspace (the default scope);
//! tool configuration written to the HOME (`~/.cargo/config.toml` with a `rustc-wrapper`,
//! `~/.npmrc`, `~/.local/bin`) is gone in the next call; the host home's own `~/.cache` and
//! `~/.cargo/registry` are neither seen nor written; the host directories are 0700, under
//! `workspace_dir`. `[sandbox.caches] enabled = false` keeps every call cold.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::json;

use crate::tools_support::{Scene, Setup, backend_available};

const RUNGS: [&str; 3] = ["namespaces", "bubblewrap", "landlock"];

const WRITE: &str = "mkdir -p ~/.cache/zc ~/.cargo/registry/zc ~/.local/bin \
    && echo cached-c1 > ~/.cache/zc/f && echo cached-r1 > ~/.cargo/registry/zc/f \
    && printf '[build]\\nrustc-wrapper = \"/bin/false\"\\n' > ~/.cargo/config.toml \
    && echo 'registry=http://127.0.0.1:9/' > ~/.npmrc \
    && printf '#!/bin/sh\\n' > ~/.local/bin/git && echo wrote";

const READ: &str = "cat ~/.cache/zc/f ~/.cargo/registry/zc/f 2>/dev/null || echo CACHE-MISSING; \
    for f in ~/.cargo/config.toml ~/.npmrc ~/.local/bin/git; do \
    test -e \"$f\" && echo \"LEFT:$f\"; done; echo read-done";

fn shell(s: &Scene, command: &str) -> String {
    let out = s.call("shell", json!({ "command": command }));
    out.assert_completed();
    out.text
}

/// Every directory from `<config>/workspace/caches` down.
fn cache_dirs(root: &Path) -> Vec<PathBuf> {
    let mut out = vec![root.to_path_buf()];
    let mut i = 0;
    while i < out.len() {
        if let Ok(entries) = std::fs::read_dir(&out[i]) {
            for e in entries.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) && out.len() < 64 {
                    out.push(e.path());
                }
            }
        }
        i += 1;
    }
    out
}

#[test]
fn caches_persist_per_workspace_and_tool_configuration_does_not() {
    for backend in RUNGS {
        if !backend_available(backend) {
            continue;
        }
        for level in ["supervised", "full"] {
            eprintln!("rung: {backend}, level: {level}");
            let mut s = Scene::start(Setup::level(level).backend(backend));
            let what = format!("{backend}/{level}");
            // The host home's own caches (a `full` shell reads the home's entries): the
            // persistent ones take their places, and the host's stay untouched.
            for dir in [".cache", ".cargo/registry"] {
                std::fs::create_dir_all(s.home.path().join(dir)).unwrap();
                std::fs::write(s.home.path().join(dir).join("host-only"), "h").unwrap();
            }
            assert!(shell(&s, WRITE).contains("wrote"), "{what}");
            let next = shell(&s, READ);
            assert!(
                next.contains("cached-c1") && next.contains("cached-r1"),
                "{what}: the next call reads the caches: {next}"
            );
            assert!(
                !next.contains("LEFT:"),
                "{what}: configuration persisted: {next}"
            );
            let listed = shell(&s, "ls -a ~/.cache ~/.cargo/registry");
            assert!(!listed.contains("host-only"), "{what}: {listed}");
            for dir in [".cache", ".cargo/registry"] {
                let host: Vec<_> = std::fs::read_dir(s.home.path().join(dir))
                    .unwrap()
                    .flatten()
                    .map(|e| e.file_name())
                    .collect();
                assert_eq!(host, ["host-only"], "{what}: the host's {dir}");
            }

            let ws = s.ws();
            s.session = s.client.new_session(&ws);
            let again = shell(&s, READ);
            assert!(
                again.contains("cached-c1") && again.contains("cached-r1"),
                "{what}: a new session in the same workspace reads them: {again}"
            );
            assert!(!again.contains("LEFT:"), "{what}: {again}");

            // A new daemon process (the session loaded again) finds them on disk.
            s.respawn(&Setup::level(level).backend(backend));
            let restarted = shell(&s, READ);
            assert!(
                restarted.contains("cached-c1") && restarted.contains("cached-r1"),
                "{what}: after a restart: {restarted}"
            );

            let other = s.root.path().join("other");
            std::fs::create_dir(&other).unwrap();
            s.session = s.client.new_session(&other);
            let elsewhere = shell(&s, READ);
            assert!(
                elsewhere.contains("CACHE-MISSING") && !elsewhere.contains("cached-"),
                "{what}: another workspace has its own caches: {elsewhere}"
            );

            let root = s.config_dir().join("workspace/caches");
            let dirs = cache_dirs(&root);
            assert!(dirs.len() > 5, "{what}: {dirs:?}");
            for dir in &dirs {
                let mode = dir.metadata().unwrap().permissions().mode() & 0o777;
                let inside = dir.strip_prefix(&root).unwrap();
                // Below each cache directory, the tools' own modes.
                if inside.components().count() <= 4 {
                    assert_eq!(mode, 0o700, "{what}: {}", dir.display());
                }
            }
            let written: Vec<_> = dirs
                .iter()
                .filter(|d| d.ends_with("cache/zc") || d.ends_with("cargo-registry/zc"))
                .collect();
            assert_eq!(written.len(), 2, "{what}: on the host: {dirs:?}");
        }
    }
}

#[test]
fn disabled_caches_keep_every_call_cold() {
    let backend = RUNGS
        .into_iter()
        .find(|b| backend_available(b))
        .expect("a rung");
    let setup = Setup::level("supervised")
        .backend(backend)
        .extra("[sandbox.caches]\nenabled = false");
    let s = Scene::start(setup);
    assert!(shell(&s, WRITE).contains("wrote"));
    let next = shell(&s, READ);
    assert!(next.contains("CACHE-MISSING"), "{backend}: {next}");
    assert!(!s.config_dir().join("workspace/caches").exists());
}

/// An operator clears the caches between two calls (the daemon keeps running, its warm
/// helpers prepared): the next call starts with empty ones, and what it writes lands in the
/// new directories on the host, on every rung.
#[test]
fn a_cleared_cache_is_made_again_and_used_by_the_next_call() {
    for backend in RUNGS {
        if !backend_available(backend) {
            continue;
        }
        let s = Scene::start(Setup::level("supervised").backend(backend));
        assert!(shell(&s, WRITE).contains("wrote"), "{backend}");
        let root = s.config_dir().join("workspace/caches");
        std::fs::remove_dir_all(&root).unwrap();
        let next = shell(
            &s,
            "cat ~/.cache/zc/f 2>/dev/null || echo GONE; mkdir -p ~/.cache/zc && echo fresh > ~/.cache/zc/g",
        );
        assert!(next.contains("GONE"), "{backend}: {next}");
        let landed = cache_dirs(&root)
            .into_iter()
            .any(|d| d.ends_with("cache/zc") && d.join("g").is_file());
        assert!(landed, "{backend}: the new write is on the host");
    }
}
