//! A session whose workspace is a subdirectory of a larger repository, through the shell tool:
//! by default its git work lands in that repository (`[sandbox.git] parent_worktree =
//! "read-only"`); hidden, git sees no repository and the result says why in one line.

use crate::tools_support::{Scene, Setup, backend_available};

use serde_json::json;

const HIDDEN_NOTE: &str = "which this daemon hides from commands";

/// Makes the scene's root (which holds the workspace `ws/`) a repository with one commit.
fn parent_repository(s: &Scene) -> std::path::PathBuf {
    let root = s.root.path().canonicalize().unwrap();
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(
            "set -e; git init -q; echo top > top.txt; git add top.txt; \
             git -c user.name=h -c user.email=h@example.invalid commit -qm init",
        )
        .current_dir(&root)
        .env("GIT_CEILING_DIRECTORIES", root.parent().unwrap())
        .status()
        .unwrap();
    assert!(status.success());
    root
}

#[test]
fn a_commit_in_the_parent_repository_lands_and_a_hidden_one_is_explained() {
    for backend in ["namespaces", "bubblewrap"] {
        if !backend_available(backend) {
            continue;
        }
        eprintln!("rung: {backend}");
        let s = Scene::start(Setup::level("full").backend(backend));
        let root = parent_repository(&s);
        let work = s.call(
            "shell",
            json!({"command": "cat ../top.txt && echo made > made.txt && git add made.txt && \
                   git -c user.name=zc -c user.email=zc@example.invalid commit -qm from-agent \
                   && echo committed"}),
        );
        work.assert_completed().assert_result_contains("committed");
        let log = std::process::Command::new("git")
            .args(["log", "--format=%s", "-1"])
            .current_dir(&root)
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&log.stdout),
            "from-agent\n",
            "{backend}"
        );
        assert!(!work.text.contains(HIDDEN_NOTE), "{}", work.describe());

        let s = Scene::start(
            Setup::level("full")
                .backend(backend)
                .extra("[sandbox.git]\nparent_worktree = \"hidden\""),
        );
        let root = parent_repository(&s);
        let hidden = s.call("shell", json!({"command": "git status"}));
        hidden.assert_completed();
        let note = hidden
            .text
            .lines()
            .find(|l| l.contains(HIDDEN_NOTE))
            .unwrap_or_else(|| panic!("{backend}: no note\n{}", hidden.describe()));
        assert!(note.contains(&root.display().to_string()), "{note}");
        assert!(
            hidden.model_saw.contains(HIDDEN_NOTE),
            "{}",
            hidden.model_saw
        );
    }
}
