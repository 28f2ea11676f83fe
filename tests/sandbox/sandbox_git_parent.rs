//! A workspace that is a subdirectory of a larger repository (`[sandbox.git] parent_worktree`):
//! by default the command sees that repository's worktree read-only, with the daemon's
//! forbidden paths in it still masked, and works with it as on the host (`git status`,
//! `git add -A`, `git commit`), while what it writes into the repository's control files lands
//! only validated; hidden, git sees no repository. Judged on the host by its git.

use super::sandbox_escape_git::{canary_script, host_git_while_it_runs};
use super::sandbox_git_litter::ours_in;
use crate::sandbox_support;

use std::fs;
use std::path::PathBuf;

use sandbox_support::world::q;
use sandbox_support::{Backend, World};

/// The scene: `outside/parent` is a repository (the host's identity, `top.txt` and
/// `ws/in.txt` committed, an untracked `private/secret.txt` the config forbids) and the
/// workspace is `outside/parent/ws`. Returns (parent, workspace).
fn scene(w: &World) -> (PathBuf, PathBuf) {
    let parent = w.outside.join("parent");
    let ws = parent.join("ws");
    let setup = w.plain().sh(&format!(
        "set -e; mkdir -p {ws} {p}/private; cd {p}; git init -q; git config user.name h; \
         git config user.email h@example.invalid; echo top > top.txt; echo in > ws/in.txt; \
         git add top.txt ws/in.txt; git commit -qm init; echo {secret} > private/secret.txt; \
         echo private/ >> .git/info/exclude",
        ws = q(&ws),
        p = q(&parent),
        secret = w.secret("parent-private"),
    ));
    assert_eq!(setup.status_code(), Some(0), "{setup}");
    // The daemon's config (the launcher's HOME is the world's) forbids `private/`.
    let config = w.home.join(".zeroclaw/config.toml");
    let mut text = fs::read_to_string(&config).unwrap_or_default();
    text.push_str(&format!(
        "\n[autonomy]\nforbidden_paths = [\"{}\"]\n",
        parent.join("private").display()
    ));
    fs::write(&config, text).expect("write the config");
    (parent, ws)
}

/// What the confined command tries: status and history of the parent, a file beside the
/// workspace read, a commit of the workspace's change, a write beside the workspace, the
/// forbidden file, and a planted `core.fsmonitor` and hook in the parent's git directory.
const WORK: &str = "git log --oneline | grep -c init; git status --short; cat ../top.txt; \
    echo new > new.txt; echo changed > in.txt; \
    git add -A && git -c user.name=zc -c user.email=zc@example.invalid commit -qm from-ws \
    && echo committed; \
    if echo x >> ../top.txt; then echo WROTE-BESIDE; fi; \
    cat ../private/secret.txt; \
    git config core.fsmonitor 'touch fsmonitor-ran'; \
    printf '#!/bin/sh\\ntouch hook-ran\\n' > \"$(git rev-parse --absolute-git-dir)/hooks/post-checkout\"; \
    echo done";

/// The default (`read-only`): the parent's work is the user's, its control files stay the
/// host's. On the Landlock-only rung the parent is readable but its git directory is not
/// writable (no mount namespace, so no stage): status works, the commit fails.
fn work_in_a_workspace_inside_a_larger_repository(w: &World, b: Backend) {
    let (parent, ws) = scene(w);
    let run = w.confined(b).workspace(&ws).sh(WORK);
    assert!(
        run.stdout.starts_with("1\n"),
        "git saw no repository\n{run}"
    );
    assert!(
        run.stdout.contains("top\n"),
        "the parent was not readable\n{run}"
    );
    assert!(run.stdout.contains("done"), "{run}");
    assert!(
        !run.stdout.contains("WROTE-BESIDE"),
        "wrote the parent\n{run}"
    );
    assert!(
        !run.stdout.contains(&w.secret("parent-private")),
        "read a forbidden path in the parent\n{run}"
    );
    let host = w.plain().sh(&format!(
        "cd {p}; git log --oneline | grep -c from-ws; git status --short; cat top.txt; \
         git config core.fsmonitor; ls .git/hooks | grep -v sample; ls fsmonitor-ran hook-ran",
        p = q(&parent)
    ));
    if b == Backend::Landlock {
        assert!(!run.stdout.contains("committed"), "{run}");
        assert!(host.stdout.starts_with("0\n"), "{run}\n{host}");
    } else {
        assert!(run.stdout.contains("committed"), "{run}");
        assert!(
            run.stderr.contains(&format!(
                "git: refused core.fsmonitor in {}",
                parent.join(".git/config").display()
            )),
            "the refusal was not told, naming the parent's config\n{run}"
        );
        // Committed, and the workspace's files and the index landed: the host sees a clean
        // worktree with the commit.
        assert!(host.stdout.starts_with("1\ntop\n"), "{run}\n{host}");
    }
    assert!(!host.stdout.contains("fsmonitor-ran"), "{host}");
    assert!(
        !host.stdout.contains("post-checkout") && !host.stdout.contains("touch"),
        "a planted hook or fsmonitor reached the parent\n{run}\n{host}"
    );
    assert_eq!(ours_in(&parent.join(".git")), Vec::<String>::new(), "{run}");
}
per_backend!(work_in_a_workspace_inside_a_larger_repository);

/// `hidden`: git sees no repository, and nothing of the parent beside the workspace is there.
fn a_hidden_parent_is_not_seen(w: &World, b: Backend) {
    let (_parent, ws) = scene(w);
    let run = w
        .confined(b)
        .workspace(&ws)
        .parent_worktree("hidden")
        .sh("git status 2>&1; cat ../top.txt; echo done");
    assert!(run.stdout.contains("not a git repository"), "{run}");
    assert!(!run.stdout.contains("top\n"), "{run}");
    assert!(run.stdout.contains("done"), "{run}");
}
per_backend!(a_hidden_parent_is_not_seen);

/// A home directory kept in git (dotfiles) is never shown, whatever the setting: the
/// repository would expose every file of the HOME. A workspace below it sees no repository.
fn a_home_kept_in_git_is_not_shown(w: &World, b: Backend) {
    let ws = w.home.join("project");
    let setup = w.plain().sh(&format!(
        "set -e; mkdir -p {ws}; cd {h}; git init -q; echo {secret} > dotfile; \
         git add dotfile; git -c user.name=h -c user.email=h@example.invalid commit -qm dots",
        ws = q(&ws),
        h = q(&w.home),
        secret = w.secret("dotfile"),
    ));
    assert_eq!(setup.status_code(), Some(0), "{setup}");
    let run = w
        .confined(b)
        .workspace(&ws)
        .sh("git status 2>&1; cat ../dotfile; echo done");
    assert!(run.stdout.contains("not a git repository"), "{run}");
    assert!(run.stdout.contains("done"), "{run}");
    assert!(!run.stdout.contains(&w.secret("dotfile")), "{run}");
}
per_backend!(a_home_kept_in_git_is_not_shown);

/// No window in the parent: while the confined command has set `core.fsmonitor` and a
/// `pre-commit` hook in the parent's git directory and still runs, the host's `git status`
/// and a commit loop in the parent and never fire the canary; afterwards neither is there.
/// The positive control plants the same unconfined, and the host's git fires it.
fn no_window_in_the_parent_repository(w: &World, b: Backend) {
    if !sandbox_support::has_layer(b) {
        return;
    }
    let plant = |evil: &std::path::Path| {
        format!(
            "d=$(git rev-parse --absolute-git-dir) && git config core.fsmonitor {e} && \
             printf '#!/bin/sh\\nexec {e}\\n' > $d/hooks/pre-commit && chmod +x $d/hooks/pre-commit",
            e = evil.display()
        )
    };
    let (parent, ws) = scene(w);
    let (canary, evil) = canary_script(w);
    let host = format!(
        "cd {p} && git status --short >/dev/null 2>&1; \
         git -c user.name=h -c user.email=h@example.invalid commit -q --allow-empty -m h \
         >/dev/null 2>&1; true",
        p = q(&parent)
    );
    let after = host_git_while_it_runs(
        w,
        w.confined(b)
            .workspace(&ws)
            .spawn_sh(&format!("{} && echo planted && sleep 2", plant(&evil))),
        &host,
        &canary,
        &format!(
            "cd {}; git config core.fsmonitor; test -e .git/hooks/pre-commit && echo HOOK-LANDED",
            q(&parent)
        ),
    );
    assert!(!after.stdout.contains("HOOK-LANDED"), "{after}");
    assert!(!after.stdout.contains("canary"), "{after}");

    let c = World::new();
    let (parent, ws) = scene(&c);
    let (canary, evil) = canary_script(&c);
    let control = c.plain().sh(&format!("cd {} && {}", q(&ws), plant(&evil)));
    assert_eq!(control.status_code(), Some(0), "{control}");
    let _ = c
        .plain()
        .sh(&format!("cd {} && git status --short; true", q(&parent)));
    assert!(canary.exists(), "positive control failed\n{control}");
}
per_backend!(
    no_window_in_the_parent_repository,
    landlock: "reduced rung (chosen only by name): the parent's git directory is read-only there, nothing is planted"
);
