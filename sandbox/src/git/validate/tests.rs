//! The validator's tests: the allowlist, the line-preserving filter, attributes, git dirs.

use super::*;

#[test]
fn keeps_allowed_keys_and_refuses_the_rest() {
    let text = "[core]\n\trepositoryformatversion = 0\n\tfsmonitor = \"sh -c x\"\n\
                [Core] HooksPath = /tmp/h\n[remote \"origin\"]\n\turl = /r.git\n\
                \tuploadpack = evil\n[include]\n\tpath = x\n[user]\n\tname = A \"B\" # c\n\
                [alias]\n\tst = !sh\n[diff \"x\"]\n\ttextconv = evil\n";
    let (clean, refused) = filter_config(text, ".git/config");
    assert_eq!(
        clean,
        "[core]\n\trepositoryformatversion = \"0\"\n[remote \"origin\"]\n\turl = \"/r.git\"\n\
         [user]\n\tname = \"A B\"\n"
    );
    assert_eq!(
        refused,
        [
            "git: refused core.fsmonitor in .git/config (runs a program outside the sandbox)",
            "git: refused core.hookspath in .git/config (runs a program outside the sandbox)",
            "git: refused remote.origin.uploadpack in .git/config (not on the list of keys known to be safe)",
            "git: refused include.path in .git/config (reads more configuration)",
            "git: refused alias.st in .git/config (runs a program outside the sandbox)",
            "git: refused diff.x.textconv in .git/config (runs a program outside the sandbox)",
        ]
    );
}

#[test]
fn continuations_and_dotted_subsections_cannot_smuggle_a_key() {
    let text = "[user]\n\tname = a\\\n\n[core]\n\tfsmonitor = x\n[core.x]\n\tfsmonitor = y\n";
    let (clean, refused) = filter_config(text, "c");
    assert!(!clean.contains("fsmonitor"), "{clean}");
    assert_eq!(refused.len(), 2, "{refused:?}");
    let parsed = parse(&clean);
    assert!(
        parsed
            .iter()
            .all(|e| allowed(&e.section, e.sub.as_deref(), &e.key))
    );
}

#[test]
fn a_submodule_may_keep_a_worktree_inside_the_workspace_only() {
    let d = tempfile::Builder::new()
        .prefix("zc-git-validate-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let (ws, stage) = (d.path().join("ws"), d.path().join("stage"));
    std::fs::create_dir_all(&stage).unwrap();
    let landing = ws.join(".git/modules/sub");
    for (value, kept) in [
        ("../../../sub", true),
        ("../../../../elsewhere", false),
        ("../..", false),
    ] {
        std::fs::write(
            stage.join("config"),
            format!("[core]\n\tworktree = {value}\n"),
        )
        .unwrap();
        let refused = sanitize_git_dir(&stage, ".git/modules/sub", false, Some((&landing, &ws)));
        assert_eq!(refused.is_empty(), kept, "{value}: {refused:?}");
    }
    std::fs::write(stage.join("config"), "[core]\n\tworktree = ../../../sub\n").unwrap();
    assert_eq!(sanitize_git_dir(&stage, ".git", false, None).len(), 1);
}

/// The landing's rule: a refused key loses its own logical line only; every other byte
/// stays, and what git's parser (ours) reads afterwards is what it read before minus the
/// refused entries.
#[test]
fn a_refused_key_loses_its_own_line_only() {
    let text = "# top comment\r\n[core]\r\n\trepositoryformatversion = 0\r\n\
                \thooksPath = .husky # lint\r\n[core] fsmonitor = x\n\tbare = false\n\
                [user]\n\tname = \"a # b ; c\" ; note\n[alias]\n\tst = \"!sh \\\n -c x\"\n\
                [user]\n\temail = e\\\n@x\n\tfsmonitor\n";
    let (clean, refused) = filter_config_lines(text, ".git/config", |_| false);
    assert_eq!(
        clean,
        "# top comment\r\n[core]\r\n\trepositoryformatversion = 0\r\n[core] \n\
         \tbare = false\n[user]\n\tname = \"a # b ; c\" ; note\n[alias]\n[user]\n\
         \temail = e\\\n@x\n"
    );
    assert_eq!(
        refused,
        [
            "git: refused core.hookspath in .git/config (runs a program outside the sandbox)",
            "git: refused core.fsmonitor in .git/config (runs a program outside the sandbox)",
            "git: refused alias.st in .git/config (runs a program outside the sandbox)",
            "git: refused user.fsmonitor in .git/config (not on the list of keys known to be safe)",
        ]
    );
    let expected: Vec<Entry> = parse(text)
        .into_iter()
        .filter(|e| allowed(&e.section, e.sub.as_deref(), &e.key))
        .collect();
    assert_eq!(parse(&clean), expected);
    assert_eq!(expected.len(), 4, "{expected:?}");
}

/// A line the parser cannot read (a broken header, an entry outside any section) is cut:
/// git might read it, and what follows it, otherwise.
#[test]
fn unreadable_lines_are_cut() {
    let text = "k = v\n[core]\n\tbare = true\n[co re]\n\tfsmonitor = y\n\
                [user]\n\tname = \"open\n\temail = e\n";
    let (clean, refused) = filter_config_lines(text, "c", |_| false);
    assert_eq!(clean, "[core]\n\tbare = true\n[user]\n\temail = e\n");
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(refused[0].contains("unreadable"));
    let kept: Vec<Entry> = parse(text)
        .into_iter()
        .filter(|e| allowed(&e.section, e.sub.as_deref(), &e.key))
        .collect();
    assert_eq!(parse(&clean), kept);
}

/// A config entry or attributes line the workspace's own copy holds is kept (the host's
/// own configuration, copied up with the run's change), a whiteout is not refused.
#[test]
fn the_workspaces_own_entries_are_kept_over_it() {
    let d = tempfile::Builder::new()
        .prefix("zc-git-validate-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let (lower, upper) = (d.path().join("lower"), d.path().join("upper"));
    for dir in [&lower, &upper] {
        std::fs::create_dir_all(dir.join("info")).unwrap();
    }
    std::fs::write(lower.join("config"), "[core]\n\tfsmonitor = mine\n").unwrap();
    std::fs::write(
        upper.join("config"),
        "[core]\n\tfsmonitor = mine\n\thooksPath = x\n[user]\n\tname = n\n",
    )
    .unwrap();
    std::fs::write(lower.join("info/attributes"), "*.psd filter=lfs\n").unwrap();
    std::fs::write(
        upper.join("info/attributes"),
        "*.psd filter=lfs\n*.x filter=evil\n",
    )
    .unwrap();
    let refused = sanitize_git_dir_over(&upper, ".git", false, None, Some(&lower));
    assert_eq!(refused.len(), 2, "{refused:?}");
    assert_eq!(
        std::fs::read_to_string(upper.join("config")).unwrap(),
        "[core]\n\tfsmonitor = mine\n[user]\n\tname = n\n"
    );
    assert_eq!(
        std::fs::read_to_string(upper.join("info/attributes")).unwrap(),
        "*.psd filter=lfs\n"
    );
}

#[test]
fn attributes_naming_a_driver_are_refused() {
    let (clean, refused) = filter_attributes(
        "*.txt text\n*.bin filter=evil\n* diff=x\n",
        ".git/info/attributes",
    );
    assert_eq!(clean, "*.txt text\n");
    assert_eq!(refused.len(), 2);
}
