//! What `zeroclaw doctor` says a rung does not enforce, on the real binary: as root, the
//! root-only files a child (uid 0) could still read under the session's read-only roots — a
//! `0600` file in an `[[autonomy.allowed_roots]]` root is named, a `0644` one beside it is not
//! (text and `--json`); and on the Landlock rung, that its private TMPDIR and HOME have no
//! size cap.

use crate::sandbox_support::Backend;
use crate::support::require_feature;

use std::os::unix::fs::PermissionsExt;
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

fn names_a_root_only_file_of_a_read_root(b: Backend) {
    let conf = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let data = data.path().canonicalize().unwrap();
    let key = data.join("root-only.key");
    let open = data.join("readable.txt");
    for (path, mode) in [(&key, 0o600), (&open, 0o644)] {
        std::fs::write(path, "x").unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    std::fs::write(
        conf.path().join("config.toml"),
        format!(
            "[[autonomy.allowed_roots]]\npath = \"{}\"\n",
            data.display()
        ),
    )
    .unwrap();
    let args = ["--backend", b.name(), "--allow-partial"];
    let out = doctor(conf.path(), &[&args[..], &["--json"]].concat());
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    let found = &report["root_readable"];
    assert_eq!(found["backend"], b.name(), "{report}");
    let paths: Vec<&str> = found["paths"]
        .as_array()
        .unwrap_or_else(|| panic!("no root_readable paths: {report}"))
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(paths.contains(&key.to_str().unwrap()), "{b:?}: {found}");
    assert!(!paths.contains(&open.to_str().unwrap()), "{b:?}: {found}");
    assert_eq!(found["roots"][0], data.to_str().unwrap(), "scanned first");
    let text = stdout(&doctor(conf.path(), &args));
    let section = text
        .split("\nroot-only files readable on")
        .nth(1)
        .unwrap_or_else(|| panic!("{b:?}: no root-only section: {text}"));
    assert!(section.contains(key.to_str().unwrap()), "{section}");
    assert!(!section.contains(open.to_str().unwrap()), "{section}");
}

#[test]
fn as_root_doctor_names_the_root_only_files_a_child_could_read() {
    if !nix::unistd::geteuid().is_root() {
        require_feature("root: a child runs as uid 0 only when zeroclaw does");
        return;
    }
    for b in [Backend::Namespaces, Backend::Bubblewrap, Backend::Landlock] {
        if b.available("as_root_doctor_names_the_root_only_files_a_child_could_read") {
            names_a_root_only_file_of_a_read_root(b);
        }
    }
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
