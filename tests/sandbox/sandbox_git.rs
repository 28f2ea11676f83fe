//! Git and the sandbox, what a user sees on the host afterwards: a confined run in a
//! directory that is not a repository leaves no `.git` behind (no placeholder turns it into a
//! broken repository for other tools), also when runs overlap or one was killed, on every
//! Linux backend. (The escape side — nothing executable reaches the host's git — is in
//! `sandbox_escape_protected.rs`.)

use super::sandbox_git_litter::ours_in;
use crate::sandbox_support;

use std::fs;
use std::path::Path;
use std::time::Duration;

use sandbox_support::{Backend, World};

fn assert_no_git(ws: &Path, what: &str) {
    let git = ws.join(".git");
    let left = git.symlink_metadata().is_ok();
    let listing = fs::read_dir(&git)
        .map(|d| d.flatten().map(|e| e.file_name()).collect::<Vec<_>>())
        .unwrap_or_default();
    assert!(
        !left,
        "{what} left {} behind (holding {listing:?})",
        git.display()
    );
}

/// `true` in a directory without `.git`: nothing appears.
fn no_git_left_behind(w: &World, b: Backend) {
    let run = w.confined(b).sh("true && echo ran");
    assert!(run.stdout.contains("ran"), "{run}");
    assert_no_git(&w.ws, &format!("a confined run\n{run}"));
}
per_backend!(no_git_left_behind);

/// Two runs overlap in one workspace: the one that ends first does not remove the `.git`
/// placeholder the other still masks (it cannot create `.git` meanwhile), and once both are
/// done nothing is left. With the transactional workspace there is no placeholder: each run
/// sees the host's workspace, without `.git`, for as long as it runs.
fn no_git_left_behind_by_overlapping_runs(w: &World, b: Backend) {
    let layered = sandbox_support::layered(b);
    let probe = if layered {
        "test -e .git && echo SEEN"
    } else {
        "mkdir .git 2>/dev/null && echo CREATED"
    };
    let mut long = w
        .confined(b)
        .spawn_sh(&format!("echo started; sleep 2; {probe}; echo done"));
    assert_eq!(long.read_line(), "started\n");
    let short = w.confined(b).sh("true && echo ran");
    assert!(short.stdout.contains("ran"), "{short}");
    let rest = [long.read_line(), long.read_line()].concat();
    assert_eq!(
        rest, "done\n",
        "the long run could create .git, or saw one, after the short one ended"
    );
    assert!(long.wait_for_exit(Duration::from_secs(30)).is_some());
    assert_no_git(&w.ws, "two overlapping confined runs");
}
per_backend!(
    no_git_left_behind_by_overlapping_runs,
    landlock: "reduced rung (chosen only by name): protected paths are not enforced without a mount namespace (see doctor)"
);

/// A placeholder left by a run that was killed (our marker in an empty `.git`) is removed by
/// the next run.
fn a_killed_runs_placeholder_is_removed_by_the_next(w: &World, b: Backend) {
    fs::create_dir(w.ws.join(".git")).expect("mkdir .git");
    w.write(&w.ws.join(".git/.zeroclaw-placeholder"), "");
    let run = w.confined(b).sh("true && echo ran");
    assert!(run.stdout.contains("ran"), "{run}");
    assert_no_git(&w.ws, &format!("the run after a killed one\n{run}"));
}
per_backend!(
    a_killed_runs_placeholder_is_removed_by_the_next,
    landlock: "reduced rung (chosen only by name): makes no placeholders, so removes none"
);

const IDENTITY: &str = "git config user.name zc && git config user.email zc@example.invalid";

/// `git init` at the workspace root, then ordinary work, all confined; judged by the host's
/// git afterwards.
fn git_init_and_work_at_the_root(w: &World, b: Backend) {
    let script = format!(
        "set -e; git init -q; {IDENTITY}; git remote add origin /nowhere/r.git; \
         git remote set-url origin /elsewhere/r.git; echo hi > f.txt; git add f.txt; \
         git commit -qm first; git checkout -qb topic; git branch side; echo two >> f.txt; \
         git stash -q; git stash list | wc -l; echo done"
    );
    let run = w.confined(b).sh(&script);
    assert_eq!(run.status_code(), Some(0), "{run}");
    assert!(run.stdout.contains("1\ndone"), "{run}");
    let host = w
        .plain()
        .sh("git log --oneline --all | grep -c first; git config -l; git branch --list");
    for want in [
        "user.name=zc",
        "user.email=zc@example.invalid",
        "remote.origin.url=/elsewhere/r.git",
        "side",
        "* topic",
    ] {
        assert!(
            host.stdout.contains(want),
            "host git lacks {want:?}\n{run}\n{host}"
        );
    }
    assert!(
        !run.stderr.contains("git: refused"),
        "ordinary git work was refused\n{run}"
    );
}
per_backend!(git_init_and_work_at_the_root);

/// In a repository the run creates at the root: a linked worktree, a submodule of a local
/// repository, sparse-checkout, and a clone of a local repository — confined; judged by the
/// host's git.
fn git_worktree_submodule_sparse_clone_at_the_root(w: &World, b: Backend) {
    let script = format!(
        "set -e; src=${{TMPDIR:-/tmp}}/src; mkdir -p $src && cd $src && git init -q && {IDENTITY} && echo s > s.txt && \
         git add s.txt && git commit -qm src && cd - >/dev/null; \
         git init -q; {IDENTITY}; mkdir -p a b; echo a > a/f; echo b > b/f; git add .; git commit -qm first; \
         git worktree add -q wt -b side; \
         git -c protocol.file.allow=always submodule -q add $src sub; git commit -qm sub; \
         git -c protocol.file.allow=always clone -q $src cloned; \
         git sparse-checkout set a; test ! -e b/f; echo done"
    );
    let run = w.confined(b).sh(&script);
    assert_eq!(run.status_code(), Some(0), "{run}");
    assert!(run.stdout.contains("done"), "{run}");
    let host = w.plain().sh(
        "git log --oneline | grep -c sub; git worktree list | grep -c side; \
         git submodule status | grep -c sub; git -C cloned log --oneline | grep -c src; \
         git -C sub log --oneline | grep -c src; git sparse-checkout list; git config -l",
    );
    assert_eq!(host.status_code(), Some(0), "{run}\n{host}");
    assert!(
        host.stdout.starts_with("1\n1\n1\n1\n1\na\n"),
        "the host's git does not see the work\n{run}\n{host}"
    );
    assert!(
        !run.stderr.contains("git: refused"),
        "ordinary git work was refused\n{run}"
    );
}
per_backend!(git_worktree_submodule_sparse_clone_at_the_root);

/// The repository made on the host before the run, with two directories committed.
const EXISTING_REPO: &str = "set -e; git init -q; git config user.name h; \
    git config user.email h@example.invalid; mkdir a b; echo a > a/f; echo b > b/f; \
    git add .; git commit -qm first";

/// In an EXISTING repository: identity, remotes, sparse-checkout, a submodule of a local
/// path and its update, and a commit after those — confined (today's read-only
/// `.git/config` made each fail with EBUSY); judged by the host's git afterwards.
fn git_work_in_an_existing_repository(w: &World, b: Backend) {
    let setup = w.plain().sh(EXISTING_REPO);
    assert_eq!(setup.status_code(), Some(0), "{setup}");
    let script = "set -e; git config user.name zc; git config user.email zc@example.invalid; \
        git remote add origin /nowhere/r.git; git remote set-url origin /elsewhere/r.git; \
        src=${TMPDIR:-/tmp}/src; mkdir -p $src; git -C $src init -q; \
        git -C $src -c user.name=s -c user.email=s@example.invalid commit -q --allow-empty -m src; \
        git -c protocol.file.allow=always submodule -q add $src sub; \
        git -c protocol.file.allow=always submodule -q update --init; git commit -qm sub; \
        git sparse-checkout set a; test ! -e b/f; git commit -q --allow-empty -m after; \
        echo done";
    let run = w.confined(b).sh(script);
    assert_eq!(run.status_code(), Some(0), "{run}");
    assert!(run.stdout.contains("done"), "{run}");
    let host = w.plain().sh(
        "git log --oneline | grep -c 'sub\\|after'; git submodule status | grep -c sub; \
         git -C sub log --oneline | grep -c src; git sparse-checkout list; git config -l; \
         git log -1 --format=%an",
    );
    assert_eq!(host.status_code(), Some(0), "{run}\n{host}");
    assert!(
        host.stdout.starts_with("2\n1\n1\na\n"),
        "the host's git does not see the work\n{run}\n{host}"
    );
    for want in [
        "user.name=zc",
        "user.email=zc@example.invalid",
        "remote.origin.url=/elsewhere/r.git",
        "extensions.worktreeconfig=true",
        "\nzc\n",
    ] {
        assert!(
            host.stdout.contains(want),
            "host git lacks {want:?}\n{run}\n{host}"
        );
    }
    assert!(
        !run.stderr.contains("git: refused"),
        "ordinary git work was refused\n{run}"
    );
    assert_eq!(ours_in(&w.ws.join(".git")), Vec::<String>::new(), "{run}");
}
per_backend!(
    git_work_in_an_existing_repository,
    landlock: "reduced rung (chosen only by name): .git/config is read-only without a mount namespace (no private stage)"
);

/// Makes the workspace a linked worktree (branch `wt`) of a repository outside it; returns
/// the main repository's path.
fn linked_worktree(w: &World) -> std::path::PathBuf {
    let main = w.outside.join("main");
    let setup = w.plain().sh(&format!(
        "set -e; git init -q {m}; \
         git -C {m} -c user.name=h -c user.email=h@example.invalid commit -q --allow-empty -m main; \
         git -C {m} worktree add -q {ws} -b wt",
        m = main.display(),
        ws = w.ws.display()
    ));
    assert_eq!(setup.status_code(), Some(0), "{setup}");
    main
}

/// A workspace that is a linked worktree of a repository outside it (`.git` is a file naming
/// `<main>/.git/worktrees/<name>`, which the child could not see before): status, identity,
/// a commit and a branch work confined; judged by the host's git, in the main repository too.
fn git_work_in_a_linked_worktree(w: &World, b: Backend) {
    let main = linked_worktree(w);
    let script = "set -e; git status --short; git config user.name zc; echo x > f; git add f; \
        git -c user.email=zc@example.invalid commit -qm in-wt; git branch side; echo done";
    let run = w.confined(b).sh(script);
    assert_eq!(run.status_code(), Some(0), "{run}");
    assert!(run.stdout.contains("done"), "{run}");
    let host = w.plain().sh(&format!(
        "git log --oneline | grep -c in-wt; git -C {m} branch --list side | grep -c side; \
         git -C {m} config user.name",
        m = main.display()
    ));
    assert_eq!(host.stdout, "1\n1\nzc\n", "{run}\n{host}");
    assert!(!run.stderr.contains("git: refused"), "{run}");
    assert_eq!(ours_in(&main.join(".git")), Vec::<String>::new(), "{run}");
}
per_backend!(
    git_work_in_a_linked_worktree,
    landlock: "reduced rung (chosen only by name): the main repository is not visible without a mount namespace"
);
