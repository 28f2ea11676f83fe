//! Escape suite, git class: a confined run must not get a program run outside the sandbox the
//! next time the host's git runs — through a hook or executable configuration of a
//! repository it creates where the workspace had none — and the host must never see such a
//! file, not even while the run lasts. Each attack is a table row, run on every Linux backend
//! confined (the canary never appears; the refusal is reported on stderr) and unconfined as
//! its positive control (the canary appears).

use crate::sandbox_support;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use sandbox_support::judge::{confined, control, defaults};
use sandbox_support::{Backend, World};

/// The script the planted hook or config runs on the host: it writes the canary.
fn canary_script(w: &World) -> (PathBuf, PathBuf) {
    let canary = w.outside.join("canary");
    let script = w.outside.join("evil.sh");
    w.write(
        &script,
        &format!("#!/bin/sh\ntouch {}\nexit 1\n", canary.display()),
    );
    let mut perms = fs::metadata(&script).expect("evil.sh").permissions();
    use std::os::unix::fs::PermissionsExt;
    perms.set_mode(0o755);
    fs::set_permissions(&script, perms).expect("chmod");
    (canary, script)
}

/// One attack: how the script plants it (after `git init`), the host's git command that would
/// fire it, the refusal the confined run must report.
struct Attack {
    plant: &'static str,
    host: &'static str,
    refusal: &'static str,
}

const HOST_COMMIT: &str =
    "git -c user.name=h -c user.email=h@example.invalid commit -q --allow-empty -m host";

/// `$EVIL` is the canary script's path.
const ATTACKS: &[Attack] = &[
    Attack {
        plant: "git config core.fsmonitor \"$EVIL\"",
        host: "git status --short",
        refusal: "git: refused core.fsmonitor in .git/config (runs a program outside the sandbox)",
    },
    Attack {
        plant: "printf '[core]\\n\\tfsmonitor = %s\\n' \"$EVIL\" >> .git/config",
        host: "git status --short",
        refusal: "git: refused core.fsmonitor in .git/config",
    },
    Attack {
        plant: "sed -i \"s|^\\[core\\]|[core]\\n\\tfsmonitor = $EVIL|\" .git/config",
        host: "git status --short",
        refusal: "git: refused core.fsmonitor in .git/config",
    },
    Attack {
        plant: "cp .git/config c2 && printf '[core]\\n\\tfsmonitor = %s\\n' \"$EVIL\" >> c2 && mv c2 .git/config",
        host: "git status --short",
        refusal: "git: refused core.fsmonitor in .git/config",
    },
    Attack {
        plant: "mkdir -p ../.. 2>/dev/null; cp .git/config ./c3 && printf '[core]\\n\\tfsmonitor = %s\\n' \"$EVIL\" >> c3 && rm .git/config && ln -s \"$PWD/c3\" .git/config",
        host: "git status --short",
        refusal: "git: refused .git/config (not a regular file)",
    },
    Attack {
        plant: "printf '#!/bin/sh\\nexec %s\\n' \"$EVIL\" > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit",
        host: HOST_COMMIT,
        refusal: "git: refused hook pre-commit in .git/hooks (runs a program outside the sandbox)",
    },
    Attack {
        plant: "git config core.hooksPath \"$PWD/myhooks\" && mkdir myhooks && printf '#!/bin/sh\\nexec %s\\n' \"$EVIL\" > myhooks/pre-commit && chmod +x myhooks/pre-commit",
        host: HOST_COMMIT,
        refusal: "git: refused core.hookspath in .git/config",
    },
    Attack {
        plant: "printf '[core]\\n\\tfsmonitor = %s\\n' \"$EVIL\" > inc && git config include.path \"$PWD/inc\"",
        host: "git status --short",
        refusal: "git: refused include.path in .git/config (reads more configuration)",
    },
    Attack {
        plant: "git config extensions.worktreeConfig true && git config --worktree core.fsmonitor \"$EVIL\"",
        host: "git status --short",
        refusal: "git: refused core.fsmonitor in .git/config.worktree",
    },
    Attack {
        plant: "echo x > f.txt && git add f.txt && git config filter.evil.clean \"$EVIL\" && echo '* filter=evil' > .git/info/attributes && echo y > f.txt",
        host: "git add f.txt",
        refusal: "git: refused filter.evil.clean in .git/config",
    },
];

fn run_attack(w: &World, b: Backend, attack: &Attack) {
    let (canary, evil) = canary_script(w);
    let script = format!(
        "export EVIL={}; git init -q && {}",
        evil.display(),
        attack.plant
    );
    let fire = |w: &World| w.plain().sh(&format!("{}; true", attack.host));
    let run = confined(w, b, defaults, &script);
    let host = fire(w);
    assert!(
        !canary.exists(),
        "ESCAPE: the host's `{}` ran a program the confined run planted\n{run}\n{host}",
        attack.host
    );
    assert!(
        run.stderr.contains(attack.refusal),
        "the refusal {:?} was not reported\n{run}",
        attack.refusal
    );
    // Positive control: the same in a fresh workspace, unconfined.
    let fresh = World::new();
    let (canary, evil) = canary_script(&fresh);
    let script = format!(
        "export EVIL={}; git init -q && {}",
        evil.display(),
        attack.plant
    );
    let control = control(&fresh, &script);
    let host = fire(&fresh);
    assert!(
        canary.exists(),
        "positive control failed: the host's `{}` did not fire\n{control}\n{host}",
        attack.host
    );
}

/// Every row of [`ATTACKS`] against a repository the run creates at the workspace root.
fn new_repository_at_the_root(w: &World, b: Backend) {
    run_attack(w, b, &ATTACKS[0]);
    for attack in &ATTACKS[1..] {
        run_attack(&World::new(), b, attack);
    }
}
per_backend!(
    new_repository_at_the_root,
    landlock: "reduced rung (chosen only by name): protected paths are not enforced without a mount namespace (see doctor)"
);

/// No window: the host's `git status` runs in a loop while the confined run initialises a
/// repository with `core.fsmonitor` and waits; it never fires, and once the run ended the
/// repository is there without it.
fn no_window_for_a_concurrent_host_git(w: &World, b: Backend) {
    let (canary, evil) = canary_script(w);
    let script = format!(
        "git init -q && git config core.fsmonitor {} && echo planted && sleep 2 && echo done",
        evil.display()
    );
    let mut bg = w.confined(b).spawn_sh(&script);
    assert_eq!(bg.read_line(), "planted\n");
    let mut rounds = 0;
    while bg.alive() {
        let _ = w.plain().sh("git status --short >/dev/null 2>&1; true");
        rounds += 1;
        assert!(
            !canary.exists(),
            "ESCAPE: the host's git status fired during the run"
        );
    }
    let _ = bg.wait_for_exit(Duration::from_secs(30));
    let _ = w.plain().sh("git status --short; true");
    assert!(
        !canary.exists(),
        "ESCAPE: the host's git status fired after the run"
    );
    assert!(rounds > 0, "the host loop never ran");
    assert!(ws_is_repo(&w.ws), "the repository did not land");
}
per_backend!(
    no_window_for_a_concurrent_host_git,
    landlock: "reduced rung (chosen only by name): protected paths are not enforced without a mount namespace (see doctor)"
);

fn ws_is_repo(ws: &Path) -> bool {
    ws.join(".git/HEAD").is_file()
}

/// A repository made on the host before the run (`setup`, unconfined), then attacked
/// confined (`plant`), then used by the host's git (`host`, from `dir`).
struct Existing {
    setup: &'static str,
    plant: &'static str,
    dir: &'static str,
    host: &'static str,
}

const SUBMODULE_SETUP: &str = "set -e; src=$(mktemp -d); git -C $src init -q; \
    git -C $src -c user.name=h -c user.email=h@example.invalid commit -q --allow-empty -m s; \
    git init -q; git -c protocol.file.allow=always submodule -q add $src sub; rm -rf $src";

const EXISTING: &[Existing] = &[
    // `git sparse-checkout` sets extensions.worktreeConfig: config.worktree is read from then on.
    Existing {
        setup: "git init -q && git config extensions.worktreeConfig true",
        plant: "printf '[core]\\n\\tfsmonitor = %s\\n' \"$EVIL\" > .git/config.worktree",
        dir: ".",
        host: "git status --short",
    },
    Existing {
        setup: SUBMODULE_SETUP,
        plant: "printf '[core]\\n\\tfsmonitor = %s\\n' \"$EVIL\" >> .git/modules/sub/config",
        dir: "sub",
        host: "git status --short",
    },
    Existing {
        setup: SUBMODULE_SETUP,
        plant: "printf '#!/bin/sh\\nexec %s\\n' \"$EVIL\" > .git/modules/sub/hooks/pre-commit && chmod +x .git/modules/sub/hooks/pre-commit",
        dir: "sub",
        host: HOST_COMMIT,
    },
];

fn run_existing(w: &World, b: Backend, attack: &Existing) {
    let attempt = |w: &World, confine: bool| {
        let (canary, evil) = canary_script(w);
        let setup = w.plain().sh(attack.setup);
        assert_eq!(setup.status_code(), Some(0), "setup failed\n{setup}");
        let script = format!("export EVIL={}; {}", evil.display(), attack.plant);
        let run = if confine {
            confined(w, b, defaults, &script)
        } else {
            control(w, &script)
        };
        let host = w
            .plain()
            .sh(&format!("cd {} && {}; true", attack.dir, attack.host));
        (canary.exists(), format!("{run}\n{host}"))
    };
    let (fired, shown) = attempt(w, true);
    assert!(
        !fired,
        "ESCAPE: the host's `{}` in {} ran a program the confined run planted\n{shown}",
        attack.host, attack.dir
    );
    let (fired, shown) = attempt(&World::new(), false);
    assert!(fired, "positive control failed\n{shown}");
}

/// Every row of [`EXISTING`]: control files of an existing repository beyond `.git/hooks` and
/// `.git/config` that the host's git reads.
fn existing_repository_control_files(w: &World, b: Backend) {
    run_existing(w, b, &EXISTING[0]);
    for attack in &EXISTING[1..] {
        run_existing(&World::new(), b, attack);
    }
}
per_backend!(
    existing_repository_control_files,
    landlock: "reduced rung (chosen only by name): protected paths are not enforced without a mount namespace (see doctor)"
);
