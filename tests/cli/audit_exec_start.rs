//! A tool's execution is recorded before its child runs (`tool.start`), and a full file
//! system cannot hide that a command ran: the log's reserve takes the records of the call
//! under way, after which no call starts until space is freed. Through the real binary; the
//! full file system is a small tmpfs (root only: skipped otherwise, a failure with CI=true).

use crate::audit_log::{bodies, stdout_ok};
use crate::support;
use crate::tools_support;

use std::path::Path;

use serde_json::{Value, json};

use tools_support::{Scene, Setup};

/// The records of the scene's calls of `tool`, in order, as `kind` names.
fn kinds_of(records: &[Value], tool: &str) -> Vec<String> {
    records
        .iter()
        .filter(|r| r["tool"] == tool)
        .filter_map(|r| r["kind"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn a_command_start_is_recorded_before_it_runs() {
    let s = Scene::start(Setup::level("full"));
    s.call("shell", json!({"command": "echo started"}))
        .assert_completed();
    let config_dir = s.config_dir();
    let records = bodies(&config_dir);
    assert_eq!(
        kinds_of(&records, "shell"),
        ["policy.decision", "tool.start", "tool.exec"],
        "{records:#?}"
    );
    let start = records.iter().find(|r| r["kind"] == "tool.start").unwrap();
    let exec = records.iter().find(|r| r["kind"] == "tool.exec").unwrap();
    assert_eq!(start["command"], "echo started", "{start}");
    assert_eq!(start["session"], s.session.as_str(), "{start}");
    assert_eq!(start["tool_call_id"], exec["tool_call_id"], "{start}");
    assert_eq!(start["args_sha256"], exec["args_sha256"], "{start}");
    let listed = stdout_ok(&config_dir, &["list", "--kind", "tool.start"]);
    assert!(listed.contains("echo started"), "{listed}");
    assert!(stdout_ok(&config_dir, &["verify"]).starts_with("ok: "));
}

/// A tmpfs of `size` mounted on a fresh directory under `/var/tmp`, unmounted when dropped.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    /// `None` (with the reason printed, a failure under CI=true) when this user cannot mount.
    fn mount(size: &str) -> Option<Tmpfs> {
        use nix::mount::{MsFlags, mount};
        let dir = tempfile::Builder::new()
            .prefix("zc-test-tmpfs-")
            .tempdir_in("/var/tmp")
            .expect("mount point");
        let options = format!("size={size}");
        let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV;
        match mount(
            Some("tmpfs"),
            dir.path(),
            Some("tmpfs"),
            flags,
            Some(options.as_str()),
        ) {
            Ok(()) => Some(Tmpfs { dir }),
            Err(e) => {
                support::require_feature(&format!("cannot mount a tmpfs here ({e}); needs root"));
                None
            }
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        // Detached: nothing of the test holds it by now, and the directory goes after.
        let _ = nix::mount::umount2(self.dir.path(), nix::mount::MntFlags::MNT_DETACH);
    }
}

#[test]
fn a_full_file_system_cannot_hide_that_a_command_ran() {
    let Some(fs) = Tmpfs::mount("16m") else {
        return;
    };
    // The session store lives elsewhere: only the audit log (and the workspace) fill up.
    let store = tempfile::tempdir_in("/var/tmp").unwrap();
    let setup = Setup::level("full").under(fs.path()).extra(&format!(
        "[store]\nurl = \"sqlite:{}\"\n",
        store.path().join("acp-sessions.db").display()
    ));
    let s = Scene::start(setup);
    let config_dir = s.config_dir();
    assert!(
        config_dir.starts_with(fs.path()),
        "{}",
        config_dir.display()
    );
    let reserve = config_dir.join("workspace/sessions/audit.db.reserve");

    // The command runs, then fills the file system before its end is recorded. Its layer's
    // directory (the transactional workspace, on this file system too) frees a few pages once
    // it has landed: the 300 empty files it also makes give the record a list of changed paths
    // longer than that room.
    let fill = "touch ran-1 && for i in $(seq 300); do : > \
                a-file-whose-long-name-makes-the-list-of-changed-paths-longer-$i; done && \
                dd if=/dev/zero of=fill bs=64k; echo filled";
    let out = s.call("shell", json!({ "command": fill }));
    assert!(s.ws().join("ran-1").exists(), "{}", out.describe());
    assert!(
        std::fs::metadata(s.ws().join("fill")).is_ok_and(|m| m.len() > 1 << 20),
        "the file system did not fill: {}",
        out.describe()
    );
    out.assert_completed().assert_result_contains("filled");
    let records = bodies(&config_dir);
    assert_eq!(
        kinds_of(&records, "shell"),
        ["policy.decision", "tool.start", "tool.exec"],
        "{records:#?}"
    );
    assert!(!reserve.exists(), "the reserve was not used");

    // Full, with the reserve spent: the next call is refused before anything runs.
    let refused = s.call("shell", json!({"command": "touch ran-2"}));
    refused
        .assert_failed()
        .assert_result_contains("audit record cannot be written");
    assert!(refused.text.contains("reserve"), "{}", refused.describe());
    assert!(!s.ws().join("ran-2").exists(), "a command ran unrecorded");

    // Space is back: the reserve is made again and calls run.
    std::fs::remove_file(s.ws().join("fill")).unwrap();
    s.call("shell", json!({"command": "touch ran-3"}))
        .assert_completed();
    assert!(s.ws().join("ran-3").exists());
    assert!(reserve.is_file(), "the reserve was not made again");

    let starts = stdout_ok(&config_dir, &["list", "--kind", "tool.start"]);
    assert!(starts.contains("touch ran-1"), "{starts}");
    assert!(!starts.contains("touch ran-2"), "{starts}");
    assert!(starts.contains("touch ran-3"), "{starts}");
    assert!(stdout_ok(&config_dir, &["verify"]).starts_with("ok: "));
}

crate::on_postgres!(a_command_start_is_recorded_before_it_runs);
