//! `zeroclaw doctor` on the real binary: an invalid configuration gives exit 78 and, with
//! `--json`, a JSON error object on stdout; the "resource limits" guarantee names what really
//! bounds a call's process count on this machine, per rung (judged from the machine's own
//! facts: uid, kernel version, the pids controller in /proc/self/cgroup).

use crate::sandbox_support;

use std::path::Path;
use std::process::{Command, Output};

use sandbox_support::Backend;
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

fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// Linux 6.14+: each pid namespace has its own pid_max.
fn per_namespace_pid_max() -> bool {
    let release = text(&Command::new("uname").arg("-r").output().unwrap().stdout);
    let mut parts = release
        .split(|c: char| !c.is_ascii_digit())
        .map(|p| p.parse::<u32>().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0)) >= (6, 14)
}

/// A pids controller for our cgroup (v1 `pids` line, or v2 with pids delegated).
fn pids_controller() -> bool {
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    cgroups.lines().any(|l| {
        l.split(':')
            .nth(1)
            .is_some_and(|c| c.split(',').any(|c| c == "pids"))
    }) || std::fs::read_to_string("/sys/fs/cgroup/cgroup.subtree_control")
        .is_ok_and(|c| c.contains("pids"))
}

/// The mechanism the "resource limits" guarantee names for `args`.
fn process_count_mechanism(args: &[&str]) -> (String, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let out = doctor(dir.path(), &[&["--json"], args].concat());
    assert!(out.status.success(), "{}", text(&out.stdout));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let limits = report["guarantees"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["what"] == "resource limits")
        .unwrap_or_else(|| panic!("no resource limits guarantee: {report}"));
    let missing = report["missing"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap().to_owned())
        .collect();
    (limits["mechanism"].as_str().unwrap().to_owned(), missing)
}

fn assert_names_the_real_mechanism(b: Backend, args: &[&str]) {
    let (mechanism, missing) = process_count_mechanism(args);
    let process_count = mechanism
        .split("process count: ")
        .nth(1)
        .unwrap_or_default();
    let expected = if b == Backend::Namespaces && per_namespace_pid_max() {
        "the pid namespace's pid_max"
    } else if is_root() && pids_controller() {
        "a pids cgroup per call"
    } else if is_root() {
        "NOT ENFORCED"
    } else {
        "RLIMIT_NPROC"
    };
    assert!(
        process_count.contains(expected),
        "{}: expected {expected:?} in {mechanism:?}",
        b.name()
    );
    assert!(!mechanism.contains("not enforced for uid 0"), "{mechanism}");
    let listed = missing.iter().any(|m| m.starts_with("process count on"));
    assert_eq!(
        listed,
        expected == "NOT ENFORCED",
        "{}: {missing:?}",
        b.name()
    );
}

#[test]
fn the_process_count_mechanism_of_the_default_rung() {
    if Backend::Namespaces.available("the_process_count_mechanism_of_the_default_rung") {
        assert_names_the_real_mechanism(Backend::Namespaces, &[]);
    }
}

#[test]
fn the_process_count_mechanism_of_the_landlock_rung() {
    if Backend::Landlock.available("the_process_count_mechanism_of_the_landlock_rung") {
        assert_names_the_real_mechanism(
            Backend::Landlock,
            &["--backend", "landlock", "--allow-partial"],
        );
    }
}

#[test]
fn the_process_count_mechanism_of_the_bubblewrap_rung() {
    if Backend::Bubblewrap.available("the_process_count_mechanism_of_the_bubblewrap_rung") {
        assert_names_the_real_mechanism(Backend::Bubblewrap, &["--backend", "bubblewrap"]);
    }
}
