//! A real package manager served from the persistent caches (`crate::caches` in the daemon):
//! `npm install` through the egress proxy fills `~/.npm/_cacache` from a registry this test
//! serves on loopback, and a later `zeroclaw sandbox run` with the network denied installs the
//! same package `--offline` from that cache (the registry sees no request), on each rung that
//! serves proxy mode; with `--no-caches` the same offline install finds nothing.

use std::path::Path;
use std::process::{Command, Output};

use crate::egress_sandbox::{Files, config, serves_proxy, text};
use crate::sandbox_support::Backend;

const SERVED: &str = "demo-pkg served from the registry";

/// A registry as files: the packument `demo-pkg` and its tarball, with its integrity.
fn registry(served: &Path, port: u16) {
    let out = Command::new("python3")
        .arg("-c")
        .arg(format!(
            "import tarfile, io, json, hashlib, base64, os, sys\n\
             root = sys.argv[1]\n\
             buf = io.BytesIO()\n\
             with tarfile.open(fileobj=buf, mode='w:gz') as t:\n\
             \x20   for name, body in [('package/package.json', json.dumps({{'name': 'demo-pkg', 'version': '1.0.0', 'main': 'index.js'}}).encode()), ('package/index.js', b\"module.exports = '{SERVED}';\\n\")]:\n\
             \x20       info = tarfile.TarInfo(name); info.size = len(body); info.mode = 0o644\n\
             \x20       t.addfile(info, io.BytesIO(body))\n\
             tgz = buf.getvalue()\n\
             os.makedirs(os.path.join(root, 'tarballs'))\n\
             open(os.path.join(root, 'tarballs/demo-pkg-1.0.0.tgz'), 'wb').write(tgz)\n\
             integrity = 'sha512-' + base64.b64encode(hashlib.sha512(tgz).digest()).decode()\n\
             dist = {{'tarball': 'http://files.example:{port}/tarballs/demo-pkg-1.0.0.tgz', 'integrity': integrity}}\n\
             version = {{'name': 'demo-pkg', 'version': '1.0.0', 'main': 'index.js', 'dist': dist}}\n\
             pack = {{'name': 'demo-pkg', 'dist-tags': {{'latest': '1.0.0'}}, 'versions': {{'1.0.0': version}}}}\n\
             open(os.path.join(root, 'demo-pkg'), 'w').write(json.dumps(pack))\n"
        ))
        .arg(served)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
}

/// `zeroclaw sandbox run --backend B --network NET FLAGS -- sh -c SCRIPT` in `ws`.
fn run(backend: &str, cfg: &Path, ws: &Path, flags: &[&str], script: &str) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_zeroclaw"));
    for (name, _) in std::env::vars().filter(|(k, _)| k.starts_with("ZEROCLAW_")) {
        cmd.env_remove(name);
    }
    cmd.env("ZEROCLAW_CONFIG_DIR", cfg)
        .args(["sandbox", "run", "--backend", backend, "--workspace"])
        .arg(ws)
        .args(flags)
        .args(["--", "sh", "-c", script]);
    cmd.output().expect("run zeroclaw")
}

fn npm_installs_offline_from_the_cache_a_proxied_install_filled(b: Backend) {
    if !serves_proxy(b, "npm from the persistent cache", &["npm", "node"]) {
        return;
    }
    let (served, cfg, ws) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let files = Files::start(served.path());
    config(cfg.path(), files.port);
    registry(served.path(), files.port);
    let install = |flags: &str| {
        format!(
            "npm install {flags} --no-audit --no-fund --no-update-notifier \
             --registry http://files.example:{}/ demo-pkg >/dev/null 2>&1; \
             node -e 'console.log(require(\"demo-pkg\"))' 2>/dev/null || echo NOT-INSTALLED; \
             rm -rf node_modules package.json package-lock.json",
            files.port
        )
    };
    let proxied = ["--network", "proxy", "--allow-domain", "files.example"];
    let first = run(b.name(), cfg.path(), ws.path(), &proxied, &install(""));
    assert!(text(&first).contains(SERVED), "{}", text(&first));
    let asked = files.seen().len();
    assert!(asked >= 2, "the registry served it: {:?}", files.seen());

    let offline = install("--offline");
    let deny = ["--network", "deny"];
    let again = run(b.name(), cfg.path(), ws.path(), &deny, &offline);
    assert!(text(&again).contains(SERVED), "{}", text(&again));
    assert_eq!(files.seen().len(), asked, "served from the cache alone");

    let cold = run(
        b.name(),
        cfg.path(),
        ws.path(),
        &["--network", "deny", "--no-caches"],
        &offline,
    );
    assert!(
        text(&cold).contains("NOT-INSTALLED") && !text(&cold).contains(SERVED),
        "{}",
        text(&cold)
    );
}

#[test]
fn npm_offline_from_the_cache_namespaces() {
    npm_installs_offline_from_the_cache_a_proxied_install_filled(Backend::Namespaces);
}

#[test]
fn npm_offline_from_the_cache_bubblewrap() {
    npm_installs_offline_from_the_cache_a_proxied_install_filled(Backend::Bubblewrap);
}

#[test]
fn npm_offline_from_the_cache_landlock() {
    npm_installs_offline_from_the_cache_a_proxied_install_filled(Backend::Landlock);
}

/// `~/.cache` as one workspace's run leaves it, as another workspace's run sees it, under a
/// config with `[sandbox.caches] scope = SCOPE` (every rung, the warm helper too).
fn seen_from_another_workspace(b: Backend, scope: &str) -> String {
    let (cfg, one, two) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    std::fs::write(
        cfg.path().join("config.toml"),
        format!("[sandbox.caches]\nscope = \"{scope}\"\n"),
    )
    .unwrap();
    let mut flags = vec!["--network", "deny"];
    flags.extend(b.flags());
    let write = "mkdir -p ~/.cache/zc && echo shared-entry > ~/.cache/zc/f && cat ~/.cache/zc/f";
    let wrote = run(b.name(), cfg.path(), one.path(), &flags, write);
    assert!(text(&wrote).contains("shared-entry"), "{}", text(&wrote));
    let read = "cat ~/.cache/zc/f 2>/dev/null || echo NOT-SHARED";
    let out = run(b.name(), cfg.path(), two.path(), &flags, read);
    assert!(out.status.success(), "{}", text(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_default_scope_keeps_workspaces_apart_and_a_wider_one_shares() {
    for b in Backend::ALL {
        if !b.available("persistent cache scopes") {
            continue;
        }
        let apart = seen_from_another_workspace(b, "workspace");
        assert!(apart.contains("NOT-SHARED"), "{b:?}: {apart}");
        for wider in ["agent", "principal"] {
            let shared = seen_from_another_workspace(b, wider);
            assert!(shared.contains("shared-entry"), "{b:?} {wider}: {shared}");
        }
    }
}
