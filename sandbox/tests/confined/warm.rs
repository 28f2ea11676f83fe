//! Warm helpers on the namespace backend: after a call, the next one of the same shape is
//! served by a helper prepared in between (with its stdio handed over), and a helper whose
//! root no longer matches the host (protected paths replaced, another network shape) is not
//! used. A workspace without `.git` keeps the warm path, and a waiting helper makes no `.git`
//! there before its call (git's stage is made once the call arrives). Skipped with a reason
//! when user namespaces are missing (a failure with `CI=true`).

use std::path::Path;
use std::time::Duration;

use zeroclaw_sandbox::{BackendChoice, Network, Profile, Sandbox};

use crate::support;

const HELPER: &str = env!("CARGO_BIN_EXE_zeroclaw-sandbox-helper");

/// The namespace backend through a uniquely named link to the helper (so its processes can
/// be found by command line), or `None` (skipped) when unavailable.
fn namespaces(dir: &Path) -> Option<(Sandbox, String)> {
    match Sandbox::new(BackendChoice::Namespaces, false) {
        Ok(s) => {
            let link = dir.join(format!("zc-warm-{}", std::process::id()));
            std::os::unix::fs::symlink(HELPER, &link).unwrap();
            let needle = format!("{} ", link.display());
            Some((s.with_helper(link), needle))
        }
        Err(e) => {
            support::require_feature(&format!("namespaces backend: {e}"));
            None
        }
    }
}

fn workspace() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("zc-warm-")
        .tempdir_in("/var/tmp")
        .unwrap()
}

fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 2..].split(' ').nth(1)?.parse().ok()
}

/// Helpers forked by the zygote (processes with the helper's command line whose parent has
/// it too, outside any pid namespace of ours).
fn forked_helpers(needle: &str) -> Vec<i32> {
    let mut all = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if let Ok(cmd) = std::fs::read(e.path().join("cmdline"))
            && String::from_utf8_lossy(&cmd)
                .replace('\0', " ")
                .contains(needle)
        {
            all.push(pid);
        }
    }
    all.iter()
        .copied()
        .filter(|pid| parent_of(*pid).is_some_and(|pp| all.contains(&pp)))
        .collect()
}

/// Waits until a helper is waiting for the next call; returns the helpers seen.
fn await_warm(needle: &str) -> Vec<i32> {
    for _ in 0..400 {
        let found = forked_helpers(needle);
        if !found.is_empty() {
            // Let it finish building its root (a helper still building serves the call too,
            // but the point of these tests is the one that waited).
            std::thread::sleep(Duration::from_millis(100));
            return forked_helpers(needle);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("no warm helper appeared");
}

async fn sh(s: &Sandbox, p: &Profile, script: &str) -> zeroclaw_sandbox::Outcome {
    s.run(p, ["sh", "-c", script], std::future::pending())
        .await
        .unwrap_or_else(|e| panic!("{script}: {e}"))
}

#[tokio::test(flavor = "current_thread")]
async fn the_next_call_is_served_by_a_helper_prepared_after_the_last_one() {
    let tools = workspace();
    let Some((s, needle)) = namespaces(tools.path()) else {
        return;
    };
    let ws = workspace();
    let p = Profile::for_workspace(ws.path());
    assert_eq!(sh(&s, &p, "true").await.shell_code(), 0);
    let waiting = await_warm(&needle);
    // The workspace has no `.git`: the waiting helper made none (its stage waits for the call).
    // The last call's placeholder goes just after its end is reported: on a loaded machine
    // its helper may still be about it.
    let gone = (0..300).any(|_| {
        let gone = !ws.path().join(".git").exists();
        if !gone {
            std::thread::sleep(Duration::from_millis(10));
        }
        gone
    });
    assert!(gone, "a waiting helper left .git in the workspace");
    // The call's stdin, stdout and stderr reach the command through the waiting helper.
    let mut c = s
        .spawn(&p, ["sh", "-c", "cat; echo err >&2; exit 3"])
        .await
        .unwrap();
    assert!(
        waiting.contains(&(c.id() as i32)) && c.enforcement().warm,
        "the call was not served by a waiting helper: {} not in {waiting:?}",
        c.id()
    );
    let mut stdin = c.take_stdin().unwrap();
    tokio::io::AsyncWriteExt::write_all(&mut stdin, b"from stdin\n")
        .await
        .unwrap();
    drop(stdin);
    let o = c.wait(|_, _| {}, std::future::pending()).await.unwrap();
    assert_eq!(o.shell_code(), 3);
    assert_eq!(String::from_utf8_lossy(&o.stdout), "from stdin\n");
    assert_eq!(String::from_utf8_lossy(&o.stderr), "err\n");
    assert!(o.enforcement.namespaces.iter().any(|n| n == "net"));
    // Each call has a /tmp of its own, warm or not.
    assert_eq!(sh(&s, &p, "echo mine > /tmp/left").await.shell_code(), 0);
    await_warm(&needle);
    let o = sh(&s, &p, "test ! -e /tmp/left").await;
    assert_eq!(o.shell_code(), 0, "/tmp of the last call is visible");
    assert!(o.enforcement.warm);
}

/// The host replaces what a waiting helper's root protects: the helper must not be used,
/// or the new directory would be writable.
#[tokio::test(flavor = "current_thread")]
async fn a_helper_is_not_used_once_the_paths_it_protects_are_replaced() {
    let tools = workspace();
    let Some((s, needle)) = namespaces(tools.path()) else {
        return;
    };
    let ws = workspace();
    let top = ws.path().join(".tools");
    std::fs::create_dir_all(top.join("hooks")).unwrap();
    let p = Profile::for_workspace(ws.path()).protect(top.join("hooks"));
    let plant = "echo 'echo pwned' > .tools/hooks/pre-commit";
    for replace in [
        // The protected directory recreated.
        |top: &Path| {
            std::fs::remove_dir_all(top.join("hooks")).unwrap();
            std::fs::create_dir(top.join("hooks")).unwrap();
        },
        // Its parent moved aside and made anew.
        |top: &Path| {
            let aside = top.with_file_name(format!(".tools-{}", std::process::id()));
            std::fs::rename(top, &aside).unwrap();
            std::fs::create_dir_all(top.join("hooks")).unwrap();
            std::fs::remove_dir_all(aside).unwrap();
        },
    ] {
        assert_ne!(sh(&s, &p, plant).await.shell_code(), 0, "control run");
        await_warm(&needle);
        replace(&top);
        let o = sh(&s, &p, plant).await;
        assert!(
            !top.join("hooks/pre-commit").exists(),
            "ESCAPE: a hook was planted through a stale warm helper: {o:?}"
        );
        assert!(!o.enforcement.warm, "a stale helper served the call");
    }
}

/// In an existing repository a warm helper serves the call: `.git` is the call's private
/// stage, made from the repository as it is when the call arrives (also once the host made
/// `.git` anew), and a hook the child writes there never reaches the host. So too in a
/// layered workspace (the transactional workspace), where the init binds the stage from the
/// host's `.git` its root shows under the overlay.
#[tokio::test(flavor = "current_thread")]
async fn in_a_repository_the_warm_path_stages_git_per_call() {
    let tools = workspace();
    let Some((s, needle)) = namespaces(tools.path()) else {
        return;
    };
    // The layers directory must be private to the daemon's user (`layer::dir`).
    let layers = workspace();
    std::fs::set_permissions(
        layers.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .unwrap();
    for layered in [false, true] {
        let ws = workspace();
        let git = ws.path().join(".git");
        let make = |git: &Path| {
            std::fs::create_dir_all(git.join("hooks")).unwrap();
            std::fs::create_dir_all(git.join("objects")).unwrap();
            std::fs::create_dir_all(git.join("refs/heads")).unwrap();
            std::fs::write(git.join("HEAD"), "ref: refs/heads/main\n").unwrap();
            std::fs::write(git.join("config"), "[core]\n\tbare = false\n").unwrap();
        };
        make(&git);
        let mut p = Profile::for_workspace(ws.path());
        if layered {
            p = p.land_through(layers.path());
        }
        let plant = |n: usize| {
            format!(
                "echo 'echo pwned' > .git/hooks/pre-commit && git config user.name zc \
                 && echo kept > written-{n}"
            )
        };
        assert_eq!(sh(&s, &p, &plant(0)).await.shell_code(), 0, "cold run");
        for (n, remake) in [(1, false), (2, true)] {
            await_warm(&needle);
            if remake {
                let aside = git.with_file_name(format!(".git-{}", std::process::id()));
                std::fs::rename(&git, &aside).unwrap();
                make(&git);
                std::fs::remove_dir_all(aside).unwrap();
            }
            let o = sh(&s, &p, &plant(n)).await;
            assert_eq!(o.shell_code(), 0, "layered {layered}: {o:?}");
            // A remade `.git` under a layer: the waiting root showed the old one, so the
            // call may start cold; the stage is still the new repository's.
            assert!(
                o.enforcement.warm || (layered && remake),
                "layered {layered}: no warm helper served the call"
            );
            assert!(
                !git.join("hooks/pre-commit").exists(),
                "ESCAPE: a hook reached the host (layered {layered}): {o:?}"
            );
            let config = std::fs::read_to_string(git.join("config")).unwrap();
            assert!(
                config.contains("zc"),
                "layered {layered}: the accepted change did not land: {config}"
            );
        }
        let written = std::fs::read_dir(ws.path())
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("written-"))
            .count();
        assert_eq!(
            written, 3,
            "layered {layered}: the workspace's writes landed"
        );
    }
    // The helper waiting for a next call has a layer in `layers`: gone before it is.
    drop(s);
    for _ in 0..500 {
        if forked_helpers(&needle).is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Calls of another shape (network allowed, then denied again) get their own helpers: each
/// sees the network it asked for.
#[tokio::test(flavor = "current_thread")]
async fn each_call_gets_the_network_it_asked_for() {
    let tools = workspace();
    let Some((s, needle)) = namespaces(tools.path()) else {
        return;
    };
    let ws = workspace();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let connect =
        format!("python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 2)'");
    let deny = Profile::for_workspace(ws.path());
    let mut allow = deny.clone();
    allow.network = Network::Allow;
    for (profile, reachable) in [
        (&deny, false),
        (&allow, true),
        (&deny, false),
        (&allow, true),
    ] {
        let o = sh(&s, profile, &connect).await;
        assert_eq!(
            o.shell_code() == 0,
            reachable,
            "network {:?}: {}",
            profile.network,
            String::from_utf8_lossy(&o.stderr)
        );
        await_warm(&needle);
    }
}

/// The workspace moved aside and made anew while a helper waited: the call must write to the
/// new one (a waiting root still shows the old directory under the workspace's path).
#[tokio::test(flavor = "current_thread")]
async fn a_call_after_the_workspace_was_replaced_writes_to_the_new_one() {
    let tools = workspace();
    let Some((s, needle)) = namespaces(tools.path()) else {
        return;
    };
    let parent = workspace();
    let ws = parent.path().join("ws");
    // A repository, whose `.git/hooks` and `.git/config` the root binds.
    std::fs::create_dir_all(ws.join(".git")).unwrap();
    let p = Profile::for_workspace(&ws);
    assert_eq!(sh(&s, &p, "true").await.shell_code(), 0);
    await_warm(&needle);
    std::fs::rename(&ws, parent.path().join("old")).unwrap();
    // Made anew with the same entries (so the plan is the same: only identities differ).
    std::fs::create_dir(&ws).unwrap();
    for entry in std::fs::read_dir(parent.path().join("old"))
        .unwrap()
        .flatten()
    {
        let path = ws.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(path.join("hooks")).unwrap();
        } else {
            std::fs::write(path, "").unwrap();
        }
    }
    std::fs::write(ws.join(".git/config"), "").unwrap();
    let o = sh(&s, &p, "echo here > written").await;
    assert_eq!(o.shell_code(), 0, "{o:?}");
    assert!(
        ws.join("written").exists(),
        "the call wrote to the old workspace (moved to {})",
        parent.path().join("old").display()
    );
}

/// A workspace without `.git`: a waiting helper serves `git init` too (its stage is made
/// once the call arrives); the repository lands validated when the call ends, and the
/// refusal reaches the call's stderr.
#[tokio::test(flavor = "current_thread")]
async fn a_waiting_helper_serves_git_init_in_a_workspace_without_git() {
    let tools = workspace();
    let Some((s, needle)) = namespaces(tools.path()) else {
        return;
    };
    let ws = workspace();
    let p = Profile::for_workspace(ws.path());
    assert_eq!(sh(&s, &p, "true").await.shell_code(), 0);
    await_warm(&needle);
    let o = sh(
        &s,
        &p,
        "git init -q && git config user.name zc && git config core.fsmonitor /bin/false",
    )
    .await;
    assert_eq!(o.shell_code(), 0, "{o:?}");
    assert!(o.enforcement.warm, "the call was not served warm");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("git: refused core.fsmonitor in .git/config"),
        "{stderr}"
    );
    let host_git = |key: &str| {
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(ws.path())
            .args(["config", "--local", "--get", key])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    assert_eq!(host_git("user.name"), "zc");
    assert_eq!(
        host_git("core.fsmonitor"),
        "",
        "an unvalidated config landed"
    );
}
