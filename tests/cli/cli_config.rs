//! `zeroclaw config show | check` and `--version` on the real binary.

use std::path::Path;
use std::process::{Command, Output};

/// Runs the binary with a clean `ZEROCLAW_*` environment pointing at `config_dir`.
fn zeroclaw(config_dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_zeroclaw"));
    cmd.args(args).env_remove("OPENROUTER_API_KEY");
    for (name, _) in std::env::vars().filter(|(k, _)| k.starts_with("ZEROCLAW_")) {
        cmd.env_remove(name);
    }
    cmd.env("ZEROCLAW_CONFIG_DIR", config_dir);
    cmd.envs(env.iter().copied());
    cmd.output().expect("run zeroclaw")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn version_prints_the_package_version() {
    let dir = tempfile::tempdir().unwrap();
    let out = zeroclaw(dir.path(), &["--version"], &[]);
    assert!(out.status.success());
    assert_eq!(
        stdout(&out).trim(),
        format!("zeroclaw {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn show_prints_the_resolved_config_as_toml_with_secrets_masked() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.toml"),
        "[providers.local]\nbase_url = \"http://127.0.0.1:9/v1\"\napi_key = \"sk-file-secret\"\n\
         [agents.coder]\nprovider = \"local\"\nmodel = \"m1\"\n",
    )
    .unwrap();
    let env = [
        ("ZEROCLAW_providers__openrouter__api_key", "sk-env-secret"),
        ("ZEROCLAW_acp__max_sessions", "7"),
    ];
    let out = zeroclaw(dir.path(), &["config", "show"], &env);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        !text.contains("sk-file-secret") && !text.contains("sk-env-secret"),
        "{text}"
    );
    let shown: toml::Table = text.parse().expect("config show prints TOML");
    assert_eq!(shown["acp"]["max_sessions"].as_integer(), Some(7));
    assert_eq!(shown["providers"]["local"]["api_key"].as_str(), Some("***"));
    assert_eq!(
        shown["providers"]["openrouter"]["api_key"].as_str(),
        Some("***")
    );
    assert_eq!(shown["agents"]["coder"]["model"].as_str(), Some("m1"));
    assert!(
        shown["agents"].get("default").is_none(),
        "configured agents replace the default"
    );
    let workspace = dir.path().join("workspace");
    assert_eq!(shown["workspace_dir"].as_str(), workspace.to_str());
}

#[test]
fn show_with_no_file_shows_the_built_in_default_agent() {
    let dir = tempfile::tempdir().unwrap();
    let out = zeroclaw(dir.path(), &["config", "show"], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let shown: toml::Table = stdout(&out).parse().unwrap();
    let agent = &shown["agents"]["default"];
    assert_eq!(agent["model"].as_str(), Some("anthropic/claude-sonnet-4.6"));
    assert_eq!(agent["provider"].as_str(), Some("openrouter"));
    let provider = &shown["providers"]["openrouter"];
    assert_eq!(
        provider["base_url"].as_str(),
        Some("https://openrouter.ai/api/v1")
    );
    assert_eq!(provider["api_key_env"].as_str(), Some("OPENROUTER_API_KEY"));
}

#[test]
fn check_accepts_a_valid_config_and_warns_about_a_missing_key() {
    let dir = tempfile::tempdir().unwrap();
    let out = zeroclaw(dir.path(), &["config", "check"], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("OK"), "{text}");
    assert!(
        text.contains("OPENROUTER_API_KEY"),
        "the missing key is named: {text}"
    );
    let out = zeroclaw(
        dir.path(),
        &["config", "check"],
        &[("OPENROUTER_API_KEY", "sk-x")],
    );
    assert!(!stdout(&out).contains("warning"), "{}", stdout(&out));
}

#[test]
fn check_fails_on_an_unknown_file_key_naming_key_and_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.toml"), "[acp]\nmax_sesions = 3\n").unwrap();
    let out = zeroclaw(dir.path(), &["config", "check"], &[]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("acp.max_sesions") && err.contains("config.toml"),
        "{err}"
    );
    assert!(!stdout(&out).contains("OK"));
}

#[test]
fn check_fails_on_an_ill_typed_variable_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let env = [("ZEROCLAW_acp__session_timeout_secs", "soon")];
    let out = zeroclaw(dir.path(), &["config", "check", "--config-dir"], &[]);
    assert!(!out.status.success(), "--config-dir needs a value");
    let dir_arg = dir.path().to_str().unwrap();
    let out = zeroclaw(
        dir.path(),
        &["config", "--config-dir", dir_arg, "check"],
        &env,
    );
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("acp.session_timeout_secs"), "{err}");
    assert!(err.contains("ZEROCLAW_acp__session_timeout_secs"), "{err}");
}

#[test]
fn check_fails_when_an_agent_names_a_missing_provider() {
    let dir = tempfile::tempdir().unwrap();
    let env = [
        ("ZEROCLAW_agents__a__provider", "nowhere"),
        ("ZEROCLAW_agents__a__model", "m"),
    ];
    let out = zeroclaw(dir.path(), &["config", "check"], &env);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("agents.a.provider") && err.contains("nowhere"),
        "{err}"
    );
}

#[test]
fn check_fails_when_the_wall_time_maximum_is_below_the_default_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.toml"),
        "[sandbox.limits]\nwall_time_secs = 300\nmax_wall_time_secs = 200\n",
    )
    .unwrap();
    let out = zeroclaw(dir.path(), &["config", "check"], &[]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("sandbox.limits.max_wall_time_secs")
            && err.contains("sandbox.limits.wall_time_secs"),
        "{err}"
    );
    std::fs::write(
        dir.path().join("config.toml"),
        "[sandbox.limits]\nwall_time_secs = 300\nmax_wall_time_secs = 300\n",
    )
    .unwrap();
    let out = zeroclaw(dir.path(), &["config", "check"], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn the_config_dir_flag_beats_the_variable() {
    let flagged = tempfile::tempdir().unwrap();
    let ignored = tempfile::tempdir().unwrap();
    std::fs::write(
        flagged.path().join("config.toml"),
        "[acp]\nmax_sessions = 4\n",
    )
    .unwrap();
    std::fs::write(
        ignored.path().join("config.toml"),
        "[acp]\nmax_sessions = 9\n",
    )
    .unwrap();
    let dir_arg = flagged.path().to_str().unwrap();
    let out = zeroclaw(
        ignored.path(),
        &["config", "show", "--config-dir", dir_arg],
        &[],
    );
    let shown: toml::Table = stdout(&out).parse().unwrap();
    assert_eq!(shown["acp"]["max_sessions"].as_integer(), Some(4));
}

#[test]
fn without_flag_or_variable_the_config_dir_is_dot_zeroclaw_in_home() {
    let home = tempfile::tempdir().unwrap();
    let dot = home.path().join(".zeroclaw");
    std::fs::create_dir(&dot).unwrap();
    std::fs::write(dot.join("config.toml"), "[acp]\nmax_sessions = 5\n").unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_zeroclaw"));
    for (name, _) in std::env::vars().filter(|(k, _)| k.starts_with("ZEROCLAW_")) {
        cmd.env_remove(name);
    }
    let out = cmd
        .args(["config", "show"])
        .env("HOME", home.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let shown: toml::Table = stdout(&out).parse().unwrap();
    assert_eq!(shown["acp"]["max_sessions"].as_integer(), Some(5));
    assert_eq!(
        shown["workspace_dir"].as_str(),
        dot.join("workspace").to_str()
    );
}

/// A config directory whose `workspace_dir` is a regular file.
fn workspace_is_a_file() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ws");
    std::fs::write(&file, "not a directory").unwrap();
    std::fs::write(
        dir.path().join("config.toml"),
        "workspace_dir = \"ws\"\n[gateway]\nlisten = [\"unix:zc.sock\"]\n",
    )
    .unwrap();
    (dir, file.display().to_string())
}

#[test]
fn a_workspace_dir_that_is_a_file_fails_every_command_naming_it() {
    let (dir, file) = workspace_is_a_file();
    let commands: [&[&str]; 4] = [
        &["config", "check"],
        &["sessions", "list"],
        &["acp"],
        &["daemon"],
    ];
    for args in commands {
        let out = zeroclaw(dir.path(), args, &[]);
        let err = stderr(&out);
        assert!(!out.status.success(), "{args:?} succeeded: {err}");
        assert!(
            err.contains(&format!("{file} exists and is not a directory")),
            "{args:?}: {err}"
        );
        assert!(err.contains("`workspace_dir`"), "{args:?}: {err}");
        assert!(!err.contains("running in memory"), "{args:?}: {err}");
    }
    assert!(
        !dir.path().join("zc.sock").exists(),
        "the daemon never listened"
    );
}

#[test]
fn zero_limits_on_the_acp_command_line_are_refused_naming_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    for (flag, key) in [
        ("--max-sessions", "acp.max_sessions"),
        ("--session-timeout", "acp.session_timeout_secs"),
    ] {
        let out = zeroclaw(dir.path(), &["acp", flag, "0"], &[]);
        let err = stderr(&out);
        assert!(!out.status.success(), "{flag} 0 was accepted: {err}");
        assert!(
            err.contains(&format!(
                "`{key}` from command-line flag {flag}: must be greater than 0"
            )),
            "{err}"
        );
        assert!(stdout(&out).is_empty(), "nothing on the ACP channel");
    }
}

#[test]
fn a_command_line_limit_beats_the_file_and_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.toml"), "[acp]\nmax_sessions = 0\n").unwrap();
    let env = [("ZEROCLAW_acp__max_sessions", "0")];
    let out = zeroclaw(dir.path(), &["acp", "--max-sessions", "2"], &env);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn ill_typed_values_are_explained_in_plain_words() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "ZEROCLAW_acp__max_sessions",
            "four",
            "expected a whole number",
        ),
        (
            "ZEROCLAW_sandbox__allow_partial",
            "maybe",
            "expected true or false",
        ),
        (
            "ZEROCLAW_acp__max_sessions",
            "-1",
            "expected a whole number from 0 to",
        ),
    ];
    for (var, value, plain) in cases {
        let out = zeroclaw(dir.path(), &["config", "check"], &[(var, value)]);
        let err = stderr(&out);
        assert!(!out.status.success(), "{var}={value}: {err}");
        assert!(err.contains(plain), "{var}={value}: {err}");
        assert!(err.contains(var), "names the variable: {err}");
        for rust in ["usize", "u64", "a boolean"] {
            assert!(!err.contains(rust), "{var}={value} leaks `{rust}`: {err}");
        }
    }
}

/// Raw bytes a terminal acts on: ESC, BEL, CSI (C1).
fn terminal_controls(text: &str) -> bool {
    text.contains(['\u{1b}', '\u{7}', '\u{9b}'])
}

#[test]
fn show_prints_values_with_controls_escaped_and_still_as_toml() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.toml"),
        "[providers.local]\nbase_url = \"http://127.0.0.1:9/v1\"\n\
         [agents.coder]\nprovider = \"local\"\nmodel = \"m\\u009b31m\"\n\
         system_prompt = \"be brief\\u001b]0;pwned\\u0007\\u001b]52;c;cHduZWQ=\\u0007\"\n",
    )
    .unwrap();
    let out = zeroclaw(dir.path(), &["config", "show"], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(!terminal_controls(&text), "raw controls in:\n{text:?}");
    let shown: toml::Table = text.parse().expect("config show prints TOML");
    let coder = &shown["agents"]["coder"];
    assert_eq!(coder["model"].as_str(), Some("m\u{9b}31m"), "{text}");
    assert_eq!(
        coder["system_prompt"].as_str(),
        Some("be brief\u{1b}]0;pwned\u{7}\u{1b}]52;c;cHduZWQ=\u{7}")
    );
}

#[test]
fn show_notes_that_level_full_turns_workspace_only_off() {
    let dir = tempfile::tempdir().unwrap();
    let shown = |config: &str| {
        std::fs::write(dir.path().join("config.toml"), config).unwrap();
        let out = zeroclaw(dir.path(), &["config", "show"], &[]);
        assert!(out.status.success(), "{}", stderr(&out));
        let text = stdout(&out);
        text.parse::<toml::Table>()
            .expect("config show prints TOML");
        text
    };
    let full = shown("[autonomy]\nlevel = \"full\"\n");
    let line = full
        .lines()
        .find(|l| l.starts_with("workspace_only = true"))
        .expect("workspace_only shown");
    assert!(line.contains("# off at level \"full\""), "{full}");

    let supervised = shown(
        "[providers.local]\nbase_url = \"http://127.0.0.1:9/v1\"\n\
         [agents.coder]\nprovider = \"local\"\nmodel = \"m\"\n\
         [agents.coder.autonomy]\nlevel = \"full\"\nworkspace_only = true\n",
    );
    let noted: Vec<&str> = supervised
        .lines()
        .filter(|l| l.contains("# off at level"))
        .collect();
    assert_eq!(
        noted.len(),
        1,
        "only the agent at full is noted: {supervised}"
    );
    let agent = supervised.find("[agents.coder.autonomy]").unwrap();
    assert!(supervised.find(noted[0]).unwrap() > agent, "{supervised}");
}
