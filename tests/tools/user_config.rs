//! The user's own configuration that work needs, as a `supervised` session's shell sees it on
//! every rung the machine has: the git identity and safe settings of the user's
//! `~/.gitconfig` (a validated copy: no key that runs a program), `git config --global` that
//! lasts for its call only and is told (in `full` too), and the user's toolchains under `~` first on `PATH`
//! in the daemon's order.

use crate::tools_support::{Outcome, Scene, Setup, backend_available};

use serde_json::json;

const RUNGS: [&str; 3] = ["namespaces", "bubblewrap", "landlock"];
const CHANGED: &str = "changed the global git config";
const USER_GITCONFIG: &str = "[user]\n\tname = Ada Lovelace\n\temail = ada@example.org\n\
    [core]\n\tfsmonitor = /bin/false-monitor\n\thooksPath = /var/tmp/zc-user-hooks\n\
    [alias]\n\tst = status --short\n\tboom = !touch /tmp/boom\n";

fn stdout(outcome: &Outcome) -> String {
    let text = &outcome.text;
    let start = text.find("stdout:\n").map_or(0, |i| i + "stdout:\n".len());
    let end = text.find("stderr:").unwrap_or(text.len());
    text[start..end.max(start)].to_owned()
}

#[test]
fn a_supervised_commit_carries_the_users_identity_and_no_program_key_reaches_the_child() {
    for backend in RUNGS {
        if !backend_available(backend) {
            continue;
        }
        eprintln!("rung: {backend}");
        let s = Scene::start(Setup::level("supervised").backend(backend));
        let gitconfig = s.home.path().join(".gitconfig");
        std::fs::write(&gitconfig, USER_GITCONFIG).unwrap();
        let commit = s.call(
            "shell",
            json!({"command": "git init -q . && echo x > f && git add f && \
                git commit -qm first && git log -1 --format='author=%an <%ae>'; \
                echo \"fsmonitor=$(git config --global --get core.fsmonitor)\"; \
                echo \"hooks=$(git config --global --get core.hooksPath)\"; \
                echo \"alias-st=$(git config --global --get alias.st)\"; \
                echo \"alias-boom=$(git config --global --get alias.boom)\""}),
        );
        commit.assert_completed();
        let out = stdout(&commit);
        assert!(
            out.contains("author=Ada Lovelace <ada@example.org>"),
            "{backend}: {}",
            commit.describe()
        );
        for line in ["fsmonitor=\n", "hooks=\n", "alias-boom=\n"] {
            assert!(out.contains(line), "{backend}: {line:?} in {out}");
        }
        assert!(out.contains("alias-st=status --short"), "{backend}: {out}");
        assert!(!commit.text.contains(CHANGED), "{backend}: {}", commit.text);
        assert_eq!(
            std::fs::read_to_string(&gitconfig).unwrap(),
            USER_GITCONFIG,
            "{backend}: the user's file is untouched"
        );
    }
}

#[test]
fn git_config_global_lasts_for_its_call_only_and_is_told() {
    // `full` too: its HOME shows the real `~/.gitconfig` read-only (a bind git cannot rename
    // over), so the copy lives beside it.
    let levels = RUNGS
        .iter()
        .flat_map(|b| [("supervised", *b), ("full", *b)]);
    for (level, backend) in levels {
        if !backend_available(backend) {
            continue;
        }
        eprintln!("rung: {backend}, level: {level}");
        let s = Scene::start(Setup::level(level).backend(backend));
        let gitconfig = s.home.path().join(".gitconfig");
        std::fs::write(&gitconfig, USER_GITCONFIG).unwrap();
        let set = s.call(
            "shell",
            json!({"command": "git config --global user.name 'Zed Inside' && \
                git config --global --get user.name"}),
        );
        set.assert_completed().assert_result_contains(CHANGED);
        assert!(
            stdout(&set).contains("Zed Inside"),
            "{backend}: {}",
            set.describe()
        );
        assert!(
            set.model_saw.contains(CHANGED),
            "{backend}: {}",
            set.model_saw
        );
        let next = s.call(
            "shell",
            json!({"command": "git config --global --get user.name"}),
        );
        next.assert_completed();
        assert!(
            stdout(&next).contains("Ada Lovelace"),
            "{backend}: {}",
            next.describe()
        );
        assert!(!next.text.contains(CHANGED), "{backend}: {}", next.text);
        assert_eq!(
            std::fs::read_to_string(&gitconfig).unwrap(),
            USER_GITCONFIG,
            "{backend}: the user's file is untouched"
        );
    }
}

#[test]
fn a_toolchain_first_on_the_daemons_path_wins_in_the_child() {
    for backend in RUNGS {
        if !backend_available(backend) {
            continue;
        }
        eprintln!("rung: {backend}");
        let path = std::env::var("PATH").unwrap_or_default();
        let setup = Setup::level("supervised")
            .backend(backend)
            .env("PATH", &format!("{{home}}/.pyenv/shims:{path}"));
        let s = Scene::start(setup);
        let shims = s.home.path().join(".pyenv/shims");
        std::fs::create_dir_all(&shims).unwrap();
        let python = shims.join("python3");
        std::fs::write(&python, "#!/bin/sh\necho zc-fake-python-marker\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
        let run = s.call(
            "shell",
            json!({"command": "command -v python3; python3; echo \"PATH=$PATH\""}),
        );
        run.assert_completed();
        let out = stdout(&run);
        assert!(
            out.contains(&format!("{}\n", python.display())),
            "{backend}: {}",
            run.describe()
        );
        assert!(out.contains("zc-fake-python-marker"), "{backend}: {out}");
        let child_path = out.lines().find_map(|l| l.strip_prefix("PATH=")).unwrap();
        let first = child_path.split(':').next().unwrap_or_default();
        assert_eq!(
            first,
            shims.display().to_string(),
            "{backend}: {child_path}"
        );
        assert!(
            child_path.split(':').any(|d| d == "/usr/bin"),
            "{backend}: {child_path}"
        );
    }
}
