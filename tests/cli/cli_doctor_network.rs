//! `zeroclaw doctor` on the real binary shows the effective `[sandbox.network]` policy and
//! what enforces it, in the table and in `--json`.

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

const CONFIG: &str = "[sandbox.network]\nmode = \"deny\"\n\
    allow_domains = [\"registry.example\", \"*.registry.example\"]\nallow_cidrs = [\"10.0.0.0/8\"]\n";

#[test]
fn the_table_shows_the_network_policy_and_its_enforcement() {
    let out = doctor(CONFIG, &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("\nnetwork\n  mode = deny\n"), "{text}");
    assert!(
        text.contains("  allow_domains = [registry.example, *.registry.example]\n"),
        "{text}"
    );
    assert!(text.contains("  allow_cidrs = [10.0.0.0/8]\n"), "{text}");
    assert!(text.contains("  enforced by: "), "{text}");
}

#[test]
fn the_json_report_carries_the_network_section() {
    let out = doctor(&CONFIG.replace("\"deny\"", "\"allow\""), &["--json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let network = &report["network"];
    assert_eq!(network["policy"][0], "mode = allow");
    assert_eq!(network["enforced"], "tool children use the host's network");
    let out = doctor(CONFIG, &["--json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_ne!(
        report["network"]["enforced"],
        "tool children use the host's network"
    );
}

#[test]
fn proxy_mode_is_a_valid_config_and_doctor_says_which_rung_serves_it() {
    let toml = CONFIG.replace("\"deny\"", "\"proxy\"");
    let enforced = |backend: &str| {
        let out = doctor(&toml, &["--json", "--backend", backend]);
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(report["network"]["policy"][0], "mode = proxy");
        report["network"]["enforced"]
            .as_str()
            .unwrap_or("")
            .to_owned()
    };
    let landlock = enforced("landlock");
    assert!(
        landlock.contains("Landlock TCP rules") || landlock.contains("needs Landlock ABI 4"),
        "{landlock}"
    );
    for rung in ["namespaces", "bubblewrap"] {
        let served = enforced(rung);
        if !served.is_empty() && !served.starts_with("no usable backend") {
            assert!(served.contains("egress proxy listens"), "{rung}: {served}");
        }
    }
}

#[test]
fn doctor_says_how_each_rung_enforces_proxy_mode() {
    let out = doctor(CONFIG, &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    let section = text
        .split("  proxy mode on each rung:\n")
        .nth(1)
        .unwrap_or_else(|| panic!("no per-rung proxy section: {text}"));
    for rung in ["namespaces", "bubblewrap", "landlock", "seatbelt", "none"] {
        assert!(section.contains(&format!("    {rung} ")), "{rung}: {text}");
    }
    assert!(
        section.contains("network namespace with only `lo`"),
        "{text}"
    );
    assert!(
        section.contains("SBPL profile allows outbound TCP only"),
        "{text}"
    );
    let out = doctor(CONFIG, &["--json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let by_rung = &report["network"]["proxy_by_rung"];
    let landlock = by_rung["landlock"].as_str().unwrap_or("");
    if report["probes"]["landlock_abi"].as_u64().unwrap_or(0) >= 4 {
        assert!(landlock.contains("Landlock TCP rules"), "{landlock}");
        assert!(landlock.contains("seccomp refuses"), "{landlock}");
    } else {
        assert!(
            landlock.starts_with("NOT available: needs Landlock ABI 4"),
            "{landlock}"
        );
    }
    assert!(
        by_rung["none"]
            .as_str()
            .unwrap_or("")
            .starts_with("NOT available")
    );
}
