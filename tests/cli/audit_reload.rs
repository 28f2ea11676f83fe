//! A configuration reload of a running daemon (SIGHUP) is an audit record: `audit list`
//! shows it with the names of the changed sections (a changed API key only as its provider's
//! name, never the key), a reload refused for a broken file is recorded too, and `audit verify`
//! passes. Run again with a PostgreSQL store (`on_postgres::…`), where the records are in the
//! database.

use crate::support;

use std::path::Path;
use std::process::Command;

use support::ws_daemon::Daemon;

const OLD_KEY: &str = "zc-canary-apikey-old-3b81";
const NEW_KEY: &str = "zc-canary-apikey-new-9d24";

fn config(key: &str, agents: &[&str]) -> String {
    let mut toml = format!(
        "[providers.local]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\napi_key = \"{key}\"\n"
    );
    for name in agents {
        toml.push_str(&format!(
            "\n[agents.{name}]\nprovider = \"local\"\nmodel = \"model-{name}\"\n"
        ));
    }
    toml
}

fn audit(config_dir: &Path, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_zeroclaw"))
        .arg("audit")
        .arg("--config-dir")
        .arg(config_dir)
        .args(args)
        .env_remove("ZEROCLAW_CONFIG_DIR")
        .envs(support::store_under_test::env())
        .output()
        .expect("run zeroclaw audit");
    assert!(
        out.status.success(),
        "zeroclaw audit {args:?}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_reload_is_recorded_with_the_changed_sections_and_no_secret() {
    let mut daemon = Daemon::builder()
        .config_toml(config(OLD_KEY, &["a"]))
        .spawn();
    let config_dir = daemon.config_dir().to_path_buf();
    let file = config_dir.join("config.toml");

    std::fs::write(&file, config(NEW_KEY, &["a", "b"])).unwrap();
    daemon.launched.signal(libc::SIGHUP);
    daemon.launched.wait_text("configuration reloaded");
    std::fs::write(&file, "this is [not toml").unwrap();
    daemon.launched.signal(libc::SIGHUP);
    daemon.launched.wait_text("reload failed");
    // `audit` reads the config too; the broken file goes (no reload follows).
    std::fs::write(&file, config(NEW_KEY, &["a", "b"])).unwrap();

    // The records are committed before the daemon reports the reload on stderr.
    let list = audit(&config_dir, &["list", "--kind", "config.reload"]);
    let lines: Vec<&str> = list.lines().collect();
    assert_eq!(lines.len(), 2, "{list}");
    assert!(
        lines[0].contains("outcome=applied changed=agents.b,providers.local"),
        "{list}"
    );
    assert!(lines[1].contains("outcome=rejected"), "{list}");
    let seq = lines[0].split_whitespace().next().unwrap();
    let shown = audit(&config_dir, &["show", seq]);
    assert!(shown.contains("\"changed\""), "{shown}");
    assert!(audit(&config_dir, &["verify"]).starts_with("ok: "));

    let exported = audit(&config_dir, &["export"]);
    for key in [OLD_KEY, NEW_KEY, "not toml"] {
        assert!(!exported.contains(key), "{key} is in a record");
    }
    daemon.terminate();
    let files = std::fs::read_dir(config_dir.join("workspace/sessions")).into_iter();
    for entry in files.flatten() {
        let path = entry.unwrap().path();
        if !path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("audit")
        {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        for key in [OLD_KEY, NEW_KEY, "not toml"] {
            let found = bytes.windows(key.len()).any(|w| w == key.as_bytes());
            assert!(!found, "{key} is in {}", path.display());
        }
    }
}

crate::on_postgres!(a_reload_is_recorded_with_the_changed_sections_and_no_secret);
