//! Escape suite through the library API the daemon uses (`zeroclaw_sandbox::Sandbox`), for
//! what the CLI cannot express: caller-given denied paths (the daemon's config directory and
//! session database inside an otherwise readable root), cancellation, and the wall-time limit.
//!
//! The helper is the real `zeroclaw` binary (`Sandbox::with_helper`), whose `main` starts
//! with `zeroclaw_sandbox::helper::run_if_helper()`.

use crate::sandbox_support;

use std::sync::Arc;
use std::time::Duration;

use sandbox_support::judge::{control, marked};
use sandbox_support::procs::{Reaper, survivors_after_grace};
use sandbox_support::world::{q, unique};
use sandbox_support::{ATTEMPT, Backend, World};
use tokio::sync::Notify;
use zeroclaw_sandbox::{BackendChoice, End, Outcome, Profile, Sandbox};

fn sandbox(backend: Backend) -> Sandbox {
    let choice = match backend {
        Backend::Namespaces | Backend::NamespacesWarm => BackendChoice::Namespaces,
        Backend::Bubblewrap => BackendChoice::Bubblewrap,
        Backend::Landlock => BackendChoice::Landlock,
    };
    Sandbox::new(choice, false)
        .unwrap_or_else(|e| {
            panic!(
                "{} is available but Sandbox::new failed: {e}",
                backend.name()
            )
        })
        .with_helper(env!("CARGO_BIN_EXE_zeroclaw"))
}

fn block_on<F: Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
        .block_on(future)
}

fn text(outcome: &Outcome) -> String {
    format!(
        "end {:?}, exit {:?}\n--- stdout:\n{}\n--- stderr:\n{}",
        outcome.end,
        outcome.exit,
        String::from_utf8_lossy(&outcome.stdout),
        String::from_utf8_lossy(&outcome.stderr)
    )
}

/// Runs `sh -c script` under `profile` and returns its outcome (setup errors panic).
fn run(backend: Backend, profile: &Profile, script: &str) -> Outcome {
    let argv = ["/bin/sh", "-c", script];
    block_on(sandbox(backend).run(profile, argv, std::future::pending()))
        .unwrap_or_else(|e| panic!("confined run failed to start: {e}"))
}

/// The daemon's config dir and session database, passed as denied inside a readable `$HOME`:
/// a file next to them stays readable (the read really reaches the kernel), they do not.
fn denied_daemon_paths(w: &World, b: Backend) {
    let config_dir = w.home.join(".zeroclaw");
    let db = w.home.join(".local/share/zeroclaw/sessions.db");
    w.write(&db, &w.secret("session-db"));
    let allowed = w.home.join(".bash_history");
    let profile = Profile::for_workspace(&w.ws)
        .allow_read(&w.home)
        .deny(&config_dir)
        .deny(&db);
    let script = format!(
        "cat {}/config.toml {}/sessions.db {}",
        q(&config_dir),
        q(&config_dir),
        q(&db)
    );

    let outcome = run(b, &profile, &marked(&script));
    let out = text(&outcome);
    assert!(out.contains(ATTEMPT), "the script never ran\n{out}");
    assert!(
        !out.contains(&w.canary),
        "ESCAPE: a denied daemon path was read\n{out}"
    );
    let neighbour = run(b, &profile, &format!("cat {}", q(&allowed)));
    assert!(
        text(&neighbour).contains(&w.secret(".bash_history")),
        "allow_read($HOME) does not work\n{}",
        text(&neighbour)
    );
    w.assert_canary(&control(w, &script));
}
per_backend!(denied_daemon_paths);

/// A caller-given protected path (the agent's own config in the workspace): it stays
/// read-only when it exists and cannot be created when it does not.
fn protected_custom_paths(w: &World, b: Backend) {
    let existing = w.ws.join(".zeroclaw-agent.toml");
    let missing = w.ws.join(".zeroclaw/agent.toml");
    w.write(&existing, "autonomy = \"supervised\"\n");
    let profile = Profile::for_workspace(&w.ws)
        .protect(&existing)
        .protect(&missing);
    let script = format!(
        "echo 'autonomy = \"full\"' >> {0}; mv {0} moved.toml; mkdir -p .zeroclaw; echo 'autonomy = \"full\"' > {1}; echo ok > free.txt",
        q(&existing),
        q(&missing)
    );
    let snapshot = || {
        (
            std::fs::read(&existing).ok(),
            std::fs::read(&missing).ok().filter(|c| !c.is_empty()),
        )
    };
    let before = snapshot();
    let outcome = run(b, &profile, &marked(&script));
    let out = text(&outcome);
    assert!(out.contains(ATTEMPT), "the script never ran\n{out}");
    assert_eq!(
        before,
        snapshot(),
        "ESCAPE: a protected path was changed\n{out}"
    );
    assert!(
        w.ws.join("free.txt").is_file(),
        "the rest of the workspace must stay writable\n{out}"
    );
    let control = control(w, &script);
    assert_ne!(before, snapshot(), "positive control failed\n{control}");
}
per_backend!(
    protected_custom_paths,
    landlock: "reduced rung (chosen only by name): protected paths are not enforced without a mount namespace (see doctor)"
);

/// A heartbeat loop, detached with `setsid`, then a wait: the tree a cancellation must end.
fn detached_tree(marker: &str) -> String {
    marked(&format!(
        "setsid sh -c 'while :; do echo beat >> hb; sleep 0.05; done # {marker}' >/dev/null 2>&1 </dev/null & \
         while [ ! -s hb ]; do sleep 0.01; done; echo started; while :; do sleep 0.1; done # {marker}"
    ))
}

/// Cancelling the call (the daemon's `session/cancel`) kills the whole tree.
fn cancellation_kills_tree(w: &World, b: Backend) {
    let marker = unique("zcmark");
    let _reaper = Reaper(marker.clone());
    let profile = Profile::for_workspace(&w.ws);
    let script = detached_tree(&marker);
    let started = Arc::new(Notify::new());
    let signal = started.clone();
    let outcome = block_on(async {
        let child = sandbox(b)
            .spawn(&profile, ["/bin/sh", "-c", &script])
            .await
            .expect("spawn");
        let on_output = move |_, bytes: &[u8]| {
            if String::from_utf8_lossy(bytes).contains("started") {
                signal.notify_one();
            }
        };
        let cancel = async move { started.notified().await };
        tokio::time::timeout(Duration::from_secs(30), child.wait(on_output, cancel)).await
    });
    let outcome = outcome
        .expect("never started or cancel ignored")
        .expect("wait");
    assert_eq!(outcome.end, End::Cancelled, "{}", text(&outcome));
    let left = survivors_after_grace(&marker);
    assert!(
        left.is_empty(),
        "ESCAPE: {left:?} survived the cancellation\n{}",
        text(&outcome)
    );
}
per_backend!(cancellation_kills_tree);

/// The wall-time limit of the profile ends a spinning tree.
fn wall_time_kills_tree(w: &World, b: Backend) {
    let marker = unique("zcmark");
    let _reaper = Reaper(marker.clone());
    let mut profile = Profile::for_workspace(&w.ws);
    profile.limits.wall_time = Duration::from_secs(1);
    let script = detached_tree(&marker);
    let outcome = block_on(async {
        let sandbox = sandbox(b);
        let run = sandbox.run(&profile, ["/bin/sh", "-c", &script], std::future::pending());
        tokio::time::timeout(Duration::from_secs(30), run).await
    });
    let outcome = outcome
        .expect("ESCAPE: the wall-time limit did not end the command")
        .expect("run");
    assert_eq!(outcome.end, End::TimedOut, "{}", text(&outcome));
    let left = survivors_after_grace(&marker);
    assert!(
        left.is_empty(),
        "ESCAPE: {left:?} survived the wall-time limit\n{}",
        text(&outcome)
    );
}
per_backend!(wall_time_kills_tree);
