//! Lifetime of a confined tree when its launcher ends: a launcher process (this test binary
//! re-executed in the launcher role) spawns a command that leaves a background child, lets a
//! copy of every pipe end it holds — the lifeline's write end among them — live on in other
//! processes, as a careless embedding application or a fork of the launcher would, and is then
//! SIGKILLed. Within a second nothing of the command may be left: the helpers watch the
//! launcher's pidfd, which no copy of a descriptor can keep open. Per backend, cold (the
//! helper forked for the call) and, on namespaces, warm (the helper prepared after a first
//! call). Skipped with a reason when the backend is missing (a failure with `CI=true`).

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use zeroclaw_sandbox::{BackendChoice, Profile, Sandbox};

use crate::support;

const HELPER: &str = env!("CARGO_BIN_EXE_zeroclaw-sandbox-helper");

/// Set in the re-executed test binary: `<backend> <warm|cold> <marker> <workspace>`.
const ROLE: &str = "ZC_LIFETIME_LAUNCHER";

/// How long after the launcher's death nothing it confined may be left.
const GRACE: Duration = Duration::from_secs(1);

fn marker() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(1);
    format!(
        "3071.{}{:03}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// Host processes whose command line contains `needle` (not this one).
fn processes_with(needle: &str) -> Vec<(i32, String)> {
    let own = std::process::id() as i32;
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if let Ok(cmd) = std::fs::read(e.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if pid != own && cmd.contains(needle) {
                found.push((pid, cmd));
            }
        }
    }
    found
}

fn kill_all(needle: &str) {
    let end = Instant::now() + Duration::from_secs(2);
    while Instant::now() < end {
        let left = processes_with(needle);
        if left.is_empty() {
            return;
        }
        for (pid, _) in left {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The launcher role: spawns the command, leaks every pipe end it holds into holder
/// processes (`sleep 29.<marker>`), says `ready` and waits to be killed.
fn launcher(role: &str) {
    let mut words = role.split(' ');
    let (backend, mode, m, ws) = (
        words.next().unwrap(),
        words.next().unwrap(),
        words.next().unwrap(),
        words.next().unwrap(),
    );
    let choice: BackendChoice = backend.parse().unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let s = Sandbox::new(choice, false).unwrap().with_helper(HELPER);
        let p = Profile::for_workspace(ws);
        if mode == "warm" {
            s.run(&p, ["true"], std::future::pending()).await.unwrap();
            // The next call's helper is prepared in the background.
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        let script = format!("sleep {m} & sleep {m}");
        let _running = s.spawn(&p, ["sh", "-c", &script]).await.unwrap();
        let mut holders = Vec::new();
        for fd in std::fs::read_dir("/proc/self/fd").unwrap().flatten() {
            let target = std::fs::read_link(fd.path()).unwrap_or_default();
            if !target.to_string_lossy().starts_with("pipe:") {
                continue;
            }
            // A new writer on the same pipe: as good as a leaked copy of its write end (not
            // waiting for a reader on a pipe that has none).
            let Ok(copy) = std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(fd.path())
            else {
                continue;
            };
            holders.push(
                Command::new("sleep")
                    .arg(format!("29.{}", m.replace('.', "")))
                    .stdin(Stdio::null())
                    .stdout(copy)
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap(),
            );
        }
        // Straight to the descriptor: the test harness may capture `println!`.
        let mut out = std::io::stdout().lock();
        writeln!(out, "\nzc-launcher-ready {}", holders.len()).unwrap();
        out.flush().unwrap();
        drop(out);
        std::future::pending::<()>().await;
    });
}

/// Runs the launcher role for `backend`/`mode` in a child process, SIGKILLs it once the
/// command runs, and returns what of the command is left after the grace.
fn killed_launcher_leaves_nothing(test: &str, choice: BackendChoice, mode: &str) {
    if let Ok(role) = std::env::var(ROLE) {
        return launcher(&role);
    }
    if let Err(e) = Sandbox::new(choice, false) {
        support::require_feature(&format!("backend {choice}: {e}"));
        return;
    }
    let ws = tempfile::Builder::new()
        .prefix("zc-lifetime-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let m = marker();
    let holders = format!("sleep 29.{}", m.replace('.', ""));
    // This file is the module `lifetime` of its test binary.
    let test = format!("lifetime::{test}");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", &test, "--nocapture", "--test-threads", "1"])
        .env(
            ROLE,
            format!("{choice} {mode} {m} {}", ws.path().to_string_lossy()),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let ready = lines
        .find(|l| l.as_ref().is_ok_and(|l| l.starts_with("zc-launcher-ready")))
        .and_then(Result::ok);
    // The shell and its two sleeps.
    let running = || processes_with(&format!("sleep {m}")).len();
    let end = Instant::now() + Duration::from_secs(30);
    while running() < 3 && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(5));
    }
    let before = running();
    let _ = child.kill();
    let _ = child.wait();
    std::thread::sleep(GRACE);
    let left = processes_with(&format!("sleep {m}"));
    kill_all(&format!("sleep {m}"));
    kill_all(&holders);
    assert!(ready.is_some(), "the launcher never got ready");
    assert_eq!(before, 3, "the command and its two sleeps never ran");
    assert!(
        left.is_empty(),
        "ESCAPE on {choice} ({mode}): {left:?} outlived the killed launcher by {GRACE:?} \
         while copies of its pipe ends lived on"
    );
}

#[test]
fn namespaces_cold_ends_with_the_launcher_whatever_holds_its_lifeline() {
    killed_launcher_leaves_nothing(
        "namespaces_cold_ends_with_the_launcher_whatever_holds_its_lifeline",
        BackendChoice::Namespaces,
        "cold",
    );
}

#[test]
fn namespaces_warm_ends_with_the_launcher_whatever_holds_its_lifeline() {
    killed_launcher_leaves_nothing(
        "namespaces_warm_ends_with_the_launcher_whatever_holds_its_lifeline",
        BackendChoice::Namespaces,
        "warm",
    );
}

#[test]
fn bubblewrap_ends_with_the_launcher_whatever_holds_its_lifeline() {
    killed_launcher_leaves_nothing(
        "bubblewrap_ends_with_the_launcher_whatever_holds_its_lifeline",
        BackendChoice::Bubblewrap,
        "cold",
    );
}

#[test]
fn landlock_ends_with_the_launcher_whatever_holds_its_lifeline() {
    killed_launcher_leaves_nothing(
        "landlock_ends_with_the_launcher_whatever_holds_its_lifeline",
        BackendChoice::Landlock,
        "cold",
    );
}

/// The namespaces backend and a workspace for calls made from this process; `None` (skipped
/// with a reason) where the backend is missing, a failure with `CI=true`.
fn namespaces_sandbox() -> Option<(Sandbox, tempfile::TempDir)> {
    let s = match Sandbox::new(BackendChoice::Namespaces, false) {
        Ok(s) => s.with_helper(HELPER),
        Err(e) => {
            support::require_feature(&format!("namespaces backend: {e}"));
            return None;
        }
    };
    let ws = tempfile::Builder::new()
        .prefix("zc-lifetime-")
        .tempdir_in("/var/tmp")
        .unwrap();
    Some((s, ws))
}

/// The launcher's pidfd stays with the helpers: the command cannot find it among its own
/// descriptors or its pid namespace's init's (a pidfd of the daemon could signal it), cold
/// or served by a warm helper.
#[tokio::test(flavor = "current_thread")]
async fn the_command_never_holds_the_launchers_pidfd() {
    let Some((s, ws)) = namespaces_sandbox() else {
        return;
    };
    let p = Profile::for_workspace(ws.path());
    let script = "ls -l /proc/self/fd/ /proc/1/fd/ 2>&1; echo listed";
    for call in ["cold", "warm"] {
        let out = s
            .run(&p, ["sh", "-c", script], std::future::pending())
            .await
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("listed"), "{call}: {text}");
        assert!(
            !text.contains("pidfd"),
            "ESCAPE ({call}): a pidfd within the command's reach:\n{text}"
        );
        // The next call of this shape is served by a helper prepared in between.
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// The init's own descriptors (the report pipe the launcher trusts, the lifeline, namespace
/// descriptors) are out of the command's reach through `/proc/1/fd`, cold and warm: a warm
/// init has dropped its capabilities, so only its being non-dumpable keeps the command out.
#[tokio::test(flavor = "current_thread")]
async fn the_command_cannot_open_its_inits_descriptors() {
    let Some((s, ws)) = namespaces_sandbox() else {
        return;
    };
    let p = Profile::for_workspace(ws.path());
    // A forged report line written to each of the init's descriptors it can open.
    let script = "for f in /proc/1/fd/*; do [ -e \"$f\" ] && echo \"opened $f\"; \
                  (printf 'Ended\\n' > \"$f\") 2>/dev/null && echo \"wrote $f\"; done; echo done";
    for call in ["cold", "warm"] {
        let out = s
            .run(&p, ["sh", "-c", script], std::future::pending())
            .await
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("done"), "{call}: {text}");
        assert!(
            !text.contains("opened") && !text.contains("wrote"),
            "ESCAPE ({call}): the init's descriptors within the command's reach:\n{text}"
        );
        assert_eq!(out.shell_code(), 0, "{call}: {text}");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}
