//! Validation at landing: nested and bare repositories, `.git` files, the per-entry rules.

use super::{Fixture, exists, put, read, root, whiteout};
use crate::layer::{land, upper};

fn refused_has(refused: &[String], needle: &str) -> bool {
    refused.iter().any(|l| l.contains(needle))
}

/// A repository the call made: its config loses its fsmonitor line only, hooks other than
/// samples, symlinks, alternates and a rebase's `exec` lines are refused.
#[test]
fn a_new_nested_repository_lands_validated() {
    let f = Fixture::new();
    let layer = f.layer();
    let git = upper(&layer.dir).join("sub/.git");
    let config = "[core]\r\n\trepositoryformatversion = 0\r\n\tfsmonitor = \"sh -c x\" # y\r\n\
                  \tbare = false\r\n[user]\n\tname = \"a # b\"\n";
    put(&git.join("config"), config);
    put(&git.join("HEAD"), "ref: refs/heads/main\n");
    put(&git.join("hooks/pre-commit"), "#!/bin/sh\nevil\n");
    put(&git.join("hooks/pre-commit.sample"), "#!/bin/sh\n");
    std::fs::create_dir_all(git.join("logs")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", git.join("logs/HEAD")).unwrap();
    put(&git.join("objects/info/alternates"), "/elsewhere/objects\n");
    put(
        &git.join("rebase-merge/git-rebase-todo"),
        "pick 1234 one\n  exec make\nx rm -rf /\r\nexecutable 1\nfixup 5678 two\n",
    );
    put(&git.join("rebase-merge/strategy"), "../x\n");
    put(
        &git.join("sequencer/opts"),
        "[options]\n\tsignoff = true\n\tstrategy = ../x\n",
    );
    let landing = land(&layer.dir, &f.ws).unwrap();
    let git = f.ws.join("sub/.git");
    assert!(!exists(&git.join("rebase-merge/strategy")));
    assert_eq!(
        read(&git.join("sequencer/opts")),
        "[options]\n\tsignoff = true\n"
    );
    assert_eq!(
        read(&git.join("config")),
        "[core]\r\n\trepositoryformatversion = 0\r\n\tbare = false\r\n[user]\n\tname = \"a # b\"\n"
    );
    assert!(!exists(&git.join("hooks/pre-commit")));
    assert!(exists(&git.join("hooks/pre-commit.sample")));
    assert!(!exists(&git.join("logs/HEAD")));
    assert!(!exists(&git.join("objects/info/alternates")));
    assert_eq!(
        read(&git.join("rebase-merge/git-rebase-todo")),
        "pick 1234 one\nexecutable 1\nfixup 5678 two\n"
    );
    let r = &landing.refused;
    assert!(refused_has(r, "core.fsmonitor in sub/.git/config"), "{r:?}");
    assert!(refused_has(r, "hook pre-commit in sub/.git/hooks"), "{r:?}");
    assert!(
        refused_has(r, "sub/.git/logs/HEAD (a symbolic link"),
        "{r:?}"
    );
    assert!(refused_has(r, "sub/.git/objects/info/alternates"), "{r:?}");
    assert!(
        refused_has(r, "\"exec make\" in sub/.git/rebase-merge"),
        "{r:?}"
    );
    assert!(
        refused_has(r, "\"x rm -rf /\" in sub/.git/rebase-merge"),
        "{r:?}"
    );
    assert!(
        refused_has(r, "sub/.git/rebase-merge/strategy (names"),
        "{r:?}"
    );
    assert!(
        refused_has(r, "options.strategy in sub/.git/sequencer/opts"),
        "{r:?}"
    );
    assert_eq!(r.len(), 8, "{r:?}");
}

/// A `.git` file may point into the workspace's `.git/modules/` or `.git/worktrees/` only.
#[test]
fn a_git_file_points_into_the_repositorys_own_directories_only() {
    let f = Fixture::new();
    let layer = f.layer();
    let up = upper(&layer.dir);
    put(&up.join("m/.git"), "gitdir: ../.git/modules/m\n");
    put(&up.join("w/.git"), "gitdir: ../.git/worktrees/w\r\n");
    put(&up.join("o/.git"), "gitdir: /tmp/elsewhere\n");
    put(&up.join("p/.git"), "gitdir: ../.git/modules/../../../x\n");
    put(&up.join("q/.git"), "gitdir: ../.git/modules\n");
    std::fs::create_dir_all(up.join("l")).unwrap();
    std::os::unix::fs::symlink("../.git", up.join("l/.git")).unwrap();
    let landing = land(&layer.dir, &f.ws).unwrap();
    assert!(exists(&f.ws.join("m/.git")) && exists(&f.ws.join("w/.git")));
    for gone in ["o", "p", "q", "l"] {
        assert!(!exists(&f.ws.join(gone).join(".git")), "{gone}");
        assert!(
            refused_has(
                &landing.refused,
                &format!("{gone}/.git (points git at a directory outside")
            ),
            "{gone}: {:?}",
            landing.refused
        );
    }
    assert_eq!(landing.refused.len(), 4);
}

/// A bare repository planted anywhere is a control directory.
#[test]
fn a_planted_bare_repository_is_validated() {
    let f = Fixture::new();
    let layer = f.layer();
    let lib = upper(&layer.dir).join("vendor/lib");
    put(&lib.join("HEAD"), "ref: refs/heads/main\n");
    put(
        &lib.join("config"),
        "[core]\n\tbare = true\n\tfsmonitor = x\n",
    );
    std::fs::create_dir_all(lib.join("objects")).unwrap();
    std::fs::create_dir_all(lib.join("refs")).unwrap();
    let landing = land(&layer.dir, &f.ws).unwrap();
    assert_eq!(
        read(&f.ws.join("vendor/lib/config")),
        "[core]\n\tbare = true\n"
    );
    assert!(refused_has(
        &landing.refused,
        "core.fsmonitor in vendor/lib/config"
    ));
}

/// A config written into a workspace directory that already is a bare repository.
#[test]
fn a_bare_repository_completed_by_its_config_is_validated() {
    let f = Fixture::new();
    put(&f.ws.join("bare/HEAD"), "ref: refs/heads/main\n");
    std::fs::create_dir_all(f.ws.join("bare/objects")).unwrap();
    std::fs::create_dir_all(f.ws.join("bare/refs")).unwrap();
    let layer = f.layer();
    put(
        &upper(&layer.dir).join("bare/config"),
        "[core]\n\tfsmonitor = x\n",
    );
    let landing = land(&layer.dir, &f.ws).unwrap();
    assert_eq!(read(&f.ws.join("bare/config")), "[core]\n");
    assert!(refused_has(
        &landing.refused,
        "core.fsmonitor in bare/config"
    ));
}

/// A directory the workspace holds a config in, made a repository by this call: the
/// workspace's config is validated as the call's own; a hook there stops the repository.
#[test]
fn a_directory_made_a_repository_has_the_workspaces_files_validated() {
    let f = Fixture::new();
    put(
        &f.ws.join("half/config"),
        "[core]\n\tfsmonitor = x\n[user]\n\tname = n\n",
    );
    std::fs::create_dir_all(f.ws.join("half/objects")).unwrap();
    put(&f.ws.join("hooked/hooks/post-checkout"), "#!/bin/sh\n");
    std::fs::create_dir_all(f.ws.join("hooked/objects")).unwrap();
    let layer = f.layer();
    let up = upper(&layer.dir);
    for dir in ["half", "hooked"] {
        put(&up.join(dir).join("HEAD"), "ref: refs/heads/main\n");
        std::fs::create_dir_all(up.join(dir).join("refs/heads")).unwrap();
    }
    let landing = land(&layer.dir, &f.ws).unwrap();
    assert_eq!(
        read(&f.ws.join("half/config")),
        "[core]\n[user]\n\tname = n\n"
    );
    assert!(refused_has(
        &landing.refused,
        "core.fsmonitor in half/config"
    ));
    assert!(!exists(&f.ws.join("hooked/HEAD")) && !exists(&f.ws.join("hooked/refs")));
    assert!(refused_has(
        &landing.refused,
        "hooked/HEAD, objects and refs"
    ));
    assert!(exists(&f.ws.join("hooked/hooks/post-checkout")));
}

/// In a repository the host has: a removed hook is refused (the host's hooks stay), the
/// host's own keys stay in a config the call changed, a key the call added does not.
#[test]
fn the_hosts_repository_keeps_its_own_keys_and_its_hooks() {
    if !root() {
        return;
    }
    let f = Fixture::new();
    let host_config = "[core]\n\tfsmonitor = mine\n";
    put(&f.ws.join(".git/config"), host_config);
    put(&f.ws.join(".git/HEAD"), "ref: refs/heads/main\n");
    put(&f.ws.join(".git/hooks/pre-commit"), "#!/bin/sh\n");
    let layer = f.layer();
    let git = upper(&layer.dir).join(".git");
    whiteout(&git.join("hooks/pre-commit"));
    put(
        &git.join("config"),
        "[core]\n\tfsmonitor = mine\n\thooksPath = /tmp/h\n[user]\n\temail = e\n",
    );
    let landing = land(&layer.dir, &f.ws).unwrap();
    assert_eq!(read(&f.ws.join(".git/hooks/pre-commit")), "#!/bin/sh\n");
    assert_eq!(
        read(&f.ws.join(".git/config")),
        "[core]\n\tfsmonitor = mine\n[user]\n\temail = e\n"
    );
    assert_eq!(landing.refused.len(), 2, "{:?}", landing.refused);
    assert!(refused_has(
        &landing.refused,
        "core.hookspath in .git/config"
    ));
    assert!(refused_has(
        &landing.refused,
        "the removal of hook pre-commit in .git/hooks"
    ));
}
