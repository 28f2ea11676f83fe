//! The transactional workspace as a user sees it on the host (issue 33): a confined call's
//! writes to the workspace land when it ends — a call that writes 10,000 files, one that
//! renames a directory the host had, one that deletes a tree, two concurrent calls in one
//! workspace — and nothing of a call is on the host while it runs. The namespace rung (fresh
//! and warm) and bubblewrap (launched by root, and by `nobody` in a workspace without `.git`);
//! the others write the workspace directly, which the functional suite covers.

use crate::sandbox_support;

use std::fs;
use std::time::Duration;

use sandbox_support::{Backend, World};

/// 10,000 new files in 100 directories land, every byte as written; the host saw none of
/// them while the call ran.
fn ten_thousand_files_land(w: &World, b: Backend) {
    if !sandbox_support::has_layer(b) {
        return;
    }
    let script = "for d in $(seq 1 100); do mkdir -p many/d$d; for f in $(seq 1 100); do \
                  echo \"$d-$f\" > many/d$d/f$f; done; done; \
                  echo written; sleep 1; echo done";
    let mut bg = w.confined(b).spawn_sh(script);
    assert_eq!(bg.read_line(), "written\n");
    let seen_during = w.ws.join("many").exists();
    let _ = bg.wait_for_exit(Duration::from_secs(120));
    assert!(
        !seen_during,
        "the call's files were on the host while it ran"
    );
    let mut count = 0;
    for d in 1..=100 {
        for f in 1..=100 {
            let text = fs::read_to_string(w.ws.join(format!("many/d{d}/f{f}")))
                .unwrap_or_else(|e| panic!("many/d{d}/f{f} did not land: {e}"));
            assert_eq!(text, format!("{d}-{f}\n"));
            count += 1;
        }
    }
    assert_eq!(count, 10_000);
}
per_backend!(
    ten_thousand_files_land,
    landlock: "reduced rung (chosen only by name): no mount namespace, no layer"
);

/// A directory the host had, renamed with `mv` in the call (overlayfs without `redirect_dir`
/// refuses the rename itself, EXDEV, and `mv` copies): the host ends with the new name and
/// every file, the old name gone; a file replaced and one removed in the same call land too.
fn renamed_directory_and_removed_tree_land(w: &World, b: Backend) {
    if !sandbox_support::has_layer(b) {
        return;
    }
    for (path, text) in [
        ("old/a.txt", "a\n"),
        ("old/deep/b.txt", "b\n"),
        ("gone/x/y.txt", "y\n"),
        ("keep.txt", "before\n"),
        ("drop.txt", "drop\n"),
    ] {
        w.write(&w.ws.join(path), text);
    }
    let run = w
        .confined(b)
        .sh("mv old new && rm -r gone && echo after > keep.txt && rm drop.txt && echo ok");
    assert!(run.stdout.contains("ok"), "{run}");
    assert!(!w.ws.join("old").exists(), "the old name is still there");
    assert_eq!(
        fs::read_to_string(w.ws.join("new/deep/b.txt"))
            .ok()
            .as_deref(),
        Some("b\n")
    );
    assert_eq!(
        fs::read_to_string(w.ws.join("new/a.txt")).ok().as_deref(),
        Some("a\n")
    );
    assert!(
        !w.ws.join("gone").exists(),
        "the removed tree is still there"
    );
    assert_eq!(
        fs::read_to_string(w.ws.join("keep.txt")).ok().as_deref(),
        Some("after\n")
    );
    assert!(
        !w.ws.join("drop.txt").exists(),
        "the removed file is still there"
    );
}
per_backend!(
    renamed_directory_and_removed_tree_land,
    landlock: "reduced rung (chosen only by name): no mount namespace, no layer"
);

/// Two calls in one workspace at once, each writing its own file and the same shared one:
/// both own files land, and the shared file holds one call's bytes whole.
fn concurrent_calls_in_one_workspace(w: &World, b: Backend) {
    if !sandbox_support::has_layer(b) {
        return;
    }
    let script = |n: u32| {
        format!(
            "echo {n} > own{n}.txt && head -c 100000 /dev/zero | tr '\\0' '{n}' > shared.txt && \
             echo started && sleep 1 && echo done"
        )
    };
    let mut first = w.confined(b).spawn_sh(&script(1));
    let mut second = w.confined(b).spawn_sh(&script(2));
    assert_eq!(first.read_line(), "started\n");
    assert_eq!(second.read_line(), "started\n");
    let _ = first.wait_for_exit(Duration::from_secs(60));
    let _ = second.wait_for_exit(Duration::from_secs(60));
    for n in [1, 2] {
        assert_eq!(
            fs::read_to_string(w.ws.join(format!("own{n}.txt"))).ok(),
            Some(format!("{n}\n")),
            "call {n}'s own file did not land"
        );
    }
    let shared = fs::read(w.ws.join("shared.txt")).expect("shared.txt landed");
    assert_eq!(shared.len(), 100_000);
    assert!(
        shared.iter().all(|c| *c == b'1') || shared.iter().all(|c| *c == b'2'),
        "shared.txt mixes the two calls' bytes"
    );
}
per_backend!(
    concurrent_calls_in_one_workspace,
    landlock: "reduced rung (chosen only by name): no mount namespace, no layer"
);

/// The write bound: a call that writes past `--written-mb` is killed (exit 123, the reason on
/// stderr) and nothing it wrote lands, not even what it wrote before the bound; a call within
/// the bound lands.
fn writes_past_the_bound_land_nothing(w: &World, b: Backend) {
    if !sandbox_support::has_layer(b) {
        return;
    }
    let run = w
        .confined(b)
        .written_mb(8)
        .sh("echo first > first.txt; for i in $(seq 1 64); do \
             head -c 1048576 /dev/urandom > big$i; sleep 0.05; done; echo finished");
    assert_eq!(run.status_code(), Some(123), "{run}");
    assert!(
        run.stderr.contains("write limit reached") && !run.stdout.contains("finished"),
        "{run}"
    );
    assert!(
        !w.ws.join("first.txt").exists(),
        "a write of the call landed"
    );
    assert!(!w.ws.join("big1").exists(), "a write of the call landed");
    let within = w
        .confined(b)
        .written_mb(8)
        .sh("head -c 1048576 /dev/urandom > one && echo ok");
    assert!(within.stdout.contains("ok"), "{within}");
    assert!(
        w.ws.join("one").is_file(),
        "a call within the bound did not land"
    );
}
per_backend!(
    writes_past_the_bound_land_nothing,
    landlock: "reduced rung (chosen only by name): no mount namespace, no layer"
);

/// `git clone URL .` into an empty workspace (issue 32): the child sees the host's empty
/// directory (no placeholder `.git`), and the clone lands whole.
fn clone_into_an_empty_workspace(w: &World, b: Backend) {
    if !sandbox_support::has_layer(b) {
        return;
    }
    let src = w.outside.join("src");
    let setup = w.plain().sh(&format!(
        "git init -q {s} && echo hi > {s}/f && git -C {s} add f && \
         git -C {s} -c user.name=h -c user.email=h@example.invalid commit -q -m s",
        s = src.display()
    ));
    assert_eq!(setup.status_code(), Some(0), "{setup}");
    let run = w
        .confined(b)
        .allow_read(&src)
        .sh(&format!("git clone -q {} . && echo cloned", src.display()));
    assert!(run.stdout.contains("cloned"), "{run}");
    assert_eq!(
        fs::read_to_string(w.ws.join("f")).ok().as_deref(),
        Some("hi\n")
    );
    let log = w.plain().sh("git log --oneline | wc -l");
    assert_eq!(log.stdout.trim(), "1", "{log}");
}
per_backend!(
    clone_into_an_empty_workspace,
    landlock: "reduced rung (chosen only by name): no mount namespace, no layer"
);

/// `git clone URL .` in an empty workspace as `nobody` (switched to with setpriv, which needs
/// root): bubblewrap launched by another user has its layer mounted around it by the helper,
/// and the nested repository the call also makes lands validated.
fn clone_into_an_empty_workspace_as_nobody(w: &World, b: Backend) {
    let Some(ws) = w.nobody_workspace("clone_into_an_empty_workspace_as_nobody") else {
        return;
    };
    let src = w.root.join("nobody-src");
    let setup = w.plain().sh(&format!(
        "git init -q {s} && echo hi > {s}/f && git -C {s} add f && \
         git -C {s} -c user.name=h -c user.email=h@example.invalid commit -q -m s && \
         chown -R 65534:65534 {s}",
        s = src.display()
    ));
    assert_eq!(setup.status_code(), Some(0), "{setup}");
    let script = format!(
        "git clone -q {} . && git init -q sub && git -C sub config core.fsmonitor /bin/false \
         && echo cloned",
        src.display()
    );
    let run = sandbox_support::run::as_nobody(
        &ws,
        w.confined(b)
            .workspace(&ws)
            .allow_read(&src)
            .argv(&["/bin/sh", "-c", &script]),
    );
    assert!(run.stdout.contains("cloned"), "{run}");
    assert_eq!(
        fs::read_to_string(ws.join("f")).ok().as_deref(),
        Some("hi\n"),
        "{run}"
    );
    let config = fs::read_to_string(ws.join("sub/.git/config")).unwrap_or_default();
    assert!(
        !config.is_empty() && !config.contains("fsmonitor"),
        "the nested repository did not land validated: {config:?}\n{run}"
    );
}
per_backend!(
    clone_into_an_empty_workspace_as_nobody,
    landlock: "reduced rung (chosen only by name): no mount namespace, no layer"
);
