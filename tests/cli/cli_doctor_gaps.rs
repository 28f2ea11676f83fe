//! What `zeroclaw doctor` says a rung does not enforce, on the real binary: on the Landlock
//! rung, that its private TMPDIR and HOME have no size cap.

use crate::sandbox_support::Backend;

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

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_landlock_rung_says_its_private_tmp_has_no_size_cap() {
    if !Backend::Landlock.available("the_landlock_rung_says_its_private_tmp_has_no_size_cap") {
        return;
    }
    let conf = tempfile::tempdir().unwrap();
    let args = ["--backend", "landlock", "--allow-partial"];
    let needle = "the private TMPDIR and HOME have no size cap";
    let text = stdout(&doctor(conf.path(), &args));
    assert!(text.contains(needle), "{text}");
    let out = doctor(conf.path(), &[&args[..], &["--json"]].concat());
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    let listed = report["guarantees"]
        .as_array()
        .unwrap()
        .iter()
        .any(|g| g["what"].as_str().is_some_and(|w| w.contains(needle)));
    assert!(listed, "{report}");
}
