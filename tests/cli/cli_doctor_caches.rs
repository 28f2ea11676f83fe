//! `zeroclaw doctor` shows where the persistent package caches live, their scope and each
//! principal's size (text and `--json`), or that they are off.

use std::process::{Command, Output};

fn doctor(dir: &std::path::Path, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_zeroclaw"));
    for (name, _) in std::env::vars().filter(|(k, _)| k.starts_with("ZEROCLAW_")) {
        cmd.env_remove(name);
    }
    cmd.env("ZEROCLAW_CONFIG_DIR", dir).arg("doctor").args(args);
    cmd.output().expect("run zeroclaw doctor")
}

#[test]
fn doctor_shows_the_caches_scope_and_sizes() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.toml"),
        "[sandbox.caches]\nscope = \"agent\"\n",
    )
    .unwrap();
    let cache = dir
        .path()
        .join("workspace/caches/p-local/a-default/shared/cache");
    std::fs::create_dir_all(&cache).unwrap();
    std::fs::write(cache.join("blob"), vec![7u8; 300 * 1024]).unwrap();

    let out = doctor(dir.path(), &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    let root = dir.path().join("workspace/caches");
    let heading = format!(
        "persistent caches ([sandbox.caches] scope = agent): {}",
        root.display()
    );
    assert!(text.contains(&heading), "{text}");
    assert!(text.contains("  p-local: 300.0 KiB"), "{text}");

    let out = doctor(dir.path(), &["--json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let caches = &report["caches"];
    assert_eq!(caches["scope"], "agent", "{caches}");
    assert!(caches["principals"][0]["bytes"].as_u64().unwrap() >= 300 * 1024);
    assert_eq!(caches["principals"][0]["partial"], false);

    std::fs::write(
        dir.path().join("config.toml"),
        "[sandbox.caches]\nenabled = false\n",
    )
    .unwrap();
    let text = String::from_utf8_lossy(&doctor(dir.path(), &[]).stdout).into_owned();
    assert!(text.contains("persistent caches: off"), "{text}");
}
