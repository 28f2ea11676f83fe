//! `zeroclaw doctor` on the real binary says what the configured level's tool children read,
//! write and reach (a `full` level in proxy mode: writes in the workspace and the read-write
//! allowed roots, the network through the proxy with its allowlist), not the sandbox's default
//! profile, and warns when `[autonomy] full_host_writes` is on.

use std::process::{Command, Output};

fn doctor(toml: &str, args: &[&str]) -> Output {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.toml"), toml).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_zeroclaw"));
    for (name, _) in std::env::vars().filter(|(k, _)| k.starts_with("ZEROCLAW_")) {
        cmd.env_remove(name);
    }
    cmd.env("ZEROCLAW_CONFIG_DIR", dir.path())
        .arg("doctor")
        .args(args);
    cmd.output().expect("run zeroclaw doctor")
}

fn full_proxy(root: &str, extra: &str) -> String {
    format!(
        "[autonomy]\nlevel = \"full\"\n{extra}\n\
         allowed_roots = [{{ path = \"{root}\", write = true }}]\n\
         [sandbox.network]\nmode = \"proxy\"\nallow_domains = [\"registry.example\"]\n"
    )
}

#[test]
fn a_full_proxy_configuration_is_described_as_it_is_enforced() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path().canonicalize().unwrap();
    let out = doctor(&full_proxy(&root.to_string_lossy(), ""), &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("\nsession policy ([autonomy] level = full"),
        "{text}"
    );
    let writes = format!(
        "  - writes: the session's workspace (its cwd), {}, a private /tmp",
        root.display()
    );
    assert!(text.contains(&writes), "{text}");
    assert!(
        text.contains("nothing else of the host (it is read-only)"),
        "{text}"
    );
    assert!(
        text.contains("  - network: only through zeroclaw's egress proxy")
            && text.contains("allow_domains = [registry.example]"),
        "{text}"
    );
    assert!(
        !text.contains("writes limited to the workspace") && !text.contains("- no network"),
        "the sandbox's default-profile lines are not this level's: {text}"
    );
    assert!(!text.contains("WARNING"), "{text}");

    let out = doctor(&full_proxy(&root.to_string_lossy(), ""), &["--json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["policy"]["level"], "full");
    let lines = report["policy"]["lines"].to_string();
    assert!(
        lines.contains("only through zeroclaw's egress proxy"),
        "{lines}"
    );
}

#[test]
fn full_host_writes_prints_a_warning_and_says_the_host_is_written() {
    let root = tempfile::tempdir().unwrap();
    let toml = full_proxy(&root.path().to_string_lossy(), "full_host_writes = true");
    let out = doctor(&toml, &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("  WARNING: [autonomy] full_host_writes = true"),
        "{text}"
    );
    assert!(
        text.contains(
            "and the host: every directory it reads ([autonomy] full_host_writes = true)"
        ),
        "{text}"
    );
    let out = doctor(&toml, &["--json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        report["policy"]["warnings"][0]
            .as_str()
            .is_some_and(|w| w.contains("full_host_writes")),
        "{report}"
    );
}
