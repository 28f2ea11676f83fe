//! Fail closed (SECURITY.md "Rules"): when the requested confinement cannot be applied the
//! command never runs — a named backend that is unavailable, an unknown backend, a broken
//! profile — and the refusal explains itself; `none` runs only by name and says so.
//!
//! Judged from outside: the command would have created a marker file in the workspace.

use crate::sandbox_support;

use std::path::Path;

use sandbox_support::World;
use sandbox_support::run::{Run, Runner, zeroclaw};

/// The documented exit code of `zeroclaw sandbox run` when the sandbox cannot be set up.
const SETUP_FAILED: i32 = 125;

fn sandbox_run(w: &World, args: &[&str]) -> Run {
    Runner::new(zeroclaw(), &w.ws)
        .args(["sandbox", "run"])
        .args(args)
        .args(["--", "/bin/sh", "-c", "echo ran > marker"])
        .env("HOME", &w.home)
        .run()
}

fn assert_refused(w: &World, run: &Run, code: i32, explains: &str) {
    assert_eq!(run.status_code(), Some(code), "expected exit {code}\n{run}");
    assert!(
        !w.ws.join("marker").exists(),
        "ESCAPE: the command ran although the sandbox was refused\n{run}"
    );
    assert!(
        run.stderr.contains(explains),
        "stderr should explain ({explains:?})\n{run}"
    );
}

#[test]
fn unavailable_named_backend_is_refused() {
    let w = World::new();
    let missing = if Path::new("/usr/bin/sandbox-exec").exists() {
        "landlock"
    } else {
        "seatbelt"
    };
    let run = sandbox_run(&w, &["--backend", missing]);
    assert_refused(&w, &run, SETUP_FAILED, missing);
}

#[test]
fn unknown_backend_is_refused() {
    let w = World::new();
    let run = sandbox_run(&w, &["--backend", "chroot"]);
    assert_refused(&w, &run, 2, "chroot");
}

#[test]
fn missing_workspace_is_refused() {
    let w = World::new();
    let gone = w.root.join("no-such-workspace");
    let run = sandbox_run(&w, &["--workspace", gone.to_str().expect("utf-8 path")]);
    assert_eq!(run.status_code(), Some(SETUP_FAILED), "{run}");
    assert!(
        !gone.join("marker").exists() && !w.ws.join("marker").exists(),
        "ESCAPE: ran\n{run}"
    );
    assert!(
        run.stderr.contains("no-such-workspace"),
        "stderr should name the workspace\n{run}"
    );
}

/// `none` is honoured only by name, and then said out loud on stderr.
#[test]
fn backend_none_runs_only_by_name_and_warns() {
    let w = World::new();
    let run = sandbox_run(&w, &["--backend", "none"]);
    assert_eq!(run.status_code(), Some(0), "{run}");
    assert!(
        w.ws.join("marker").exists(),
        "backend none should run the command\n{run}"
    );
    assert!(
        run.stderr.to_lowercase().contains("unconfined"),
        "none must be reported\n{run}"
    );
}

/// `doctor` fails when the requested backend cannot be applied and reports the ladder as JSON.
#[test]
fn doctor_reports_and_fails_closed() {
    let w = World::new();
    let missing = if Path::new("/usr/bin/sandbox-exec").exists() {
        "landlock"
    } else {
        "seatbelt"
    };
    let refused = Runner::new(zeroclaw(), &w.ws)
        .args(["doctor", "--backend", missing])
        .run();
    assert_ne!(
        refused.status_code(),
        Some(0),
        "doctor must fail for an unavailable backend\n{refused}"
    );
    let json = Runner::new(zeroclaw(), &w.ws)
        .args(["doctor", "--json"])
        .run();
    let report: serde_json::Value = serde_json::from_str(&json.stdout)
        .unwrap_or_else(|e| panic!("doctor --json is not JSON: {e}\n{json}"));
    let backends = report["backends"]
        .as_array()
        .unwrap_or_else(|| panic!("no backends\n{json}"));
    for name in ["namespaces", "bubblewrap", "landlock", "seatbelt", "none"] {
        assert!(
            backends.iter().any(|b| b["backend"] == name),
            "{name} missing from the report\n{json}"
        );
    }
}

/// `zeroclaw sandbox run` under a user namespace whose `user.max_user_namespaces` is 0 (what
/// a container policy or AppArmor does to user namespaces at run time): naming `namespaces`
/// is refused with the reason; `auto` notices it in the run itself, runs nothing there, and —
/// bubblewrap failing too — refuses as well, naming the reduced Landlock-only rung that
/// `backend = "landlock"` accepts (never chosen silently); named, that rung confines the
/// command (seccomp filter in place).
#[test]
fn blocked_user_namespaces_auto_refuses_landlock_by_name_runs() {
    let w = World::new();
    let blocked = |backend: &str| {
        let script = format!(
            "echo 0 > /proc/sys/user/max_user_namespaces || exit 99; \
             exec \"$0\" sandbox run --backend {backend} -- /bin/sh -c \
             'grep ^Seccomp: /proc/$$/status; echo ran > marker'"
        );
        Runner::new("unshare", &w.ws)
            .args(["--user", "--map-root-user", "sh", "-c", &script, zeroclaw()])
            .env("HOME", &w.home)
            .run()
    };
    let named = blocked("namespaces");
    if named.status_code() == Some(99) {
        crate::support::require_feature(&format!(
            "cannot set user.max_user_namespaces inside a user namespace here\n{named}"
        ));
        return;
    }
    assert_refused(&w, &named, SETUP_FAILED, "namespaces");
    let auto = blocked("auto");
    assert_refused(&w, &auto, SETUP_FAILED, "backend = \"landlock\"");
    assert!(
        auto.stderr.contains("bubblewrap") && auto.stderr.contains(".git/hooks"),
        "the refusal names what failed and what the Landlock rung does not guarantee\n{auto}"
    );
    let landlock = blocked("landlock");
    assert_eq!(
        landlock.status_code(),
        Some(0),
        "named, the Landlock rung runs\n{landlock}"
    );
    assert!(
        w.ws.join("marker").exists(),
        "the Landlock rung did not run the command\n{landlock}"
    );
    assert!(
        landlock.stdout.contains("Seccomp:\t2"),
        "the Landlock rung must still confine (seccomp filter)\n{landlock}"
    );
}

/// The bubblewrap backend's run is its own preflight (no bwrap run first): a bwrap that fails
/// (as under a userns-restricting policy) or exits 0 without running anything is refused all
/// the same, before the command ran, and the refusal explains itself.
#[test]
fn broken_bwrap_is_refused_before_the_command_runs() {
    let w = World::new();
    let fakes = [
        (
            "fails",
            "echo 'bwrap: setting up uid map: Permission denied' >&2; exit 1",
            "preflight failed: bwrap: setting up uid map",
        ),
        ("does nothing", "exit 0", "before confining the command"),
    ];
    for (what, body, explains) in fakes {
        let bin = w
            .root
            .join(format!("fake-bwrap-{}", what.replace(' ', "-")));
        std::fs::create_dir_all(&bin).expect("fake bin dir");
        let bwrap = bin.join("bwrap");
        std::fs::write(&bwrap, format!("#!/bin/sh\n{body}\n")).expect("fake bwrap");
        std::fs::set_permissions(&bwrap, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .expect("chmod fake bwrap");
        let path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let run = Runner::new(zeroclaw(), &w.ws)
            .args(["sandbox", "run", "--backend", "bubblewrap"])
            .args(["--", "/bin/sh", "-c", "echo ran > marker"])
            .env("HOME", &w.home)
            .env("PATH", &path)
            .run();
        assert_refused(&w, &run, SETUP_FAILED, explains);
        assert!(
            run.stderr.contains("bubblewrap"),
            "a bwrap that {what}\n{run}"
        );
    }
}
