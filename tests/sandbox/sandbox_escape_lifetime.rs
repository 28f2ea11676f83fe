//! Escape suite, lifetime and resource class of `SECURITY.md`: descendants that try to outlive
//! the command (`setsid`, `nohup`, double fork, a daemon), a bounded fork bomb, file-size and
//! memory limits, CPU spin past `--timeout`, and an output flood.
//!
//! Survivors are found from outside: a heartbeat file in the workspace and a `/proc` scan for a
//! marker unique to the test in the command line. Every process a control leaves behind on
//! purpose is killed by a [`Reaper`] when the test ends.

use crate::sandbox_support;

use std::fs;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::thread;
use std::time::Duration;

use sandbox_support::backend::selftest;
use sandbox_support::judge::{
    assert_escaped, assert_not_escaped, confined, control, defaults, marked,
};
use sandbox_support::procs::{Reaper, survivors, survivors_after_grace};
use sandbox_support::py::py;
use sandbox_support::world::unique;
use sandbox_support::{ATTEMPT, Backend, World};
use zeroclaw_sandbox::Limits;

/// A heartbeat loop carrying `marker` in its command line, writing `hb` in the cwd.
fn heartbeat(marker: &str) -> String {
    format!("while :; do echo beat >> hb; sleep 0.05; done # {marker}")
}

/// Waits (inside the script) until the background heartbeat has started.
const STARTED: &str = "while [ ! -s hb ]; do sleep 0.01; done; echo started";

fn heartbeat_len(ws: &Path) -> u64 {
    fs::metadata(ws.join("hb")).map_or(0, |m| m.len())
}

/// After the confined script returned, nothing carrying the marker runs and the heartbeat is
/// still; after the unconfined twin returned, the background process is alive.
fn must_not_survive(w: &World, b: Backend, marker: &str, script: &str) {
    let _reaper = Reaper(marker.to_owned());
    let run = confined(w, b, defaults, script);
    assert!(
        run.stdout.contains("started"),
        "the background process never started\n{run}"
    );
    let left = survivors_after_grace(marker);
    assert!(
        left.is_empty(),
        "ESCAPE: processes {left:?} outlived the command\n{run}"
    );
    let before = heartbeat_len(&w.ws);
    thread::sleep(Duration::from_millis(300));
    assert_eq!(
        before,
        heartbeat_len(&w.ws),
        "ESCAPE: the heartbeat goes on\n{run}"
    );
    fs::remove_file(w.ws.join("hb")).expect("remove hb");
    let control = control(w, script);
    assert!(
        eventually_some(marker),
        "positive control failed: nothing survived\n{control}"
    );
}

/// Whether a process carrying `marker` shows up within a second (for positive checks: a
/// process caught mid-`exec` may briefly show an empty command line).
fn eventually_some(marker: &str) -> bool {
    (0..100).any(|_| {
        let found = !survivors(marker).is_empty();
        if !found {
            thread::sleep(Duration::from_millis(10));
        }
        found
    })
}

fn setsid_grandchild(w: &World, b: Backend) {
    let marker = unique("zcmark");
    let script = format!(
        "setsid sh -c '{}' >/dev/null 2>&1 </dev/null & {STARTED}",
        heartbeat(&marker)
    );
    must_not_survive(w, b, &marker, &script);
}
per_backend!(setsid_grandchild);

fn nohup_double_fork(w: &World, b: Backend) {
    let marker = unique("zcmark");
    let script = format!(
        "( nohup sh -c '{}' >/dev/null 2>&1 </dev/null & ); {STARTED}",
        heartbeat(&marker)
    );
    must_not_survive(w, b, &marker, &script);
}
per_backend!(nohup_double_fork);

/// A textbook daemon: fork, setsid, fork again, close stdio.
const DAEMON: &str = r#"
import os, sys, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        for fd in (0, 1, 2):
            os.close(fd)
        while True:
            with open("hb", "a") as f:
                f.write("beat\n")
            time.sleep(0.05)
"#;

fn python_daemon(w: &World, b: Backend) {
    let marker = unique("zcmark");
    let script = format!("{}; {STARTED}", py(DAEMON, std::slice::from_ref(&marker)));
    must_not_survive(w, b, &marker, &script);
}
per_backend!(python_daemon);

/// A detached process that keeps changing its pid (fork, parent exits, child carries on), to
/// slip between the passes of a clean-up that walks the tree. It stops by itself after 20 s,
/// so even an escape leaves nothing behind for long.
const HOPPER: &str = r#"
import os, sys, time
end = time.time() + 20
os.setsid()
while time.time() < end:
    if os.fork() > 0:
        os._exit(0)
    with open("hb", "a") as f:
        f.write("hop\n")
"#;

fn pid_hopping_daemon(w: &World, b: Backend) {
    let marker = unique("zcmark");
    let script = format!(
        "{} >/dev/null 2>&1 </dev/null & {STARTED}",
        py(HOPPER, std::slice::from_ref(&marker))
    );
    must_not_survive(w, b, &marker, &script);
}
per_backend!(pid_hopping_daemon);

/// `--timeout` ends a command that spins, and takes its detached descendants with it.
fn timeout_kills_detached_tree(w: &World, b: Backend) {
    let marker = unique("zcmark");
    let _reaper = Reaper(marker.clone());
    let script = marked(&format!(
        "setsid sh -c '{}' >/dev/null 2>&1 </dev/null & {STARTED}; while :; do :; done",
        heartbeat(&marker)
    ));
    let run = w
        .confined(b)
        .timeout_secs(2)
        .deadline(Duration::from_secs(30))
        .sh(&script);
    run.assert_reached("started");
    assert!(
        !run.timed_out,
        "ESCAPE: --timeout 2 did not end the command\n{run}"
    );
    assert_ne!(
        run.status_code(),
        Some(0),
        "a timed-out command must not report success\n{run}"
    );
    let left = survivors_after_grace(&marker);
    assert!(
        left.is_empty(),
        "ESCAPE: {left:?} outlived the timeout\n{run}"
    );
    let control = w.plain().deadline(Duration::from_secs(3)).sh(&script);
    assert!(
        control.timed_out,
        "positive control failed: the spin ended by itself\n{control}"
    );
    assert!(
        eventually_some(&marker),
        "positive control failed: nothing survived\n{control}"
    );
}
per_backend!(timeout_kills_detached_tree);

fn cpu_spin_past_timeout(w: &World, b: Backend) {
    let marker = unique("zcmark");
    let _reaper = Reaper(marker.clone());
    let script = marked(&format!("while :; do :; done # {marker}"));
    let run = w
        .confined(b)
        .timeout_secs(1)
        .deadline(Duration::from_secs(30))
        .sh(&script);
    run.assert_reached(ATTEMPT);
    assert!(
        !run.timed_out,
        "ESCAPE: --timeout 1 did not end the spin\n{run}"
    );
    assert_ne!(
        run.status_code(),
        Some(0),
        "a timed-out command must not report success\n{run}"
    );
    let left = survivors_after_grace(&marker);
    assert!(
        left.is_empty(),
        "ESCAPE: the spin {left:?} outlived the timeout\n{run}"
    );
    let control = w.plain().deadline(Duration::from_secs(2)).sh(&script);
    assert!(
        control.timed_out,
        "positive control failed: the spin ended by itself\n{control}"
    );
}
per_backend!(cpu_spin_past_timeout);

/// Forks up to `n` children that wait on a pipe; reports how many it made.
const FORKER: &str = r#"
import os, sys
n, made, err = int(sys.argv[1]), 0, None
r, w = os.pipe()
for _ in range(n):
    try:
        pid = os.fork()
    except OSError as e:
        err = e
        break
    if pid == 0:
        os.close(w)
        os.read(r, 1)
        os._exit(0)
    made += 1
os.close(w)
print("forked", made, "error", err, flush=True)
if err is None:
    print("ZC_ESCAPED forked all", flush=True)
while True:
    try:
        os.wait()
    except ChildProcessError:
        break
"#;

/// A fork bomb bounded just past the process limit: it hits the limit, the command ends,
/// nothing is left, and the machine still starts processes.
fn fork_bomb(w: &World, b: Backend) {
    let marker = unique("zcmark");
    let _reaper = Reaper(marker.clone());
    let n = Limits::default().processes + 256;
    let script = py(FORKER, &[n.to_string(), marker.clone()]);
    let run = confined(w, b, defaults, &script);
    assert!(!run.timed_out, "the fork bomb did not end\n{run}");
    assert!(
        run.stdout.contains("forked"),
        "the forker never reported\n{run}"
    );
    assert_not_escaped(&run);
    let left = survivors_after_grace(&marker);
    assert!(
        left.is_empty(),
        "ESCAPE: fork bomb children {left:?} survive\n{run}"
    );
    assert_escaped(&control(w, &script));
}
per_backend!(fork_bomb);

/// The same bounded fork bomb after trying to move itself to the root cgroup of every
/// hierarchy (v1 `pids`, v2 unified): the process limit must still hold.
fn fork_bomb_after_leaving_the_cgroup(w: &World, b: Backend) {
    let marker = unique("zcmark");
    let _reaper = Reaper(marker.clone());
    let n = Limits::default().processes + 256;
    let leave = "for f in /sys/fs/cgroup/pids/cgroup.procs /sys/fs/cgroup/cgroup.procs /sys/fs/cgroup/unified/cgroup.procs; \
                 do echo $$ > $f 2>/dev/null && echo moved to $f; done; cat /proc/self/cgroup";
    let script = format!(
        "{leave}; exec {}",
        py(FORKER, &[n.to_string(), marker.clone()])
    );
    let run = confined(w, b, defaults, &script);
    assert!(
        run.stdout.contains("forked"),
        "the forker never reported\n{run}"
    );
    assert_not_escaped(&run);
    let left = survivors_after_grace(&marker);
    assert!(
        left.is_empty(),
        "ESCAPE: fork bomb children {left:?} survive\n{run}"
    );
    assert_escaped(&control(w, &script));
}
per_backend!(fork_bomb_after_leaving_the_cgroup);

/// Writing past the file-size limit fails; the file stays within it. `dd seek` makes the
/// write sparse, so the control costs no disk.
fn file_size_limit(w: &World, b: Backend) {
    let limit = Limits::default().file_size_bytes;
    let big = w.ws.join("big");
    let script = format!("dd if=/dev/zero of=big bs=1M seek={} count=1", limit >> 20);
    let run = confined(w, b, defaults, &script);
    let len = fs::metadata(&big).map_or(0, |m| m.len());
    assert!(
        len <= limit,
        "ESCAPE: wrote {len} bytes past the {limit}-byte limit\n{run}"
    );
    let _ = fs::remove_file(&big);
    let control = control(w, &script);
    let len = fs::metadata(&big).map_or(0, |m| m.len());
    assert!(
        len > limit,
        "positive control failed: only {len} bytes\n{control}"
    );
    fs::remove_file(&big).expect("remove big");
}
per_backend!(file_size_limit);

/// Maps `argv[1]` bytes of private memory; with `touch`, writes every page.
const ALLOCATOR: &str = r#"
import mmap, sys
size = int(sys.argv[1])
try:
    m = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    if sys.argv[2] == "touch":
        for off in range(0, size, mmap.PAGESIZE):
            m[off] = 1
    print("ZC_ESCAPED allocated", size, flush=True)
except (OSError, MemoryError) as e:
    print("allocation failed:", e, flush=True)
"#;

/// Allocating past the memory limit fails. Confined, the pages are also touched (so a limit
/// enforced on use counts too); the control only maps them, which succeeds without using RAM.
fn memory_limit(w: &World, b: Backend) {
    let size = (Limits::default().memory_bytes + (512 << 20)).to_string();
    let run = confined(
        w,
        b,
        defaults,
        &py(ALLOCATOR, &[size.clone(), "touch".into()]),
    );
    assert_not_escaped(&run);
    assert_escaped(&control(w, &py(ALLOCATOR, &[size, "map".into()])));
}
per_backend!(memory_limit);

/// Memory exhaustion through tmpfs mounts: every tmpfs the child can write
/// (`/tmp`, `$HOME`, `$TMPDIR`, `/dev/shm`) must be smaller than the memory limit, or filling
/// it with files (each under the file-size limit) takes host RAM past it. Disk-backed dirs are
/// not judged here (the workspace has no quota on any backend).
fn tmpfs_bounded(w: &World, b: Backend) {
    let limit = Limits::default().memory_bytes;
    let script = format!(
        "for p in /tmp \"$HOME\" \"$TMPDIR\" /dev/shm; do t=$(stat -f -c %T \"$p\" 2>/dev/null) || continue; \
         s=$(( $(stat -f -c '%b * %S' \"$p\") )); echo \"$p $t $s\"; \
         f=\"$p/.zc-probe-$$\"; ( : > \"$f\" ) 2>/dev/null && rm -f \"$f\" && \\
         [ \"$t\" = tmpfs ] && [ \"$s\" -gt {limit} ] && echo ZC_ESCAPED writable unbounded tmpfs $p; done; true"
    );
    let run = confined(w, b, defaults, &script);
    assert_not_escaped(&run);
    assert_escaped(&control(w, &script));
}
per_backend!(tmpfs_bounded);

/// An output flood on stdout and stderr, each twice the output limit: together they are cut at
/// the limit.
fn output_flood(w: &World, b: Backend) {
    let limit = Limits::default().output_bytes as usize;
    let script = format!(
        "head -c {0} /dev/zero | tr '\\0' x & head -c {0} /dev/zero | tr '\\0' y >&2; wait",
        2 * limit
    );
    let run = confined(w, b, defaults, &script);
    assert!(!run.timed_out, "the flood did not end\n{run}");
    let slack = 64 << 10;
    let total = run.stdout.len() + run.stderr.len();
    assert!(
        total <= limit + slack,
        "ESCAPE: {total} bytes of stdout+stderr passed the {limit}-byte cap\n{run}"
    );
    let control = control(w, &script);
    assert!(
        control.stdout.len() >= 2 * limit && control.stderr.len() >= 2 * limit,
        "positive control failed\n{control}"
    );
}
per_backend!(output_flood);

/// The launcher itself is killed (`signal`) while the command and a detached descendant run:
/// nothing of the tree may survive it.
fn launcher_killed(w: &World, b: Backend, signal: &str) {
    let marker = unique("zcmark");
    let _reaper = Reaper(marker.clone());
    let script = marked(&format!(
        "setsid sh -c '{}' >/dev/null 2>&1 </dev/null & {STARTED}; while :; do sleep 0.1; done # {marker}",
        heartbeat(&marker)
    ));
    let mut launcher = w.confined(b).spawn_sh(&script);
    let lines: Vec<String> = (0..2).map(|_| launcher.read_line()).collect();
    assert!(
        lines.iter().any(|l| l.contains("started")),
        "never started: {lines:?}"
    );
    assert!(
        eventually_some(&marker),
        "the confined tree is not visible from outside"
    );
    launcher.signal(signal);
    let status = launcher.wait_for_exit(Duration::from_secs(15));
    let left = survivors_after_grace(&marker);
    assert!(
        left.is_empty(),
        "ESCAPE: {left:?} survived SIG{signal} of the launcher (exit {status:?})"
    );
    let _ = fs::remove_file(w.ws.join("hb"));
    let mut plain = w.plain().spawn_sh(&script);
    let _ = (plain.read_line(), plain.read_line());
    plain.signal(signal);
    let _ = plain.wait_for_exit(Duration::from_secs(15));
    assert!(
        eventually_some(&marker),
        "positive control failed: nothing survived"
    );
}

fn launcher_sigkilled(w: &World, b: Backend) {
    launcher_killed(w, b, "KILL");
}
per_backend!(launcher_sigkilled);

fn launcher_sigterminated(w: &World, b: Backend) {
    launcher_killed(w, b, "TERM");
}
per_backend!(launcher_sigterminated);

/// Kills its grandparent and parent (the sandbox's launcher, supervisor or reaper), then leaves
/// a detached heartbeat behind: the launcher must survive, and so must nothing else.
const KILL_SUPERVISORS: &str = "pp=$PPID; gp=$(awk '{print $4}' /proc/$pp/stat); \
    [ \"$gp\" -gt 1 ] && kill -9 $gp; [ \"$pp\" -gt 1 ] && kill -9 $pp; echo killed $pp $gp";

fn survive_by_killing_the_supervisor(w: &World, b: Backend) {
    if selftest() {
        eprintln!(
            "SKIP under ZC_ESCAPE_SELFTEST: unconfined, the script would signal the test itself"
        );
        return;
    }
    let marker = unique("zcmark");
    let _reaper = Reaper(marker.clone());
    let script = format!(
        "echo {ATTEMPT}; setsid sh -c '{}' >/dev/null 2>&1 </dev/null & {STARTED}; {KILL_SUPERVISORS}; echo done",
        heartbeat(&marker)
    );
    w.write(&w.ws.join("c.sh"), &script);
    let run = w.confined(b).run(&["/bin/sh", "./c.sh"]);
    run.assert_reached("started");
    assert_eq!(
        run.status.signal(),
        None,
        "ESCAPE: the child killed its launcher\n{run}"
    );
    let left = survivors_after_grace(&marker);
    assert!(
        left.is_empty(),
        "ESCAPE: {left:?} outlived the command after its supervisor was killed\n{run}"
    );
    // Control: two throw-away shells stand in for supervisor and launcher (never the test).
    let _ = fs::remove_file(w.ws.join("hb"));
    w.write(&w.ws.join("b.sh"), "/bin/sh ./c.sh; echo b-done\n");
    w.write(&w.ws.join("a.sh"), "/bin/sh ./b.sh; echo a-done\n");
    let control = w.plain().run(&["/bin/sh", "./a.sh"]);
    assert_eq!(
        control.status.signal(),
        Some(9),
        "positive control failed: the launcher stand-in lives\n{control}"
    );
    assert!(
        eventually_some(&marker),
        "positive control failed: nothing survived\n{control}"
    );
}
per_backend!(survive_by_killing_the_supervisor);

fn launcher_siginterrupted(w: &World, b: Backend) {
    launcher_killed(w, b, "INT");
}
per_backend!(launcher_siginterrupted);

/// Every catchable signal, then SIGKILL, sent to the command's supervisor (the helper, pid 1
/// of the namespace or the reaper): whatever the helper does on a signal, the tree must end
/// with the command's launcher, and nothing may be left running.
fn signal_the_supervisor(w: &World, b: Backend) {
    if selftest() {
        eprintln!(
            "SKIP under ZC_ESCAPE_SELFTEST: unconfined, the script would signal the test itself"
        );
        return;
    }
    let marker = unique("zcmark");
    let _reaper = Reaper(marker.clone());
    let script = format!(
        "echo {ATTEMPT}; setsid sh -c '{}' >/dev/null 2>&1 </dev/null & {STARTED}; \
         for s in TERM INT HUP USR1 USR2 QUIT ALRM PIPE KILL; do kill -s $s $PPID; done; \
         sleep 1; echo done # {marker}",
        heartbeat(&marker)
    );
    w.write(&w.ws.join("c.sh"), &script);
    let run = w
        .confined(b)
        .deadline(Duration::from_secs(30))
        .run(&["/bin/sh", "./c.sh"]);
    run.assert_reached("started");
    assert!(
        !run.timed_out,
        "the launcher hung after its helper was signalled\n{run}"
    );
    let left = survivors_after_grace(&marker);
    assert!(
        left.is_empty(),
        "ESCAPE: {left:?} outlived the command after its supervisor was signalled\n{run}"
    );
    let _ = fs::remove_file(w.ws.join("hb"));
    w.write(&w.ws.join("b.sh"), "/bin/sh ./c.sh; echo b-done\n");
    let control = w.plain().run(&["/bin/sh", "./b.sh"]);
    assert!(
        eventually_some(&marker),
        "positive control failed: nothing survived\n{control}"
    );
}
per_backend!(signal_the_supervisor);
