//! Escape suite, git class, repositories a command creates or plants *below* the workspace
//! root (issue 33): `git init sub`, `git clone … vendor/dep`, a `gitdir:` file, a bare
//! repository in a source directory, hooks written into a nested repository the host made.
//! The confined run's writes reach the host only through its layer's landing, which
//! validates every repository's control state, so the host's git in that directory never
//! runs what the command planted — not after the run, and not while it runs (the repository
//! is not on the host until it landed). Each row has its unconfined positive control.
//!
//! The namespace rung (fresh and warm helpers) and bubblewrap launched by root (these tests
//! run as root on CI; bubblewrap launched by another user has no layer, which `doctor`
//! lists); the Landlock-only rung has no mount namespace (`sandbox/README.md`,
//! "Transactional workspace").

use crate::sandbox_support;

use super::sandbox_escape_git::{canary_script, host_git_while_it_runs};
use sandbox_support::judge::{confined, control, defaults};
use sandbox_support::{Backend, World};

const HOST_COMMIT: &str =
    "git -c user.name=h -c user.email=h@example.invalid commit -q --allow-empty -m host";

const HOOK: &str = "printf '#!/bin/sh\\nexec %s\\n' \"$EVIL\"";

/// One attack: what the host made first (unconfined; may be empty), what the command plants
/// (`$EVIL` is the canary script), where the host's git then runs, and what it runs there.
struct Nested {
    setup: &'static str,
    plant: String,
    dir: &'static str,
    host: &'static str,
}

fn attacks() -> Vec<Nested> {
    let status = "git status --short";
    vec![
        Nested {
            setup: "",
            plant: "git init -q sub && git -C sub config core.fsmonitor \"$EVIL\"".into(),
            dir: "sub",
            host: status,
        },
        Nested {
            setup: "",
            plant: format!(
                "git init -q a/b/sub && {HOOK} > a/b/sub/.git/hooks/pre-commit && \
                 chmod +x a/b/sub/.git/hooks/pre-commit"
            ),
            dir: "a/b/sub",
            host: HOST_COMMIT,
        },
        Nested {
            setup: "",
            plant: format!(
                "git init -q sub && mkdir h && {HOOK} > h/pre-commit && chmod +x h/pre-commit && \
                 git -C sub config core.hooksPath \"$PWD/h\""
            ),
            dir: "sub",
            host: HOST_COMMIT,
        },
        Nested {
            setup: "",
            plant: "git init -q src && git -C src -c user.name=a -c user.email=a@example.invalid \
                    commit -q --allow-empty -m s && git clone -q src vendor/dep && \
                    git -C vendor/dep config core.fsmonitor \"$EVIL\""
                .into(),
            dir: "vendor/dep",
            host: status,
        },
        Nested {
            setup: "",
            plant: "git init -q --bare store.git && git -C store.git config core.bare false && \
                    git -C store.git config core.fsmonitor \"$EVIL\" && mkdir sub && \
                    echo \"gitdir: $PWD/store.git\" > sub/.git"
                .into(),
            dir: "sub",
            host: status,
        },
        Nested {
            setup: "",
            plant: "mkdir -p src/lib && git init -q --bare src/lib && \
                    git -C src/lib config core.bare false && \
                    git -C src/lib config core.worktree \"$PWD/src/lib\" && \
                    git -C src/lib config core.fsmonitor \"$EVIL\""
                .into(),
            dir: "src/lib",
            host: "git --git-dir=. status --short",
        },
        Nested {
            setup: "git init -q sub",
            plant: format!(
                "{HOOK} > sub/.git/hooks/pre-commit && chmod +x sub/.git/hooks/pre-commit"
            ),
            dir: "sub",
            host: HOST_COMMIT,
        },
        Nested {
            setup: "git init -q sub",
            plant: "git -C sub config core.fsmonitor \"$EVIL\"".into(),
            dir: "sub",
            host: status,
        },
    ]
}

fn run_nested(w: &World, b: Backend, attack: &Nested) {
    let attempt = |w: &World, confine: bool| {
        let (canary, evil) = canary_script(w);
        if !attack.setup.is_empty() {
            let setup = w.plain().sh(attack.setup);
            assert_eq!(setup.status_code(), Some(0), "setup failed\n{setup}");
        }
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
        let host = w
            .plain()
            .sh(&format!("cd {} && {}; true", attack.dir, attack.host));
        (run, host, canary.exists())
    };
    let (run, host, fired) = attempt(w, true);
    assert!(
        !fired,
        "ESCAPE: the host's `{}` in {} ran what the confined run planted ({})\n{run}\n{host}",
        attack.host, attack.dir, attack.plant
    );
    assert!(
        run.stdout.contains("PLANTED") && run.stderr.contains("git: refused"),
        "the plant did not succeed in the child, or its refusal was not reported\n{run}"
    );
    let (control, host, fired) = attempt(&World::new(), false);
    assert!(
        fired,
        "positive control failed: the host's `{}` in {} did not fire ({})\n{control}\n{host}",
        attack.host, attack.dir, attack.plant
    );
}

/// Every row of [`attacks`], each in a fresh world.
fn nested_repositories(w: &World, b: Backend) {
    if !sandbox_support::has_layer(b) {
        return;
    }
    let attacks = attacks();
    run_nested(w, b, &attacks[0]);
    for attack in &attacks[1..] {
        run_nested(&World::new(), b, attack);
    }
}
per_backend!(
    nested_repositories,
    landlock: "reduced rung (chosen only by name): no mount namespace, no layer (see doctor)"
);

/// No window: the host's `git status` runs in a loop in the nested repository's directory
/// while the confined run makes it with `core.fsmonitor` and waits; it never fires (the
/// repository is not on the host while the run lasts), and once the run ended the
/// repository is there without it.
fn no_window_in_a_nested_repository(w: &World, b: Backend) {
    if !sandbox_support::has_layer(b) {
        return;
    }
    let (canary, evil) = canary_script(w);
    let script = format!(
        "git init -q sub && git -C sub config core.fsmonitor {} && echo planted && sleep 2 && \
         echo done",
        evil.display()
    );
    host_git_while_it_runs(
        w,
        w.confined(b).spawn_sh(&script),
        "cd sub 2>/dev/null && git status --short >/dev/null 2>&1; true",
        &canary,
        "cd sub && git status --short; true",
    );
    assert!(
        w.ws.join("sub/.git/HEAD").is_file(),
        "the nested repository did not land"
    );
}
per_backend!(
    no_window_in_a_nested_repository,
    landlock: "reduced rung (chosen only by name): no mount namespace, no layer (see doctor)"
);

/// A repository the host has below the root is the user's: the call may change what is in
/// it (validated), but removing one of its hooks, removing its git directory, making a new
/// one in its place or putting a file there lands none of it — the host's repository, its
/// commit and its hook are there afterwards, and each refusal is told.
fn a_nested_repository_the_host_has_stays(w: &World, b: Backend) {
    if !sandbox_support::has_layer(b) {
        return;
    }
    let setup = w.plain().sh(&format!(
        "git init -q a && git init -q c && git init -q d && for r in a c d; do \
         git -C $r {}; printf '#!/bin/sh\\nexit 0\\n' > $r/.git/hooks/pre-commit; \
         chmod +x $r/.git/hooks/pre-commit; done",
        HOST_COMMIT.trim_start_matches("git ")
    ));
    assert_eq!(setup.status_code(), Some(0), "{setup}");
    let run = w.confined(b).sh(
        "rm -f a/.git/hooks/pre-commit; rm -rf c/.git && mkdir -p c/.git/hooks && \
         printf '[core]\\n\\tfsmonitor = /bin/false\\n' > c/.git/config; \
         rm -rf d/.git && echo 'gitdir: /tmp' > d/.git; echo done",
    );
    assert!(run.stdout.contains("done"), "{run}");
    for refusal in [
        "git: refused the removal of hook pre-commit in a/.git/hooks",
        "git: refused the replacement of c/.git (a repository the host has)",
        "git: refused the replacement of d/.git by a file (a repository the host has)",
    ] {
        assert!(run.stderr.contains(refusal), "{refusal:?} not told\n{run}");
    }
    let host = w.plain().sh(
        "for r in a c d; do git -C $r log --format=%s; test -x $r/.git/hooks/pre-commit && \
         echo hook; done; git -C c config core.fsmonitor; true",
    );
    assert_eq!(
        host.stdout, "host\nhook\nhost\nhook\nhost\nhook\n",
        "{run}\n{host}"
    );
}
per_backend!(
    a_nested_repository_the_host_has_stays,
    landlock: "reduced rung (chosen only by name): no mount namespace, no layer (see doctor)"
);
