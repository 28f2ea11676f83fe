//! Launcher integration tests: real confined processes through the stand-alone helper, on
//! every backend available here (a missing backend is skipped with its reason, or fails when
//! `CI=true`).

use std::path::{Path, PathBuf};

use zeroclaw_sandbox::{
    Backend, BackendChoice, End, ExitInfo, Profile, Sandbox, SandboxError, SetupError, Stage,
    Stream,
};

const HELPER: &str = env!("CARGO_BIN_EXE_zeroclaw-sandbox-helper");

use crate::support;

/// The sandbox of backend `choice` with the stand-alone helper; `None` (skipped, or a failure
/// with `CI=true`) when the backend is unavailable here.
fn sandbox(choice: BackendChoice) -> Option<Sandbox> {
    match Sandbox::new(choice, false) {
        Ok(s) => Some(s.with_helper(HELPER)),
        Err(e) => {
            support::require_feature(&format!("backend {choice}: {e}"));
            None
        }
    }
}

/// One `#[tokio::test]` per backend for each test body `name(s: Sandbox)`: a failure on one
/// backend no longer hides the others (`namespaces::name`, `bubblewrap::name`,
/// `landlock::name`).
macro_rules! per_backend {
    ($($name:ident),* $(,)?) => {
        per_backend!(@module namespaces, Namespaces, [$($name),*]);
        per_backend!(@module bubblewrap, Bubblewrap, [$($name),*]);
        per_backend!(@module landlock, Landlock, [$($name),*]);
    };
    (@module $module:ident, $choice:ident, [$($name:ident),*]) => {
        mod $module {
            $(
                #[tokio::test(flavor = "current_thread")]
                async fn $name() {
                    if let Some(s) = super::sandbox(super::BackendChoice::$choice) {
                        super::$name(s).await;
                    }
                }
            )*
        }
    };
}

/// A workspace outside any git repository.
fn workspace() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("zc-s1-launcher-")
        .tempdir_in("/var/tmp")
        .unwrap()
}

fn marker() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(1);
    format!(
        "1000.{}{:03}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// Processes on the host whose command line contains `needle`.
fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 2..].split(' ').nth(1)?.parse().ok()
}

fn processes_with(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmd) = std::fs::read(e.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if cmd.contains(needle) {
                found.push(format!("{}: {cmd}", e.file_name().to_string_lossy()));
            }
        }
    }
    found
}

async fn run(s: &Sandbox, p: &Profile, script: &str) -> zeroclaw_sandbox::Outcome {
    s.run(p, ["sh", "-c", script], std::future::pending())
        .await
        .unwrap_or_else(|e| panic!("{}: {e}", s.backend()))
}

async fn exit_codes_and_signals_pass_through(s: Sandbox) {
    let ws = workspace();
    let p = Profile::for_workspace(ws.path());
    assert_eq!(
        run(&s, &p, "exit 7").await.exit,
        ExitInfo::Code(7),
        "{}",
        s.backend()
    );
    let killed = run(&s, &p, "kill -KILL $$").await;
    assert_eq!(
        killed.shell_code(),
        137,
        "{}: {:?}",
        s.backend(),
        killed.exit
    );
    assert_eq!(killed.end, End::Exited);
}

async fn output_is_streamed_per_stream_and_reported(s: Sandbox) {
    let ws = workspace();
    let p = Profile::for_workspace(ws.path());
    let mut c = s
        .spawn(&p, ["sh", "-c", "echo one; echo two >&2; echo three"])
        .await
        .unwrap();
    assert_eq!(c.enforcement().backend, s.backend().name());
    assert!(c.enforcement().seccomp && c.enforcement().no_new_privs);
    assert!(c.enforcement().capabilities_dropped);
    assert_eq!(c.enforcement().landlock, "full");
    drop(c.take_stdin());
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let o = c
        .wait(
            |stream, bytes| match stream {
                Stream::Stdout => out.extend_from_slice(bytes),
                Stream::Stderr => err.extend_from_slice(bytes),
            },
            std::future::pending(),
        )
        .await
        .unwrap();
    assert_eq!(out, b"one\nthree\n", "{}", s.backend());
    assert_eq!(err, b"two\n", "{}", s.backend());
    assert_eq!((o.stdout, o.stderr), (out, err));
    assert!(!o.truncated);
}

async fn output_flood_is_cut_at_the_limit_and_the_tree_killed(s: Sandbox) {
    let ws = workspace();
    let mut p = Profile::for_workspace(ws.path());
    p.limits.output_bytes = 1000;
    let o = run(&s, &p, "yes").await;
    assert_eq!(o.end, End::OutputLimit, "{}", s.backend());
    assert!(o.truncated);
    assert_eq!(o.stdout.len(), 1000);
}

async fn wall_time_kills_the_whole_tree_including_setsid_and_double_forks(s: Sandbox) {
    let ws = workspace();
    let mut p = Profile::for_workspace(ws.path());
    p.limits.wall_time = std::time::Duration::from_secs(1);
    let m = marker();
    let script = format!(
        "setsid sh -c 'sleep {m}' & (sleep {m} &); nohup sleep {m} >/dev/null 2>&1 & sleep {m}"
    );
    let o = run(&s, &p, &script).await;
    assert_eq!(o.end, End::TimedOut, "{}", s.backend());
    assert_eq!(
        processes_with(&m),
        Vec::<String>::new(),
        "{} left processes",
        s.backend()
    );
}

async fn cancellation_kills_the_whole_tree(s: Sandbox) {
    let ws = workspace();
    let p = Profile::for_workspace(ws.path());
    let m = marker();
    let script = format!("setsid sh -c 'sleep {m}' & (sleep {m} &); echo started; sleep {m}");
    let c = s.spawn(&p, ["sh", "-c", &script]).await.unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let mut tx = Some(tx);
    let o = c
        .wait(
            |_, bytes| {
                if bytes.starts_with(b"started") {
                    tx.take().map(|t| t.send(()));
                }
            },
            async {
                let _ = rx.await;
            },
        )
        .await
        .unwrap();
    assert_eq!(o.end, End::Cancelled, "{}", s.backend());
    assert_eq!(
        processes_with(&m),
        Vec::<String>::new(),
        "{} left processes",
        s.backend()
    );
}

async fn setup_failures_name_their_stage(s: Sandbox) {
    let ws = workspace();
    let p = Profile::for_workspace(ws.path());
    let e = s.spawn(&p, ["no-such-command-zc"]).await.err().unwrap();
    assert!(
        matches!(
            e,
            SandboxError::Setup(SetupError {
                stage: Stage::Exec,
                ..
            })
        ),
        "{}: {e}",
        s.backend()
    );
    if s.backend() == Backend::Landlock {
        return;
    }
    let (ws, outside) = (workspace(), workspace());
    std::os::unix::fs::symlink(outside.path(), ws.path().join(".git")).unwrap();
    let p = Profile::for_workspace(ws.path());
    let e = s.spawn(&p, ["true"]).await.err().unwrap();
    let SandboxError::Setup(SetupError { stage, call, .. }) = &e else {
        panic!("{}: {e}", s.backend())
    };
    assert!(
        matches!(stage, Stage::Mounts | Stage::Placeholders),
        "{}: {e}",
        s.backend()
    );
    assert!(call.contains("symlink"), "{call}");
    assert_eq!(
        std::fs::read_dir(outside.path()).unwrap().count(),
        0,
        "wrote through the link"
    );
}

async fn registered_operation_runs_confined(s: Sandbox) {
    let ws = workspace();
    let file: PathBuf = ws.path().join("note.txt");
    std::fs::write(&file, "inside").unwrap();
    let p = Profile::for_workspace(ws.path());
    let ok = s
        .run_op(&p, "read", path_bytes(&file), std::future::pending())
        .await
        .unwrap();
    assert_eq!(
        (ok.shell_code(), ok.stdout.as_slice()),
        (0, &b"inside"[..]),
        "{}",
        s.backend()
    );
    let secret_dir = workspace();
    let secret = secret_dir.path().join("secret.txt");
    std::fs::write(&secret, "canary").unwrap();
    let denied = s
        .run_op(&p, "read", path_bytes(&secret), std::future::pending())
        .await
        .unwrap();
    assert_eq!(denied.shell_code(), 1, "{}", s.backend());
    assert!(!String::from_utf8_lossy(&denied.stdout).contains("canary"));
    assert!(
        String::from_utf8_lossy(&denied.stderr).contains("read "),
        "{}",
        s.backend()
    );
    let unknown = s
        .run_op(&p, "nope", Vec::new(), std::future::pending())
        .await
        .err()
        .unwrap();
    assert!(matches!(
        unknown,
        SandboxError::Setup(SetupError {
            stage: Stage::Exec,
            ..
        })
    ));
}

fn path_bytes(p: &Path) -> Vec<u8> {
    p.to_string_lossy().into_owned().into_bytes()
}

/// Waits (bounded) until no host process mentions `needle`; returns what is left.
fn gone_eventually(needle: &str) -> Vec<String> {
    for _ in 0..3000 {
        if processes_with(needle).is_empty() {
            return Vec::new();
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    processes_with(needle)
}

async fn dropping_the_handle_kills_the_tree_via_the_lifeline(s: Sandbox) {
    let ws = workspace();
    let p = Profile::for_workspace(ws.path());
    let m = marker();
    let script = format!("setsid sh -c 'sleep {m}' & (sleep {m} &); sleep {m}");
    let c = s.spawn(&p, ["sh", "-c", &script]).await.unwrap();
    let sleeps = || {
        let exact = format!(": sleep {m} ");
        processes_with(&m)
            .iter()
            .filter(|p| p.ends_with(&exact))
            .count()
    };
    for _ in 0..3000 {
        if sleeps() == 3 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(sleeps(), 3, "the three sleeps never started");
    drop(c);
    assert_eq!(
        gone_eventually(&m),
        Vec::<String>::new(),
        "{} left processes",
        s.backend()
    );
}

async fn a_helper_that_does_not_confine_is_a_setup_error_not_a_run(s: Sandbox) {
    let backend = s.backend();
    let s = s.with_helper("/bin/echo");
    let ws = workspace();
    let e = s
        .spawn(&Profile::for_workspace(ws.path()), ["true"])
        .await
        .err()
        .unwrap();
    let SandboxError::Setup(SetupError { stage, call, .. }) = &e else {
        panic!("{backend}: {e}")
    };
    // The helper binary is started once, as the zygote that forks every helper: one that
    // does not serve fails before any backend-specific stage, naming itself.
    assert_eq!(*stage, Stage::Spawn, "{backend}: {e}");
    assert!(
        call.contains("/bin/echo") && call.contains("does not serve"),
        "{backend}: {call}"
    );
}

/// A helper wrapper that removes `gone` just before exec'ing the real helper: the plan is
/// already built (it exists then), the helper's mounts see it missing — deterministically.
fn helper_removing(dir: &Path, gone: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let quoted = gone.display().to_string().replace('\'', r"'\''");
    let script = format!("#!/bin/sh\n/bin/rm -rf '{quoted}'\nexec '{HELPER}' \"$@\"\n");
    let path = dir.join("helper-wrapper.sh");
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// A read-only root that disappears between planning and mounting is skipped, like the roots
/// missing at planning time; the rest of the sandbox works.
async fn a_read_only_root_removed_after_planning_is_skipped(s: Sandbox) {
    let backend = s.backend();
    let (ws, tools, gone) = (workspace(), workspace(), workspace());
    let kept = tools.path().join("kept");
    std::fs::create_dir(&kept).unwrap();
    std::fs::write(kept.join("data.txt"), "still-readable").unwrap();
    let s = s.with_helper(helper_removing(tools.path(), gone.path()));
    let p = Profile::for_workspace(ws.path())
        .allow_read(gone.path())
        .allow_read(&kept);
    let script = format!("cat {}/data.txt && echo done > out.txt", kept.display());
    let o = run(&s, &p, &script).await;
    assert!(!gone.path().exists(), "{backend}: the wrapper did not run");
    assert_eq!(
        (o.shell_code(), o.stdout.as_slice()),
        (0, &b"still-readable"[..]),
        "{backend}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join("out.txt")).unwrap(),
        "done\n",
        "{backend}"
    );
}

/// Roots that another program removes and recreates while the sandbox is being built (a
/// `full` session reads — and under `full_host_writes` writes — the host's `/var/tmp`, where
/// other programs' temporary directories come and go) never fail the call, whichever step of
/// the build they vanish at: read-only ones, and writable ones holding nothing guarded.
async fn roots_churned_while_the_sandbox_is_built_never_fail_the_call(s: Sandbox) {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    const ROOTS: usize = 64;
    const CALLS: usize = 30;
    let backend = s.backend();
    let (ws, churned) = (workspace(), workspace());
    let roots: Vec<PathBuf> = (0..ROOTS)
        .map(|i| churned.path().join(format!("tmp-{i}")))
        .collect();
    let mut p = Profile::for_workspace(ws.path());
    for (i, root) in roots.iter().enumerate() {
        std::fs::create_dir(root).unwrap();
        p = if i % 2 == 0 {
            p.allow_read(root)
        } else {
            p.allow_write(root)
        };
    }
    let stop = Arc::new(AtomicBool::new(false));
    let churn = {
        let (stop, roots) = (stop.clone(), roots.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                for root in &roots {
                    let _ = std::fs::remove_dir(root);
                    let _ = std::fs::create_dir(root);
                }
            }
        })
    };
    let mut failures = Vec::new();
    for _ in 0..CALLS {
        match s.run(&p, ["true"], std::future::pending()).await {
            Ok(o) if o.shell_code() == 0 => {}
            Ok(o) => failures.push(String::from_utf8_lossy(&o.stderr).into_owned()),
            Err(e) => failures.push(e.to_string()),
        }
    }
    stop.store(true, Ordering::Relaxed);
    churn.join().unwrap();
    assert!(
        failures.is_empty(),
        "{backend}: {} of {CALLS} calls failed; first: {}",
        failures.len(),
        failures[0]
    );
}

/// A writable root that disappears between planning and mounting never fails the call: one
/// holding nothing guarded is skipped; one guarding a protected path fails the first setup,
/// and the call is planned again from the host as it is then (the namespace backends bind it;
/// Landlock-only grants nothing on a missing path). Either way the command cannot make it on
/// the host.
async fn a_writable_root_removed_after_planning_never_fails_the_call(s: Sandbox) {
    let backend = s.backend();
    if backend == Backend::Landlock {
        return;
    }
    let (ws, tools, gone) = (workspace(), workspace(), workspace());
    // A zygote of its own each (the wrapper runs when the zygote starts).
    let removing = || {
        s.clone()
            .with_helper(helper_removing(tools.path(), gone.path()))
    };
    let plain = Profile::for_workspace(ws.path()).allow_write(gone.path());
    let g = gone.path().display();
    let make = format!("mkdir -p {g}/keep && echo x > {g}/keep/made; echo ran");
    for guarding in [false, true] {
        std::fs::create_dir_all(gone.path().join("keep")).unwrap();
        let p = if guarding {
            plain.clone().protect(gone.path().join("keep"))
        } else {
            plain.clone()
        };
        let o = run(&removing(), &p, &make).await;
        assert!(
            String::from_utf8_lossy(&o.stdout).contains("ran"),
            "{backend} guarding={guarding}: {o:?}"
        );
        assert!(
            !gone.path().exists(),
            "{backend} guarding={guarding}: the vanished root is on the host again"
        );
    }
}

/// A protected path removed between planning and mounting: the first setup fails before
/// anything ran, the call is planned again (the new plan makes the path's placeholder), runs,
/// and cannot write there.
async fn a_protected_path_removed_after_planning_is_planned_again(s: Sandbox) {
    let backend = s.backend();
    if backend == Backend::Landlock {
        return;
    }
    let (ws, tools) = (workspace(), workspace());
    let hooks = ws.path().join(".tools/hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    let s = s.with_helper(helper_removing(tools.path(), &hooks));
    let p = Profile::for_workspace(ws.path()).protect(&hooks);
    let o = run(&s, &p, "echo pwned > .tools/hooks/pre-commit; echo ran").await;
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("ran"),
        "{backend}: {o:?}"
    );
    assert!(
        !hooks.join("pre-commit").exists(),
        "{backend}: ESCAPE: the command wrote in a protected path"
    );
}

/// A denied directory inside another denied directory, both under an allowed root (read-only
/// or writable): masking the outer one hides the inner one too; the run succeeds and neither
/// is readable, while the rest of the root is.
async fn nested_denied_paths_are_hidden_and_the_run_succeeds(s: Sandbox) {
    let backend = s.backend();
    for writable in [false, true] {
        let (ws, data) = (workspace(), workspace());
        let outer = data.path().join("secret");
        let inner = outer.join("sub");
        std::fs::create_dir_all(&inner).unwrap();
        std::fs::write(outer.join("a.txt"), "canary-outer").unwrap();
        std::fs::write(inner.join("b.txt"), "canary-inner").unwrap();
        std::fs::write(data.path().join("visible.txt"), "visible").unwrap();
        let p = Profile::for_workspace(ws.path());
        let p = if writable {
            p.allow_write(data.path())
        } else {
            p.allow_read(data.path())
        };
        let p = p.deny(&outer).deny(&inner);
        let d = data.path().display();
        let script = format!(
            "cat {d}/visible.txt; cat {d}/secret/a.txt {d}/secret/sub/b.txt; ls -R {d}/secret"
        );
        let o = run(&s, &p, &script).await;
        let out = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(
            o.stdout.starts_with(b"visible"),
            "{backend} writable={writable}: {out}"
        );
        let listed = String::from_utf8_lossy(&o.stdout);
        assert!(
            !out.contains("canary") && !listed.contains("a.txt") && !listed.contains("b.txt"),
            "{backend} writable={writable}: a denied path was readable: {out}"
        );
    }
}

/// A helper wrapper that runs `sh_line` just before exec'ing the real helper (after the plan
/// was built): a deterministic stand-in for another process racing the launcher.
fn helper_running(dir: &Path, sh_line: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let script = format!("#!/bin/sh\n{sh_line}\nexec '{HELPER}' \"$@\"\n");
    let path = dir.join("helper-race.sh");
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// A writable root holding a denied path is carved into its entries; one of those entries
/// replaced by a symlink to a secret directory after planning (as another sandbox sharing the
/// root could) must not carry a rule onto the secret: it is neither readable nor writable.
async fn an_entry_swapped_for_a_symlink_after_planning_grants_nothing(s: Sandbox) {
    let backend = s.backend();
    let (ws, data, secret, tools) = (workspace(), workspace(), workspace(), workspace());
    let d = data.path();
    std::fs::create_dir_all(d.join(".ssh")).unwrap();
    std::fs::create_dir(d.join("src")).unwrap();
    std::fs::write(secret.path().join("key.txt"), "canary-swapped").unwrap();
    let swap = format!(
        "mv '{0}/src' '{0}/src.orig' && ln -s '{1}' '{0}/src'",
        d.display(),
        secret.path().display()
    );
    let s = s.with_helper(helper_running(tools.path(), &swap));
    let p = Profile::for_workspace(ws.path())
        .allow_write(d)
        .deny(d.join(".ssh"));
    let script = format!(
        "cat {0}/src/key.txt; echo planted > {0}/src/planted.txt; ls {0}/src/",
        d.display()
    );
    let o = run(&s, &p, &script).await;
    assert!(
        d.join("src").is_symlink(),
        "{backend}: the wrapper did not run"
    );
    let out = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let listed = String::from_utf8_lossy(&o.stdout);
    assert!(
        !out.contains("canary-swapped") && !listed.lines().any(|l| l == "key.txt"),
        "{backend}: ESCAPE, the secret was read or listed through the swapped entry: {out}"
    );
    assert!(
        !secret.path().join("planted.txt").exists(),
        "{backend}: ESCAPE, a file was written through the swapped entry: {out}"
    );
}

/// Denied paths that do not exist yet inside a writable root (`.ssh`, a file name like
/// `.netrc`, and one two levels down): the run succeeds, the root stays writable beside them,
/// none of them can be created inside, and nothing is left on the host afterwards.
async fn missing_denied_paths_in_a_writable_root_stay_absent_and_leave_nothing(s: Sandbox) {
    let backend = s.backend();
    let (ws, home) = (workspace(), workspace());
    let h = home.path();
    std::fs::create_dir(h.join("sub")).unwrap();
    let p = Profile::for_workspace(ws.path())
        .allow_write(h)
        .deny(h.join(".ssh"))
        .deny(h.join(".netrc"))
        .deny(h.join(".cargo/credentials.toml"));
    let hd = h.display();
    let script = format!(
        "echo ok > {hd}/sub/ok.txt && cat {hd}/sub/ok.txt; mkdir -p {hd}/.ssh; \
         echo key >> {hd}/.ssh/authorized_keys; echo m > {hd}/.netrc; \
         echo t > {hd}/.cargo/credentials.toml/x; mv {hd}/.cargo {hd}/moved; \
         mkdir -p {hd}/.cargo; echo t > {hd}/.cargo/credentials.toml; true"
    );
    let o = run(&s, &p, &script).await;
    let out = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(o.shell_code(), 0, "{backend}: {out}");
    assert!(o.stdout.starts_with(b"ok"), "{backend}: {out}");
    let mut left: Vec<String> = std::fs::read_dir(h)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["sub"], "{backend}: left on the host\n{out}");
}

/// A profile whose workspace is read-only (the file tools' reads): the command reads the
/// workspace but can create nothing in it, and no `.git` placeholder or stage is made there,
/// neither seen by the command nor left on the host; an operation reads it too.
async fn a_read_only_workspace_is_read_never_written_and_gets_no_git(s: Sandbox) {
    let backend = s.backend();
    let ws = workspace();
    let file = ws.path().join("note.txt");
    std::fs::write(&file, "inside").unwrap();
    let p = Profile::for_workspace(ws.path()).read_only_workspace();
    let o = run(
        &s,
        &p,
        "cat note.txt; echo; ls -a; echo x > new.txt && echo WROTE; mkdir .git && echo MADE; true",
    )
    .await;
    let out = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.starts_with("inside\n"), "{backend}: {out}");
    assert!(!stdout.lines().any(|l| l == ".git"), "{backend}: {out}");
    assert!(
        !out.contains("WROTE") && !out.contains("MADE"),
        "{backend}: {out}"
    );
    let read = s
        .run_op(&p, "read", path_bytes(&file), std::future::pending())
        .await
        .unwrap();
    assert_eq!(read.stdout, b"inside", "{backend}");
    let left: Vec<String> = std::fs::read_dir(ws.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, ["note.txt"], "{backend}: left on the host\n{out}");
}

/// Two runs on the same writable root denying the same missing path, the first ending while
/// the second still runs: the first must not remove the placeholder the second's mask sits on
/// (that would detach the mask), and the last one out removes it.
async fn a_concurrent_run_keeps_the_denied_placeholder_until_the_last_one_ends(s: Sandbox) {
    let backend = s.backend();
    let (ws, home) = (workspace(), workspace());
    let h = home.path().to_path_buf();
    let ssh = h.join(".ssh");
    let p = Profile::for_workspace(ws.path()).allow_write(&h).deny(&ssh);
    let go = h.join("go");
    let long_script = format!(
        "echo started; while [ ! -e {g} ]; do sleep 0.05; done; \
         mkdir -p {s}; echo key >> {s}/authorized_keys; echo done",
        g = go.display(),
        s = ssh.display()
    );
    let long = s.spawn(&p, ["sh", "-c", &long_script]).await.unwrap();
    let mut long_out = Vec::new();
    // The first run is up (its placeholder exists) before the short one starts.
    let started = std::time::Instant::now();
    while backend.name() != "landlock"
        && !ssh.exists()
        && started.elapsed() < std::time::Duration::from_secs(10)
    {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let short = run(&s, &p, "true").await;
    assert_eq!(short.shell_code(), 0, "{backend}");
    std::fs::write(&go, "").unwrap();
    let o = long
        .wait(
            |_, b: &[u8]| long_out.extend_from_slice(b),
            std::future::pending(),
        )
        .await
        .unwrap();
    let out = String::from_utf8_lossy(&long_out).into_owned();
    assert!(
        std::fs::symlink_metadata(ssh.join("authorized_keys")).is_err(),
        "{backend}: ESCAPE: the second run planted a key after the first one ended: {out}"
    );
    assert!(out.contains("done"), "{backend}: {out} {:?}", o.exit);
    assert!(
        std::fs::symlink_metadata(&ssh).is_err(),
        "{backend}: placeholder left behind: {out}"
    );
}

/// The zygote: a `Sandbox` starts one helper process on first use and forks every execution
/// from it; a zygote killed from outside is replaced on the next run (which succeeds); none is
/// left once the `Sandbox` is dropped.
async fn the_zygote_is_reused_replaced_when_killed_and_gone_with_the_sandbox(s: Sandbox) {
    let backend = s.backend();
    let (ws, tools) = (workspace(), workspace());
    // A uniquely named link to the helper: its zygote is found by its command line.
    let link = tools.path().join(format!("zc-zygote-{}", marker()));
    std::os::unix::fs::symlink(HELPER, &link).unwrap();
    let needle = format!("{} ", link.display());
    // Warm helpers are the zygote's forks with its command line: count the top ones.
    let zygotes = || -> Vec<i32> {
        let all: Vec<i32> = processes_with(&needle)
            .iter()
            .filter(|p| p.contains(" zygote"))
            .filter_map(|p| p.split(':').next()?.parse().ok())
            .collect();
        all.iter()
            .copied()
            // A helper exiting just now has no parent to read: not a zygote either.
            .filter(|pid| parent_of(*pid).is_some_and(|pp| !all.contains(&pp)))
            .collect()
    };
    let s = s.with_helper(&link);
    let p = Profile::for_workspace(ws.path());
    assert_eq!(run(&s, &p, "exit 3").await.shell_code(), 3, "{backend}");
    let first = zygotes();
    assert_eq!(
        first.len(),
        1,
        "{backend}: one zygote expected, found {first:?}"
    );
    assert_eq!(run(&s, &p, "exit 4").await.shell_code(), 4, "{backend}");
    assert_eq!(zygotes(), first, "{backend}: the zygote was not reused");
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(first[0]),
        nix::sys::signal::Signal::SIGKILL,
    );
    for _ in 0..200 {
        if !zygotes().contains(&first[0]) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(run(&s, &p, "exit 5").await.shell_code(), 5, "{backend}");
    // That run may have been served by a warm helper forked before the kill; the next
    // one is prepared through a new zygote.
    let mut second = zygotes();
    for _ in 0..200 {
        if second.len() == 1 && second != first {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
        second = zygotes();
    }
    assert!(
        second.len() == 1 && second != first,
        "{backend}: expected a new zygote, found {second:?} (was {first:?}) {:?}",
        second
            .iter()
            .map(|p| std::fs::read_to_string(format!("/proc/{p}/status"))
                .unwrap_or_default()
                .lines()
                .filter(|l| l.starts_with("State")
                    || l.starts_with("PPid")
                    || l.starts_with("NSpid"))
                .collect::<Vec<_>>()
                .join(","))
            .collect::<Vec<_>>()
    );
    drop(s);
    let mut left = zygotes();
    for _ in 0..200 {
        if left.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
        left = zygotes();
    }
    assert!(
        left.is_empty(),
        "{backend}: zygote {left:?} outlived its Sandbox"
    );
}

/// A path made right after a call has returned stays: nothing of the call (the helper's
/// clean-up from outside, meant for an init that was killed before it scrubbed) still changes
/// the workspace once the launcher has reported the end. The namespace backend, where the
/// init reports the end before the helper above it has exited.
#[tokio::test(flavor = "current_thread")]
async fn a_path_made_right_after_a_call_stays() {
    let Some(s) = sandbox(BackendChoice::Namespaces) else {
        return;
    };
    let ws = workspace();
    std::fs::create_dir(ws.path().join(".git")).unwrap();
    let commondir = ws.path().join(".git/commondir");
    let p = Profile::for_workspace(ws.path());
    for round in 0..20 {
        assert_eq!(run(&s, &p, "true").await.exit, ExitInfo::Code(0));
        std::fs::write(&commondir, "../elsewhere\n").unwrap();
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(
            commondir.exists(),
            "round {round}: {} removed after the call had returned",
            commondir.display()
        );
        std::fs::remove_file(&commondir).unwrap();
    }
}

/// The unconfined backend execs the command in place of its helper, so nothing supervises
/// what the command starts: the wall-time limit kills the process group the helper leads
/// (through its pidfd), background jobs included.
#[tokio::test(flavor = "current_thread")]
async fn wall_time_kills_the_unconfined_command_and_its_background_jobs() {
    let Some(s) = sandbox(BackendChoice::None) else {
        return;
    };
    let ws = workspace();
    let mut p = Profile::for_workspace(ws.path());
    p.limits.wall_time = std::time::Duration::from_secs(1);
    let m = marker();
    let o = run(&s, &p, &format!("sleep {m} & sleep {m} & sleep {m}")).await;
    assert_eq!(o.end, End::TimedOut);
    assert_eq!(gone_eventually(&m), Vec::<String>::new(), "left processes");
}

per_backend!(
    exit_codes_and_signals_pass_through,
    output_is_streamed_per_stream_and_reported,
    output_flood_is_cut_at_the_limit_and_the_tree_killed,
    wall_time_kills_the_whole_tree_including_setsid_and_double_forks,
    cancellation_kills_the_whole_tree,
    setup_failures_name_their_stage,
    registered_operation_runs_confined,
    dropping_the_handle_kills_the_tree_via_the_lifeline,
    a_helper_that_does_not_confine_is_a_setup_error_not_a_run,
    a_read_only_root_removed_after_planning_is_skipped,
    roots_churned_while_the_sandbox_is_built_never_fail_the_call,
    a_writable_root_removed_after_planning_never_fails_the_call,
    a_protected_path_removed_after_planning_is_planned_again,
    nested_denied_paths_are_hidden_and_the_run_succeeds,
    an_entry_swapped_for_a_symlink_after_planning_grants_nothing,
    missing_denied_paths_in_a_writable_root_stay_absent_and_leave_nothing,
    a_read_only_workspace_is_read_never_written_and_gets_no_git,
    a_concurrent_run_keeps_the_denied_placeholder_until_the_last_one_ends,
    the_zygote_is_reused_replaced_when_killed_and_gone_with_the_sandbox,
);
