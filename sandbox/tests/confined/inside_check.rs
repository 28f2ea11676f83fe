//! The confinement checked from inside: on every backend a call's enforcement report carries
//! what the confined process observed before its command ran, and a call whose Landlock stage
//! was deliberately skipped (this crate's test-only fault injection, `helper/fault.rs`) fails
//! closed at the Landlock stage, its command never run. Warm helpers check when prepared.

use zeroclaw_sandbox::{BackendChoice, Network, Profile, Sandbox, SandboxError, SetupError, Stage};

use crate::support;

const HELPER: &str = env!("CARGO_BIN_EXE_zeroclaw-sandbox-helper");

fn sandbox(choice: BackendChoice) -> Option<Sandbox> {
    match Sandbox::new(choice, false) {
        Ok(s) => Some(s.with_helper(HELPER)),
        Err(e) => {
            support::require_feature(&format!("backend {choice}: {e}"));
            None
        }
    }
}

fn workspace() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("zc-inside-")
        .tempdir_in("/var/tmp")
        .unwrap()
}

const BACKENDS: [BackendChoice; 3] = [
    BackendChoice::Namespaces,
    BackendChoice::Bubblewrap,
    BackendChoice::Landlock,
];

fn held<'a>(checked: &'a zeroclaw_sandbox::InsideCheck, prefix: &str) -> &'a str {
    checked
        .held
        .iter()
        .find(|h| h.starts_with(prefix))
        .unwrap_or_else(|| panic!("no {prefix:?} in {checked:#?}"))
}

#[tokio::test(flavor = "current_thread")]
async fn every_backend_reports_what_held_from_inside() {
    for choice in BACKENDS {
        let Some(s) = sandbox(choice) else { continue };
        for network in [Network::Deny, Network::Allow] {
            let ws = workspace();
            let p = Profile::for_workspace(ws.path()).network(network);
            let o = s
                .run(&p, ["true"], std::future::pending())
                .await
                .unwrap_or_else(|e| panic!("{choice} {network:?}: {e}"));
            let checked = o
                .enforcement
                .checked
                .as_ref()
                .unwrap_or_else(|| panic!("{choice}: no inside check in {:?}", o.enforcement));
            held(
                checked,
                "capabilities: effective, permitted, inheritable and ambient",
            );
            held(checked, "no_new_privs set");
            held(checked, "seccomp filter installed");
            held(checked, "write outside the writable roots refused");
            held(checked, "denied paths show nothing");
            if network == Network::Deny {
                held(checked, "network: ");
            } else {
                assert!(
                    checked
                        .not_checked
                        .iter()
                        .any(|n| n.contains("network = allow")),
                    "{choice}: {checked:#?}"
                );
            }
            assert!(checked.nanos > 0);
            eprintln!("{choice} {network:?}: {checked:#?}");
        }
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_call_whose_landlock_was_skipped_fails_closed_and_runs_nothing() {
    for choice in BACKENDS {
        let Some(s) = sandbox(choice) else { continue };
        let ws = workspace();
        let ran = ws.path().join("ran");
        let p = Profile::for_workspace(ws.path()).set_env("ZEROCLAW_SANDBOX_FAULT", "landlock");
        // Twice: on the namespace backend the second call may be served by a warm helper,
        // prepared (and checked) with the same broken confinement.
        for _ in 0..2 {
            let script = format!("touch {}", ran.display());
            let result = s
                .run(&p, ["sh", "-c", &script], std::future::pending())
                .await;
            match result {
                Err(SandboxError::Setup(SetupError {
                    stage: Stage::Landlock,
                    ref call,
                    ..
                })) => assert!(call.starts_with("inside check: "), "{choice}: {call}"),
                other => panic!("{choice}: expected a Landlock setup failure, got {other:?}"),
            }
            assert!(!ran.exists(), "{choice}: the command ran");
        }
        // The same profile without the fault runs.
        let p = Profile::for_workspace(ws.path());
        let o = s
            .run(
                &p,
                ["sh", "-c", &format!("touch {}", ran.display())],
                std::future::pending(),
            )
            .await
            .unwrap();
        assert_eq!(o.shell_code(), 0, "{choice}");
        assert!(ran.exists(), "{choice}");
    }
}

/// A warm helper (namespace backend) checks once it has confined itself, before its call
/// arrives: a call it serves carries that check.
#[tokio::test(flavor = "current_thread")]
async fn a_warm_helper_checks_when_prepared() {
    let Some(s) = sandbox(BackendChoice::Namespaces) else {
        return;
    };
    let ws = workspace();
    let p = Profile::for_workspace(ws.path());
    // The first call is cold; a helper for the next is prepared once it ends. Calls go on
    // until one is served warm (a helper still building is passed over, never waited for).
    for _ in 0..50 {
        let o = s.run(&p, ["true"], std::future::pending()).await.unwrap();
        if o.enforcement.warm {
            let checked = o
                .enforcement
                .checked
                .expect("a warm call without its check");
            held(&checked, "seccomp filter installed");
            held(&checked, "write outside the writable roots refused");
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("no call was served by a warm helper");
}
