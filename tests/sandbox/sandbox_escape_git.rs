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
pub(super) fn canary_script(w: &World) -> (PathBuf, PathBuf) {
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

/// A repository made on the host before the run (`EXISTING_SETUP`, unconfined), then attacked
/// confined (`plant`, which must succeed in the child: the stage makes `.git` writable), then
/// used by the host's git (`host`, from each of `dirs`).
struct Existing {
    plant: String,
    dirs: &'static [&'static str],
    host: &'static str,
}

/// A repository with a commit, a subdirectory, a submodule, and `extensions.worktreeConfig`
/// (as `git sparse-checkout` leaves it: `config.worktree` is read from then on).
const EXISTING_SETUP: &str = "set -e; src=$(mktemp -d); git -C $src init -q; \
    git -C $src -c user.name=h -c user.email=h@example.invalid commit -q --allow-empty -m s; \
    git init -q; git -c protocol.file.allow=always submodule -q add $src sub; rm -rf $src; \
    mkdir a; echo a > a/f; git config extensions.worktreeConfig true; \
    git config --worktree user.name h";

/// The files the host's git reads as configuration, and where it reads each from.
const CONFIGS: &[(&str, &[&str])] = &[
    (".git/config", &[".", "a"]),
    (".git/config.worktree", &[".", "a"]),
    (".git/modules/sub/config", &["sub"]),
];

/// `core.fsmonitor = $EVIL` appended to `{f}` by `git config`, `sed -i`, a symlink in its
/// place, and `mv` of a prepared file.
const METHODS: &[&str] = &[
    "git config -f {f} core.fsmonitor \"$EVIL\"",
    "sed -i \"1s|^|[core]\\n\\tfsmonitor = $EVIL\\n|\" {f}",
    "{ cat {f}; printf '[core]\\n\\tfsmonitor = %s\\n' \"$EVIL\"; } > evil.cfg && rm {f} && ln -s \"$PWD/evil.cfg\" {f}",
    "{ cat {f}; printf '[core]\\n\\tfsmonitor = %s\\n' \"$EVIL\"; } > prepared && mv prepared {f}",
];

const HOOK: &str = "printf '#!/bin/sh\\nexec %s\\n' \"$EVIL\"";

fn existing_attacks() -> Vec<Existing> {
    let mut out = Vec::new();
    for (file, dirs) in CONFIGS {
        for method in METHODS {
            out.push(Existing {
                plant: method.replace("{f}", file),
                dirs,
                host: "git status --short",
            });
        }
    }
    out.extend([
        Existing {
            plant: format!(
                "mkdir myhooks && {HOOK} > myhooks/pre-commit && chmod +x myhooks/pre-commit && \
                 git config core.hooksPath \"$PWD/myhooks\""
            ),
            dirs: &[".", "a"],
            host: HOST_COMMIT,
        },
        Existing {
            plant: "git config alias.x \"!$EVIL\"".into(),
            dirs: &[".", "a"],
            host: "git x",
        },
        Existing {
            plant: "printf '[core]\\n\\tfsmonitor = %s\\n' \"$EVIL\" > inc && \
                    git config include.path \"$PWD/inc\""
                .into(),
            dirs: &[".", "a"],
            host: "git status --short",
        },
        Existing {
            plant: format!("{HOOK} > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit"),
            dirs: &[".", "a"],
            host: HOST_COMMIT,
        },
        Existing {
            plant: format!(
                "{HOOK} > .git/modules/sub/hooks/pre-commit && \
                 chmod +x .git/modules/sub/hooks/pre-commit"
            ),
            dirs: &["sub"],
            host: HOST_COMMIT,
        },
    ]);
    out
}

fn run_existing(w: &World, b: Backend, attack: &Existing) {
    let attempt = |w: &World, confine: bool| {
        let (canary, evil) = canary_script(w);
        let setup = w.plain().sh(EXISTING_SETUP);
        assert_eq!(setup.status_code(), Some(0), "setup failed\n{setup}");
        let script = format!(
            "export EVIL={}; {} && echo PLANTED",
            evil.display(),
            attack.plant
        );
        let run = if confine {
            confined(w, b, defaults, &script)
        } else {
            control(w, &script)
        };
        let mut shown = format!("{run}");
        let mut fired = Vec::new();
        for dir in attack.dirs {
            let host = w.plain().sh(&format!("cd {dir} && {}; true", attack.host));
            shown.push_str(&format!("\n{host}"));
            if canary.exists() {
                fired.push(*dir);
                let _ = fs::remove_file(&canary);
            }
        }
        (run, fired, shown)
    };
    let (run, fired, shown) = attempt(w, true);
    assert!(
        fired.is_empty(),
        "ESCAPE: the host's `{}` in {fired:?} ran a program the confined run planted ({})\n{shown}",
        attack.host,
        attack.plant
    );
    assert!(
        run.stdout.contains("PLANTED") && run.stderr.contains("git: refused"),
        "the write did not succeed in the child, or its refusal was not reported\n{shown}"
    );
    let (_, fired, shown) = attempt(&World::new(), false);
    assert_eq!(
        fired, attack.dirs,
        "positive control failed ({})\n{shown}",
        attack.plant
    );
}

/// Every row of [`existing_attacks`]: the control files of an existing repository the host's
/// git reads — its config, `config.worktree`, a submodule's config, their hooks — written by
/// every means a child has; the write succeeds in the child (its private stage), never on the
/// host.
fn existing_repository_control_files(w: &World, b: Backend) {
    let attacks = existing_attacks();
    run_existing(w, b, &attacks[0]);
    for attack in &attacks[1..] {
        run_existing(&World::new(), b, attack);
    }
}
per_backend!(
    existing_repository_control_files,
    landlock: "reduced rung (chosen only by name): protected paths are not enforced without a mount namespace (see doctor)"
);

/// No window in an existing repository: the host's `git status` runs in a loop (from the root
/// and a subdirectory) while the confined run writes `core.fsmonitor` into `.git/config` and
/// waits; it never fires, and once the run ended the run's other change is there.
fn no_window_in_an_existing_repository(w: &World, b: Backend) {
    let (canary, evil) = canary_script(w);
    let setup = w.plain().sh(EXISTING_SETUP);
    assert_eq!(setup.status_code(), Some(0), "setup failed\n{setup}");
    let script = format!(
        "git config user.email zc@example.invalid && git config core.fsmonitor {} && \
         echo planted && sleep 2 && echo done",
        evil.display()
    );
    let host = host_git_while_it_runs(
        w,
        w.confined(b).spawn_sh(&script),
        "git status --short >/dev/null 2>&1; cd a && git status >/dev/null 2>&1; true",
        &canary,
        "git status --short; git config user.email",
    );
    assert!(
        host.stdout.contains("zc@example.invalid"),
        "the run's accepted change did not land\n{host}"
    );
}
per_backend!(
    no_window_in_an_existing_repository,
    landlock: "reduced rung (chosen only by name): protected paths are not enforced without a mount namespace (see doctor)"
);

/// Makes the workspace a linked worktree of a repository outside it; returns that repository.
fn linked_worktree(w: &World) -> PathBuf {
    let main = w.outside.join("main");
    let setup = w.plain().sh(&format!(
        "set -e; git init -q {m}; \
         git -C {m} -c user.name=h -c user.email=h@example.invalid commit -q --allow-empty -m main; \
         git -C {m} worktree add -q {ws} -b wt",
        m = main.display(),
        ws = w.ws.display()
    ));
    assert_eq!(setup.status_code(), Some(0), "setup failed\n{setup}");
    main
}

/// In a linked worktree: the main repository's config and hooks (staged: the write succeeds
/// in the child, never reaches the host), and the worktree's `.git` file rewritten to name a
/// repository the child made (refused: it is read-only) — the host's git, in the worktree and
/// in the main repository, never runs the canary; each with its unconfined control.
fn linked_worktree_control_files(w: &World, b: Backend) {
    let attacks: [(&str, bool, &str); 3] = [
        (
            "git config core.fsmonitor \"$EVIL\"",
            true,
            "git status --short",
        ),
        (
            "printf '#!/bin/sh\\nexec %s\\n' \"$EVIL\" > \"$(git rev-parse --git-common-dir)/hooks/pre-commit\" && \
             chmod +x \"$(git rev-parse --git-common-dir)/hooks/pre-commit\"",
            true,
            HOST_COMMIT,
        ),
        (
            "git init -q --bare fake.git && git -C fake.git config core.bare false && \
             git -C fake.git config core.fsmonitor \"$EVIL\" && echo \"gitdir: $PWD/fake.git\" > .git",
            false,
            "git status --short",
        ),
    ];
    for (i, (plant, staged, host)) in attacks.into_iter().enumerate() {
        let fresh;
        let w = if i == 0 {
            w
        } else {
            fresh = World::new();
            &fresh
        };
        let attempt = |w: &World, confine: bool| {
            let (canary, evil) = canary_script(w);
            let main = linked_worktree(w);
            let script = format!("export EVIL={}; {plant} && echo PLANTED", evil.display());
            let run = if confine {
                confined(w, b, defaults, &script)
            } else {
                control(w, &script)
            };
            let mut shown = format!("{run}");
            for dir in [w.ws.clone(), main] {
                let out = w
                    .plain()
                    .sh(&format!("cd {} && {host}; true", dir.display()));
                shown.push_str(&format!("\n{out}"));
            }
            (run, canary.exists(), shown)
        };
        let (run, fired, shown) = attempt(w, true);
        assert!(
            !fired,
            "ESCAPE: the host's `{host}` ran what `{plant}` planted\n{shown}"
        );
        if staged {
            assert!(
                run.stdout.contains("PLANTED") && run.stderr.contains("git: refused"),
                "the write did not succeed in the child, or its refusal was not reported\n{shown}"
            );
        }
        let (_, fired, shown) = attempt(&World::new(), false);
        assert!(fired, "positive control failed ({plant})\n{shown}");
    }
}
per_backend!(
    linked_worktree_control_files,
    landlock: "reduced rung (chosen only by name): protected paths are not enforced without a mount namespace (see doctor)"
);

/// Runs the host's git (`during`) in a loop while the confined run `bg` (whose first line is
/// `planted`) lasts, then `after`: the canary never fires, and the loop ran. `after`'s run.
pub(super) fn host_git_while_it_runs(
    w: &World,
    mut bg: sandbox_support::procs::Bg,
    during: &str,
    canary: &Path,
    after: &str,
) -> sandbox_support::run::Run {
    assert_eq!(bg.read_line(), "planted\n");
    let mut rounds = 0;
    while bg.alive() {
        let _ = w.plain().sh(during);
        rounds += 1;
        assert!(
            !canary.exists(),
            "ESCAPE: the host's git fired during the run"
        );
    }
    let _ = bg.wait_for_exit(Duration::from_secs(30));
    let host = w.plain().sh(after);
    assert!(
        !canary.exists(),
        "ESCAPE: the host's git fired after the run\n{host}"
    );
    assert!(rounds > 0, "the host loop never ran");
    host
}
