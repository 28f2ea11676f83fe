//! `zeroclaw doctor` on the real binary: an invalid configuration gives exit 78 and, with
//! `--json`, a JSON error object on stdout.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

fn doctor(config_dir: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_zeroclaw"));
    for (name, _) in std::env::vars().filter(|(k, _)| k.starts_with("ZEROCLAW_")) {
        cmd.env_remove(name);
    }
    cmd.env("ZEROCLAW_CONFIG_DIR", config_dir)
        .arg("doctor")
        .args(args);
    cmd.output().expect("run zeroclaw doctor")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn an_invalid_configuration_is_a_json_error_and_exit_78() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.toml"),
        "[sandbox]\nbackend = \"chroot\"\n",
    )
    .unwrap();
    let out = doctor(dir.path(), &["--json"]);
    assert_eq!(out.status.code(), Some(78), "{}", text(&out.stderr));
    let error: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_eq!(error["error"]["kind"], "config_invalid", "{error}");
    let message = error["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("sandbox.backend") && message.contains("chroot"),
        "{message}"
    );
    let out = doctor(dir.path(), &[]);
    assert_eq!(out.status.code(), Some(78));
    assert!(out.stdout.is_empty());
    assert!(
        text(&out.stderr).contains("sandbox.backend"),
        "{}",
        text(&out.stderr)
    );
}
