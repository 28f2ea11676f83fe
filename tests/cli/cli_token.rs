//! `zeroclaw token` through the binary: `create --output` writes a 0600 file holding a token the
//! daemon accepts, refuses an existing file unless `--force`, and with a taken name fails before
//! creating anything; `token list` prints creation dates, not epoch seconds.

use crate::support;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use support::acp_client::AcpClient;
use support::ws_conn::{Endpoint, TokenAt, Upgrade};
use support::ws_daemon::{Daemon, create_token, zeroclaw};

fn token(config_dir: &Path, args: &[&str]) -> Output {
    zeroclaw(config_dir)
        .arg("token")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run zeroclaw token")
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn listed(config_dir: &Path) -> String {
    let out = token(config_dir, &["list"]);
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn create_output_writes_a_private_file_whose_token_the_daemon_accepts() {
    let config = tempfile::tempdir().unwrap();
    let out_dir = tempfile::tempdir().unwrap();
    let path = out_dir.path().join("acp-bridge-token");
    let out = token(
        config.path(),
        &["create", "--name", "ed", "--output", path.to_str().unwrap()],
    );
    assert!(out.status.success(), "{out:?}");
    assert!(out.stdout.is_empty(), "the token went to stdout: {out:?}");
    assert_eq!(mode(&path), 0o600);
    assert_eq!(
        entries(out_dir.path()),
        ["acp-bridge-token"],
        "a temp file is left"
    );
    let written = std::fs::read_to_string(&path).unwrap();
    let written = written.trim_end();
    assert!(written.starts_with("zc_"), "{written:?}");

    let daemon = Daemon::builder()
        .config_dir(config.path())
        .no_token()
        .spawn();
    let upgrade = Upgrade::new(Endpoint::Tcp(daemon.tcp())).token(TokenAt::Header, written);
    let client = AcpClient::connect(&upgrade, config.path())
        .unwrap_or_else(|e| panic!("the written token was refused: {e}\n{}", daemon.log()));
    assert_eq!(client.initialize()["protocolVersion"], 1);
}

#[test]
fn an_existing_output_is_refused_and_untouched_unless_force_replaces_it() {
    let config = tempfile::tempdir().unwrap();
    let path = config.path().join("acp-bridge-token");
    std::fs::write(&path, "old\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let target = path.to_str().unwrap();

    let refused = token(
        config.path(),
        &["create", "--name", "a", "--output", target],
    );
    assert!(!refused.status.success(), "{refused:?}");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains(target) && stderr.contains("--force"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "old\n");
    let names = listed(config.path());
    assert!(
        !names.lines().any(|l| l.starts_with("a\t")),
        "a token was created: {names}"
    );

    let forced = token(
        config.path(),
        &["create", "--name", "a", "--output", target, "--force"],
    );
    assert!(forced.status.success(), "{forced:?}");
    assert!(std::fs::read_to_string(&path).unwrap().starts_with("zc_"));
    assert_eq!(mode(&path), 0o600);
}

#[test]
fn a_taken_name_fails_before_the_output_file_is_created() {
    let config = tempfile::tempdir().unwrap();
    create_token(config.path(), "dup");
    let path = config.path().join("acp-bridge-token");
    let out = token(
        config.path(),
        &[
            "create",
            "--name",
            "dup",
            "--output",
            path.to_str().unwrap(),
        ],
    );
    assert!(!out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("already exists"));
    assert!(!path.exists(), "the output was created for a refused name");
    assert_eq!(entries(config.path()), ["tokens.json"]);
}

#[test]
fn token_list_prints_creation_dates() {
    let config = tempfile::tempdir().unwrap();
    create_token(config.path(), "ci");
    let text = listed(config.path());
    let (name, date) = text.trim_end().split_once('\t').expect("name<TAB>date");
    assert_eq!(name, "ci");
    // `YYYY-MM-DD HH:MM:SS UTC`, as `zeroclaw sessions list` prints it.
    let shape: String = date
        .chars()
        .map(|c| if c.is_ascii_digit() { '9' } else { c })
        .collect();
    assert_eq!(shape, "9999-99-99 99:99:99 UTC", "{text}");
    let year: i32 = date[..4].parse().unwrap();
    let now = Command::new("date").args(["-u", "+%Y"]).output().unwrap();
    let now: i32 = String::from_utf8_lossy(&now.stdout).trim().parse().unwrap();
    assert!((now - 1..=now).contains(&year), "{text}");
}

#[test]
fn token_list_escapes_controls_in_a_hand_edited_name() {
    let config = tempfile::tempdir().unwrap();
    create_token(config.path(), "ci");
    let file = config.path().join("tokens.json");
    let mut tokens: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let forged = "x\nadmin\t2026-01-01 00:00:00 UTC\n\u{1b}]0;pwned\u{7}\u{9b}31m";
    tokens["tokens"][0]["name"] = forged.into();
    std::fs::write(&file, tokens.to_string()).unwrap();
    let text = listed(config.path());
    assert_eq!(text.lines().count(), 1, "one line per token: {text}");
    assert!(
        !text.contains(['\u{1b}', '\u{7}', '\u{9b}']),
        "raw controls in {text:?}"
    );
    assert!(
        text.starts_with("x\\nadmin\\t2026-01-01 00:00:00 UTC\\n\\x1b]0;pwned\\x07\\u{9b}31m\t"),
        "{text}"
    );
}
