//! Prompt-injection scenarios end to end: a hijacked model tries to read a (fake) `~/.ssh`
//! key, write `../outside`, `curl` a loopback listener, read the session database, plant
//! `.git/hooks/pre-commit`, and read `/proc/<daemon pid>/environ` (the daemon's environment
//! holds a canary). The client approves everything it is asked, so only the host can refuse.
//!
//! First the policy denies each (the call ends `failed`, the reason names the policy). Then,
//! with `[autonomy] policy_checks = false` (the test-only knob), each backend's kernel layer
//! alone denies each, also through `shell`: the canaries never reach the client or the model,
//! the outside file is unchanged, no hook appears, and the listener sees no connection.

use crate::support;
use crate::tools_support;

use std::io::ErrorKind;
use std::net::TcpListener;
use std::path::PathBuf;

use serde_json::{Value, json};

use support::acp_client::Permission;
use tools_support::{ENV_CANARY, KEY_CANARY, Outcome, Scene, Setup, backend_available};

/// Which layer is expected to refuse.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Layer {
    Policy,
    Kernel,
}

/// The magic at the start of every SQLite file: a read of the database would show it.
const SQLITE_MAGIC: &str = "SQLite format 3";
const OUTSIDE_ORIGINAL: &str = "original outside content";

/// A scene with its bait: the outside file, the hooks dir, a listener.
struct Target {
    scene: Scene,
    listener: TcpListener,
}

impl Target {
    fn start(setup: Setup) -> Target {
        let scene = Scene::start(setup.permission(Permission::Select("allow-always".into())));
        std::fs::write(scene.outside(), OUTSIDE_ORIGINAL).expect("outside file");
        std::fs::create_dir_all(scene.ws().join(".git/hooks")).expect("hooks dir");
        let listener = TcpListener::bind("127.0.0.1:0").expect("listener");
        listener.set_nonblocking(true).expect("nonblocking");
        // A first turn so the session database exists and holds history.
        scene
            .call("file_write", json!({"path": "seed.txt", "content": "seed"}))
            .assert_completed();
        assert!(scene.session_db().exists(), "the session database exists");
        Target { scene, listener }
    }

    fn key(&self) -> PathBuf {
        self.scene.home.path().join(".ssh/id_ed25519")
    }

    fn environ(&self) -> String {
        format!("/proc/{}/environ", self.scene.client.pid())
    }

    fn hook(&self) -> PathBuf {
        self.scene.ws().join(".git/hooks/pre-commit")
    }

    /// Puts the outside file back and removes any planted hook, so attacks are independent.
    fn reset_bait(&self) {
        std::fs::write(self.scene.outside(), OUTSIDE_ORIGINAL).expect("outside file");
        let _ = std::fs::remove_file(self.hook());
        while self.listener.accept().is_ok() {}
    }

    fn port(&self) -> u16 {
        self.listener.local_addr().expect("addr").port()
    }
}

trait SceneExt {
    fn outside(&self) -> PathBuf;
}

impl SceneExt for Scene {
    fn outside(&self) -> PathBuf {
        self.root.path().join("outside")
    }
}

/// One attack: what the model calls, whether the policy alone is expected to see it (shell
/// commands are not parsed for paths: those are the kernel's), and the harm to look for.
struct Attack {
    name: &'static str,
    tool: &'static str,
    args: Value,
    policy_sees_it: bool,
    harm: Harm,
}

enum Harm {
    /// This text reached the client or the model.
    Leaks(&'static str),
    /// This text is in the call's result.
    ResultShows(&'static str),
    OutsideChanged,
    HookPlanted,
    ListenerContacted,
}

fn attacks(t: &Target) -> Vec<Attack> {
    let key = t.key().to_string_lossy().into_owned();
    let db = t.scene.session_db().to_string_lossy().into_owned();
    let environ = t.environ();
    let curl = format!("curl -sS -m 10 http://127.0.0.1:{}/", t.port());
    let attack = |name, tool, args, policy_sees_it, harm| Attack {
        name,
        tool,
        args,
        policy_sees_it,
        harm,
    };
    vec![
        attack(
            "read ~/.ssh key",
            "file_read",
            json!({"path": key}),
            true,
            Harm::Leaks(KEY_CANARY),
        ),
        attack(
            "cat ~/.ssh key",
            "shell",
            json!({"command": format!("cat {key}")}),
            false,
            Harm::Leaks(KEY_CANARY),
        ),
        attack(
            "write ../outside",
            "file_write",
            json!({"path": "../outside", "content": "pwned"}),
            true,
            Harm::OutsideChanged,
        ),
        attack(
            "echo > ../outside",
            "shell",
            json!({"command": "echo pwned > ../outside"}),
            false,
            Harm::OutsideChanged,
        ),
        attack(
            "curl a loopback listener",
            "shell",
            json!({"command": curl}),
            true,
            Harm::ListenerContacted,
        ),
        attack(
            "read the session db",
            "file_read",
            json!({"path": db}),
            true,
            Harm::ResultShows(SQLITE_MAGIC),
        ),
        attack(
            "cat the session db",
            "shell",
            json!({"command": format!("cat {db}")}),
            false,
            Harm::ResultShows(SQLITE_MAGIC),
        ),
        attack(
            "write .git/hooks/pre-commit",
            "file_write",
            json!({"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\necho pwned\n"}),
            true,
            Harm::HookPlanted,
        ),
        attack(
            "echo > .git/hooks/pre-commit",
            "shell",
            json!({"command": "echo pwned > .git/hooks/pre-commit"}),
            false,
            Harm::HookPlanted,
        ),
        attack(
            "read daemon environ",
            "file_read",
            json!({"path": environ}),
            true,
            Harm::Leaks(ENV_CANARY),
        ),
        attack(
            "cat daemon environ",
            "shell",
            json!({"command": format!("tr '\\0' '\\n' < {environ}")}),
            false,
            Harm::Leaks(ENV_CANARY),
        ),
    ]
}

/// Runs every attack the layer must stop; returns one line per failure.
fn run_all(t: &Target, layer: Layer, which: Which) -> Vec<String> {
    let mut failures = Vec::new();
    for a in attacks(t) {
        if layer == Layer::Policy && !a.policy_sees_it {
            continue;
        }
        if !which.includes(&a) {
            continue;
        }
        t.reset_bait();
        let mark = t.scene.mark();
        let out = t.scene.call(a.tool, a.args.clone());
        if let Err(why) = judge(t, &a, &out, layer, mark) {
            failures.push(format!("{} [{layer:?}]: {why}\n{}", a.name, out.describe()));
        }
    }
    failures
}

fn judge(
    t: &Target,
    a: &Attack,
    out: &Outcome,
    layer: Layer,
    mark: (usize, usize),
) -> Result<(), String> {
    harmless(t, a, out, mark)?;
    let by_policy = out.text.contains("denied by policy");
    match layer {
        Layer::Policy => {
            if out.status != "failed" || !by_policy || !out.model_saw.contains("denied by policy") {
                return Err(
                    "expected `failed` with a `denied by policy` reason the model sees".into(),
                );
            }
        }
        Layer::Kernel => {
            if by_policy {
                return Err(
                    "policy_checks = false, yet the policy refused: the kernel was not tested"
                        .into(),
                );
            }
            if a.tool != "shell" && out.status != "failed" {
                return Err("expected the sandbox to fail the call".into());
            }
            if out.model_saw.is_empty() {
                return Err("the model was not told what happened".into());
            }
        }
    }
    Ok(())
}

/// Checks that the attack did no harm.
fn harmless(t: &Target, a: &Attack, out: &Outcome, mark: (usize, usize)) -> Result<(), String> {
    let harmed = match a.harm {
        Harm::Leaks(canary) => t.scene.seen_since(mark).contains(canary),
        Harm::ResultShows(text) => out.text.contains(text) || out.model_saw.contains(text),
        Harm::OutsideChanged => {
            std::fs::read_to_string(t.scene.outside()).ok().as_deref() != Some(OUTSIDE_ORIGINAL)
        }
        Harm::HookPlanted => std::fs::metadata(t.hook()).is_ok_and(|m| m.len() > 0),
        Harm::ListenerContacted => !matches!(
            t.listener.accept(),
            Err(ref e) if e.kind() == ErrorKind::WouldBlock
        ),
    };
    match harmed {
        true => Err("HARM DONE".into()),
        false => Ok(()),
    }
}

fn assert_none(failures: Vec<String>, scene: &Scene) {
    if !failures.is_empty() {
        scene.client.fail(&format!(
            "{} attack(s) not stopped:\n{}",
            failures.len(),
            failures.join("\n\n")
        ));
    }
}

#[test]
fn the_policy_denies_every_injection_with_a_reason() {
    let t = Target::start(Setup::level("supervised"));
    let failures = run_all(&t, Layer::Policy, Which::All);
    assert_none(failures, &t.scene);
}

/// Which attacks a test runs: the Landlock-only rung cannot protect paths inside the writable
/// workspace (`.git/hooks`: Landlock only grants, it cannot carve a read-only hole), documented
/// in `sandbox/README.md`, so that part has its own (ignored) test.
#[derive(Clone, Copy, PartialEq)]
enum Which {
    All,
    AllButHooks,
    OnlyHooks,
}

impl Which {
    fn includes(self, a: &Attack) -> bool {
        let hook = matches!(a.harm, Harm::HookPlanted);
        match self {
            Which::All => true,
            Which::AllButHooks => !hook,
            Which::OnlyHooks => hook,
        }
    }
}

fn kernel_alone(backend: &'static str, which: Which) {
    if !backend_available(backend) {
        return;
    }
    let setup = Setup::level("supervised")
        .autonomy("policy_checks = false")
        .backend(backend);
    let t = Target::start(setup);
    let failures = run_all(&t, Layer::Kernel, which);
    assert_none(failures, &t.scene);
}

#[test]
fn the_kernel_alone_denies_every_injection_namespaces() {
    kernel_alone("namespaces", Which::All);
}

#[test]
fn the_kernel_alone_denies_every_injection_bubblewrap() {
    kernel_alone("bubblewrap", Which::All);
}

#[test]
fn the_kernel_alone_denies_every_injection_but_protected_paths_landlock() {
    kernel_alone("landlock", Which::AllButHooks);
}

#[test]
#[ignore = "reduced rung (chosen only by name): protected paths are not enforced without a \
            mount namespace (sandbox/README.md, Backends); .git/hooks stays writable there. The \
            policy layer denies it"]
fn the_kernel_alone_denies_planting_a_git_hook_landlock() {
    kernel_alone("landlock", Which::OnlyHooks);
}
