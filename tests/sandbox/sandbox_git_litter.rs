//! No stale git stage left behind: a confined run whose whole tree was SIGKILLed (helper,
//! init, command) leaves its private `.git` stage — and, in a directory without `.git`, the
//! placeholder — and the next run in that workspace removes them, never another live run's
//! stage, never through a symlink planted in one. Judged on the host: the directory listing,
//! `git status`, `git log` and `git fsck`, and the files outside the workspace.

use crate::sandbox_support;

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use sandbox_support::world::q;
use sandbox_support::{Backend, World};

/// The repository made on the host before the runs.
const REPO: &str = "set -e; git init -q; git config user.name h; \
    git config user.email h@example.invalid; echo a > f; git add f; git commit -qm first";

/// Entries of `dir` named like the sandbox's own (`.zeroclaw-*`): in a `.git`, the stages
/// runs left behind.
pub(super) fn ours_in(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(".zeroclaw-"))
                .collect()
        })
        .unwrap_or_default()
}

/// `(pid, parent pid, state, start time)` of every process, as `/proc/<pid>/stat` says.
fn processes() -> Vec<(u32, u32, char, u64)> {
    fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|p| {
            let stat = fs::read_to_string(format!("/proc/{p}/stat")).ok()?;
            let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
            let state = fields.first()?.chars().next()?;
            Some((
                p,
                fields.get(1)?.parse().ok()?,
                state,
                fields.get(19)?.parse().ok()?,
            ))
        })
        .collect()
}

/// SIGKILLs the still unreaped `bg` and all its descendants at once (one snapshot, taken
/// while none of their pids can be reused), then waits until each is gone.
fn kill_tree(bg: &mut sandbox_support::procs::Bg) {
    let all = processes();
    let mut tree: Vec<(u32, u64)> = all
        .iter()
        .filter(|(p, ..)| *p == bg.pid())
        .map(|(p, _, _, start)| (*p, *start))
        .collect();
    let mut i = 0;
    while i < tree.len() {
        let parent = tree[i].0;
        tree.extend(
            all.iter()
                .filter(|(_, pp, ..)| *pp == parent)
                .map(|(p, _, _, start)| (*p, *start)),
        );
        i += 1;
    }
    for (p, _) in &tree {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(*p as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    assert!(
        bg.wait_for_exit(Duration::from_secs(10)).is_some(),
        "the killed run does not die"
    );
    let end = Instant::now() + Duration::from_secs(10);
    // Gone: no such process any more, another one on its pid, or a zombie (its files closed).
    while processes()
        .iter()
        .any(|(p, _, state, start)| *state != 'Z' && tree.contains(&(*p, *start)))
    {
        assert!(Instant::now() < end, "the killed run's tree does not die");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Starts `script` confined, waits for its first line, then SIGKILLs the whole tree.
fn killed_mid_run(w: &World, b: Backend, script: &str) {
    let mut run = w.confined(b).spawn_sh(script);
    assert_eq!(run.read_line(), "started\n", "the run never started");
    kill_tree(&mut run);
}

/// Makes [`REPO`] in the workspace, on the host.
fn make_repository(w: &World) {
    let setup = w.plain().sh(REPO);
    assert_eq!(setup.status_code(), Some(0), "{setup}");
}

/// The host's git sees the repository as it was: clean, its commit there, its objects whole.
fn assert_repository_intact(w: &World, what: &str) {
    let host = w
        .plain()
        .sh("git status --porcelain; git log --format=%s; git fsck --no-progress 2>&1");
    assert_eq!(host.status_code(), Some(0), "{what}\n{host}");
    assert_eq!(host.stdout, "first\n", "{what}\n{host}");
}

/// An existing repository: a run SIGKILLed mid-command leaves its stage in `.git`; the next
/// run removes it, and the host's repository is intact.
fn a_killed_runs_stage_is_removed_by_the_next(w: &World, b: Backend) {
    make_repository(w);
    killed_mid_run(w, b, "git config user.name killed; echo started; sleep 30");
    let left = ours_in(&w.ws.join(".git"));
    assert!(
        left.iter().any(|n| n.starts_with(".zeroclaw-stage-")),
        "the killed run left no stage (nothing to test): {left:?}"
    );
    let next = w.confined(b).sh("git status --short && echo ran");
    assert!(next.stdout.contains("ran"), "{next}");
    assert_eq!(
        ours_in(&w.ws.join(".git")),
        Vec::<String>::new(),
        "the next run left the killed run's stage behind\n{next}"
    );
    assert_repository_intact(w, &format!("after the next run\n{next}"));
    let name = w.plain().sh("git config user.name");
    assert_eq!(
        name.stdout, "h\n",
        "the killed run's change reached the host"
    );
}
per_backend!(
    a_killed_runs_stage_is_removed_by_the_next,
    landlock: "reduced rung (chosen only by name): no private stage without a mount namespace"
);

/// A directory without `.git`: a run SIGKILLed after `git init` leaves the `.git`
/// placeholder with its stage; the next run removes both (no `.git` is left).
fn a_killed_runs_placeholder_and_stage_are_removed_by_the_next(w: &World, b: Backend) {
    killed_mid_run(w, b, "git init -q && echo started; sleep 30");
    let git = w.ws.join(".git");
    if sandbox_support::layered(b) {
        // The transactional workspace: the killed run's repository was in its layer only,
        // which the next run's recovery removes (it never landed).
        assert!(
            git.symlink_metadata().is_err(),
            "the killed run's .git reached the host: {:?}",
            ours_in(&git)
        );
        let next = w.confined(b).sh("true && echo ran");
        assert!(next.stdout.contains("ran"), "{next}");
        // A helper the launcher had made ahead for a next call removes its own layer once
        // it sees the launcher gone, a moment after the run.
        let layers = w.home.join(".zeroclaw/workspace/state/layers");
        for _ in 0..100 {
            if layers.symlink_metadata().is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(
            git.symlink_metadata().is_err() && layers.symlink_metadata().is_err(),
            "the next run left .git or the killed run's layer behind ({:?})\n{next}",
            fs::read_dir(&layers).map(|d| d.flatten().map(|e| e.file_name()).collect::<Vec<_>>())
        );
        return;
    }
    assert!(
        ours_in(&git)
            .iter()
            .any(|n| n.starts_with(".zeroclaw-stage-")),
        "the killed run left no stage (nothing to test): {:?}",
        ours_in(&git)
    );
    let next = w.confined(b).sh("true && echo ran");
    assert!(next.stdout.contains("ran"), "{next}");
    assert!(
        git.symlink_metadata().is_err(),
        "the next run left {} behind (holding {:?})\n{next}",
        git.display(),
        ours_in(&git)
    );
}
per_backend!(
    a_killed_runs_placeholder_and_stage_are_removed_by_the_next,
    landlock: "reduced rung (chosen only by name): makes no placeholders, so removes none"
);

/// Two runs overlap in one repository that also holds a killed run's stage: the one that
/// ends first removes the dead stage but not the other's live one, whose work still lands;
/// afterwards no stage is left.
fn overlapping_runs_keep_each_others_stage(w: &World, b: Backend) {
    make_repository(w);
    let dead = w.ws.join(".git/.zeroclaw-stage-1-0-1");
    fs::create_dir_all(dead.join("refs")).expect("mkdir");
    w.write(&dead.join("config"), "[core]\n\tfsmonitor = x\n");
    let mut long = w.confined(b).spawn_sh(
        "echo started; sleep 2; git config user.name long && \
         git commit -q --allow-empty -m long && echo done",
    );
    assert_eq!(long.read_line(), "started\n");
    let short = w
        .confined(b)
        .sh("git commit -q --allow-empty -m short && echo ran");
    assert!(short.stdout.contains("ran"), "{short}");
    assert!(
        !dead.exists(),
        "the killed run's stage is still there\n{short}"
    );
    assert_eq!(long.read_line(), "done\n", "the long run's git failed");
    assert!(long.wait_for_exit(Duration::from_secs(30)).is_some());
    let host = w
        .plain()
        .sh("git log --format=%s; git config user.name; git fsck --no-progress 2>&1");
    assert_eq!(host.stdout, "long\nshort\nfirst\nlong\n", "{short}\n{host}");
    assert_eq!(ours_in(&w.ws.join(".git")), Vec::<String>::new());
}
per_backend!(
    overlapping_runs_keep_each_others_stage,
    landlock: "reduced rung (chosen only by name): no private stage without a mount namespace"
);

/// An entry named like a stage that holds symlinks to files outside the workspace — planted
/// on the host, or made by a confined run in its `.git` — never makes the removal touch what
/// they point at; the run's one is refused, never moved into the host's `.git`.
fn a_planted_fake_stage_never_leads_the_removal_outside(w: &World, b: Backend) {
    make_repository(w);
    let target = w.outside.join("target.txt");
    let before = fs::read_to_string(&target).expect("target");
    w.write(&w.outside.join("dir/inner.txt"), "inner");
    let plant = |at: &str, link: &str| {
        format!(
            "mkdir -p {at}/sub && ln -s {t} {at}/config && ln -s {d} {at}/sub/objects && \
             ln -s {o} {link}",
            t = q(&target),
            d = q(&w.outside.join("dir")),
            o = q(&w.outside),
        )
    };
    let host = w.plain().sh(&plant(
        ".git/.zeroclaw-stage-9-0-9",
        ".git/.zeroclaw-stage-9-1-9",
    ));
    assert_eq!(host.status_code(), Some(0), "{host}");
    let run = w.confined(b).sh(&format!(
        "{} && echo planted",
        plant(".git/.zeroclaw-stage-8-0-8", ".git/.zeroclaw-stage-8-1-8")
    ));
    assert!(run.stdout.contains("planted"), "{run}");
    assert!(
        run.stderr.contains(
            "git: refused .git/.zeroclaw-stage-8-0-8 (a name the sandbox keeps for itself)"
        ),
        "{run}"
    );
    // The host's fake went with this run's end; the run's own never reached the host.
    assert_eq!(ours_in(&w.ws.join(".git")), Vec::<String>::new(), "{run}");
    let next = w.confined(b).sh("true && echo ran");
    assert!(next.stdout.contains("ran"), "{next}");
    assert_eq!(fs::read_to_string(&target).expect("target"), before);
    assert_eq!(
        fs::read_to_string(w.outside.join("dir/inner.txt")).expect("inner"),
        "inner"
    );
    assert_eq!(
        ours_in(&w.ws.join(".git")),
        Vec::<String>::new(),
        "{run}\n{next}"
    );
    assert_repository_intact(w, &format!("{run}\n{next}"));
}
per_backend!(
    a_planted_fake_stage_never_leads_the_removal_outside,
    landlock: "reduced rung (chosen only by name): no private stage without a mount namespace"
);

/// A workspace that is a linked worktree: a killed run's stage of the main repository's git
/// directory (at its real path, outside the workspace) is removed by the next run there.
fn a_killed_runs_stage_of_the_main_repository_is_removed_by_the_next(w: &World, b: Backend) {
    let main = w.outside.join("main");
    let setup = w.plain().sh(&format!(
        "set -e; git init -q {m}; \
         git -C {m} -c user.name=h -c user.email=h@example.invalid commit -q --allow-empty -m first; \
         git -C {m} worktree add -q {ws} -b wt",
        m = q(&main),
        ws = q(&w.ws)
    ));
    assert_eq!(setup.status_code(), Some(0), "{setup}");
    killed_mid_run(w, b, "git status --short; echo started; sleep 30");
    let git = main.join(".git");
    assert!(
        ours_in(&git)
            .iter()
            .any(|n| n.starts_with(".zeroclaw-stage-")),
        "the killed run left no stage (nothing to test): {:?}",
        ours_in(&git)
    );
    let next = w.confined(b).sh("git status --short && echo ran");
    assert!(next.stdout.contains("ran"), "{next}");
    assert_eq!(ours_in(&git), Vec::<String>::new(), "{next}");
    let host = w
        .plain()
        .sh("git status --porcelain; git log --format=%s; git fsck --no-progress 2>&1");
    assert_eq!(host.stdout, "first\n", "{next}\n{host}");
}
per_backend!(
    a_killed_runs_stage_of_the_main_repository_is_removed_by_the_next,
    landlock: "reduced rung (chosen only by name): the main repository is not visible without a mount namespace"
);
