//! Escape suite, kernel surface and the host's shared kernel objects: system calls no tool
//! needs (`modify_ldt`, `kcmp`, `get_mempolicy`; x86_64 numbers), POSIX ACLs set through `setxattr`, other processes'
//! rlimits and scheduling, the host's SysV IPC objects, and the per-user inotify count the
//! child's user namespace charges to the host's.
//!
//! Every attack runs on every Linux backend, confined first and judged from outside where
//! the kernel lets an observer see it, then unconfined as its positive control.

use crate::sandbox_support;

use std::fs;
use std::process::Command;

use sandbox_support::judge::{assert_not_escaped, confined, control, defaults, marked};
use sandbox_support::procs::Bg;
use sandbox_support::world::q;
use sandbox_support::{ATTEMPT, Backend, PYTHON, World};

/// A shell fragment running the Python `src` with `args`.
fn py(src: &str, args: &[String]) -> String {
    let quoted = src.replace('\'', r"'\''");
    format!("{PYTHON} -c '{quoted}' {}", args.join(" "))
}

#[cfg(target_arch = "x86_64")]
/// Raw system calls through ctypes; argv[1] names which. Prints `ZC_ESCAPED` when it worked.
const SURFACE: &str = r#"
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
L = ctypes.c_long
what = sys.argv[1]
buf = ctypes.create_string_buffer(64)
if what == "modify_ldt":
    ret = libc.syscall(L(154), L(0), buf, L(64))
elif what == "kcmp":
    ret = libc.syscall(L(312), L(os.getpid()), L(os.getpid()), L(0), L(0), L(0))
elif what == "get_mempolicy":
    ret = libc.syscall(L(239), L(0), L(0), L(0), L(0), L(0))
print(f"{what} ret={ret} errno={ctypes.get_errno()}", flush=True)
if ret >= 0:
    print("ZC_ESCAPED", what, flush=True)
"#;

#[cfg(target_arch = "x86_64")]
/// A raw syscall must be refused with EPERM (the filter), not merely mis-called.
fn refused(w: &World, b: Backend, syscall: &str) {
    let script = py(SURFACE, &[syscall.to_owned()]);
    let run = confined(w, b, defaults, &script);
    assert_not_escaped(&run);
    assert!(
        run.stdout.contains("ret=-1 errno=1\n"),
        "{syscall} failed for another reason than the filter\n{run}"
    );
    sandbox_support::judge::assert_escaped(&control(w, &script));
}

/// `modify_ldt` (x86 segment descriptors: a classic kernel exploitation aid).
#[cfg(target_arch = "x86_64")]
fn modify_ldt(w: &World, b: Backend) {
    refused(w, b, "modify_ldt");
}
#[cfg(target_arch = "x86_64")]
per_backend!(modify_ldt);

/// `kcmp` compares kernel objects of two processes (a kernel-address oracle).
#[cfg(target_arch = "x86_64")]
fn kcmp(w: &World, b: Backend) {
    refused(w, b, "kcmp");
}
#[cfg(target_arch = "x86_64")]
per_backend!(kcmp);

/// `get_mempolicy`, the NUMA policy calls (Docker's profile too allows them only with
/// CAP_SYS_NICE).
#[cfg(target_arch = "x86_64")]
fn get_mempolicy(w: &World, b: Backend) {
    refused(w, b, "get_mempolicy");
}
#[cfg(target_arch = "x86_64")]
per_backend!(get_mempolicy);

/// An access ACL (`nobody` may write) on an outside, read-only file: through `setxattr` the
/// Landlock-only rung's `chmod` supervision would be bypassed. Judged by the file's
/// attributes from outside.
fn posix_acl_on_outside_file(w: &World, b: Backend) {
    let target = w.outside.join("target.txt");
    // Version 2; USER_OBJ rw, USER nobody rw, GROUP_OBJ r, MASK rw, OTHER r.
    let acl =
        "0200000001000600ffffffff02000600feff000004000400ffffffff10000600ffffffff20000400ffffffff";
    let src = format!(
        "import os, sys\nos.setxattr(sys.argv[1], \"system.posix_acl_access\", bytes.fromhex(\"{acl}\"))\nprint(\"ZC_ESCAPED acl\")"
    );
    let script = py(&src, &[q(&target)]);
    let run = w.confined(b).allow_read(&w.outside).sh(&marked(&script));
    run.assert_reached(ATTEMPT);
    assert_not_escaped(&run);
    assert!(
        !has_xattr(&target, "system.posix_acl_access"),
        "ESCAPE: the outside file got an ACL\n{run}"
    );
    let control = control(w, &script);
    assert!(
        has_xattr(&target, "system.posix_acl_access"),
        "positive control failed: no ACL set unconfined\n{control}"
    );
}
per_backend!(posix_acl_on_outside_file);

/// Whether `path` carries the extended attribute `name` (read from outside).
fn has_xattr(path: &std::path::Path, name: &str) -> bool {
    let out = Command::new(PYTHON)
        .args([
            "-c",
            "import os, sys; print(sys.argv[2] in os.listxattr(sys.argv[1]))",
        ])
        .arg(path)
        .arg(name)
        .output()
        .expect("python3 listxattr");
    String::from_utf8_lossy(&out.stdout).trim() == "True"
}

/// What an outside observer sees of a process's CPU limit, nice value and CPU affinity.
fn process_state(pid: u32) -> (String, String, String) {
    let limits = fs::read_to_string(format!("/proc/{pid}/limits")).expect("limits");
    let cpu = limits
        .lines()
        .find(|l| l.starts_with("Max cpu time"))
        .unwrap_or_default()
        .to_owned();
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    let after_comm = stat.rsplit_once(") ").map_or("", |(_, rest)| rest);
    let nice = after_comm.split(' ').nth(16).unwrap_or_default().to_owned();
    let status = fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    let cpus = status
        .lines()
        .find(|l| l.starts_with("Cpus_allowed_list"))
        .unwrap_or_default()
        .to_owned();
    (cpu, nice, cpus)
}

/// Another same-uid process's CPU limit (lowering it is a SIGKILL without a signal), its
/// priority and its CPU affinity, changed through prlimit64, setpriority and
/// sched_setaffinity (a user-wide setpriority is left to the filter's unit test: unconfined
/// it would renice every process of this uid). Judged from outside on an outside sleeper.
fn other_process_limits_and_scheduling(w: &World, b: Backend) {
    let sleeper = Bg::sleeper();
    let pid = sleeper.pid();
    let src = "import os, resource, sys\npid = int(sys.argv[1])\n\
        def attempt(name, f):\n    try:\n        f(); print(\"ZC_ESCAPED\", name)\n    except OSError as e:\n        print(name, e)\n\
        attempt(\"prlimit\", lambda: resource.prlimit(pid, resource.RLIMIT_CPU, (100, 100)))\n\
        attempt(\"setpriority\", lambda: os.setpriority(os.PRIO_PROCESS, pid, 7))\n\
        attempt(\"affinity\", lambda: os.sched_setaffinity(pid, {0}))\n";
    let script = py(src, &[pid.to_string()]);
    let before = process_state(pid);
    let run = confined(w, b, defaults, &script);
    assert_not_escaped(&run);
    assert_eq!(
        process_state(pid),
        before,
        "ESCAPE: the confined child changed an outside process\n{run}"
    );
    let control = control(w, &script);
    assert_ne!(
        process_state(pid),
        before,
        "positive control failed: the outside process is unchanged\n{control}"
    );
}
per_backend!(other_process_limits_and_scheduling);

/// The host's SysV shared memory: a segment made outside, removed (`ipcrm`, which needs only
/// the owner's uid) from inside. Judged by `ipcs` from outside.
fn host_sysv_ipc(w: &World, b: Backend) {
    let out = Command::new("ipcmk")
        .args(["-M", "4096"])
        .output()
        .expect("ipcmk");
    let text = String::from_utf8_lossy(&out.stdout);
    let id: String = text
        .split_whitespace()
        .last()
        .unwrap_or_default()
        .chars()
        .filter(char::is_ascii_digit)
        .collect();
    assert!(!id.is_empty(), "ipcmk said {text:?}");
    let exists = || {
        let out = Command::new("ipcs").arg("-m").output().expect("ipcs");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .any(|l| l.split_whitespace().nth(1) == Some(id.as_str()))
    };
    let script = format!("ipcrm -m {id} && echo ZC_ESCAPED ipcrm");
    let run = confined(w, b, defaults, &script);
    let still = exists();
    if !still {
        let _ = Command::new("ipcrm").args(["-m", &id]).status();
    }
    assert_not_escaped(&run);
    assert!(still, "ESCAPE: the host's segment {id} is gone\n{run}");
    let control = control(w, &script);
    let gone = !exists();
    if !gone {
        let _ = Command::new("ipcrm").args(["-m", &id]).status();
    }
    assert!(
        gone,
        "positive control failed: segment {id} kept\n{control}"
    );
}
per_backend!(host_sysv_ipc);

/// The host's inotify instance limit (`/proc/sys/user/max_inotify_instances`).
fn host_inotify_limit() -> u64 {
    fs::read_to_string("/proc/sys/user/max_inotify_instances")
        .expect("max_inotify_instances")
        .trim()
        .parse()
        .expect("a number")
}

/// Opens up to argv[1] inotify instances and holds them; prints the count and the limit it
/// sees, then `HOLDING`, and waits for stdin to close... or 20 s.
const INOTIFY: &str = r#"
import ctypes, sys, time
libc = ctypes.CDLL(None, use_errno=True)
want = int(sys.argv[1])
fds = []
while len(fds) < want:
    fd = libc.inotify_init1(0)
    if fd < 0:
        break
    fds.append(fd)
try:
    limit = open("/proc/sys/user/max_inotify_instances").read().strip()
except OSError as e:
    limit = str(e)
print(f"count={len(fds)} limit={limit} errno={ctypes.get_errno()}", flush=True)
print("HOLDING", flush=True)
time.sleep(float(sys.argv[2]))
"#;

/// Whether this process (the host side, same uid) can still make an inotify instance.
fn host_can_inotify() -> bool {
    let out = Command::new(PYTHON)
        .args([
            "-c",
            "import ctypes; print(ctypes.CDLL(None).inotify_init1(0) >= 0)",
        ])
        .output()
        .expect("python3 inotify");
    String::from_utf8_lossy(&out.stdout).trim() == "True"
}

/// The count a line `count=N limit=M ...` reports.
fn field(line: &str, name: &str) -> Option<u64> {
    line.split_whitespace()
        .find_map(|f| f.strip_prefix(name)?.strip_prefix('='))?
        .parse()
        .ok()
}

/// While the child tries to hold more inotify instances than the host allows its uid, the
/// host (this test, same uid) can still make one: the child's own limit is a quarter of the
/// host's and its count stops there. The control shows an unconfined child going past that
/// quarter (it stops short of the host's limit, so as not to starve this machine's other
/// processes of the same uid).
fn inotify_instances_bounded(w: &World, b: Backend) {
    let host = host_inotify_limit();
    let quarter = (host / 4).max(1);
    let want = host + 72;
    let script = marked(&py(INOTIFY, &[want.to_string(), "5".into()]));
    let mut bg = w.confined(b).spawn_sh(&script);
    let mut report = String::new();
    loop {
        let line = bg.read_line();
        if line.is_empty() || line.starts_with("HOLDING") {
            break;
        }
        report.push_str(&line);
    }
    let host_ok = host_can_inotify();
    drop(bg);
    let line = report
        .lines()
        .find(|l| l.starts_with("count="))
        .unwrap_or("");
    let count = field(line, "count").unwrap_or_else(|| panic!("no count in {report:?}"));
    assert!(
        count <= quarter,
        "ESCAPE: the confined child holds {count} inotify instances (host limit {host})\n{report}"
    );
    assert_eq!(
        field(line, "limit"),
        Some(quarter),
        "the child's own limit is not a quarter of the host's\n{report}"
    );
    assert!(
        host_ok,
        "ESCAPE: the host's uid got no inotify instance\n{report}"
    );
    let control = control(w, &py(INOTIFY, &[(quarter + 8).to_string(), "0".into()]));
    let line = control.stdout.lines().find(|l| l.starts_with("count="));
    assert_eq!(
        line.and_then(|l| field(l, "count")),
        Some(quarter + 8),
        "positive control failed: unconfined stayed within the quarter\n{control}"
    );
}
per_backend!(
    inotify_instances_bounded,
    landlock: "reduced rung (chosen only by name): no user namespace, inotify instances are charged to the host's uid directly (doctor lists it)"
);

/// Prints the soft and hard message-queue and pending-signal limits.
const PER_USER_RLIMITS: &str = "import resource as r\n\
    for n in (\"RLIMIT_MSGQUEUE\", \"RLIMIT_SIGPENDING\"):\n    print(n, *r.getrlimit(getattr(r, n)))";

/// `name soft hard` lines of [`PER_USER_RLIMITS`] as (name, soft, hard).
fn rlimits(text: &str) -> Vec<(String, u64, u64)> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let name = f.next()?.strip_prefix("RLIMIT_")?.to_owned();
            Some((name, f.next()?.parse().ok()?, f.next()?.parse().ok()?))
        })
        .collect()
}

/// Message-queue bytes and queued signals are counted per user up to the host's uid: the
/// child gets a quarter of the launcher's limits (this test's, which it inherits), so it
/// cannot take them all; the control keeps the whole.
fn per_user_rlimits_quartered(w: &World, b: Backend) {
    let script = py(PER_USER_RLIMITS, &[]);
    let run = confined(w, b, defaults, &script);
    let control = control(w, &script);
    let (inside, outside) = (rlimits(&run.stdout), rlimits(&control.stdout));
    assert_eq!(
        outside.len(),
        2,
        "positive control printed no limits\n{control}"
    );
    assert_eq!(
        inside.len(),
        2,
        "the confined child printed no limits\n{run}"
    );
    for ((name, soft, hard), (_, host_soft, host_hard)) in inside.iter().zip(&outside) {
        let quarter = host_soft.min(host_hard) / 4;
        assert!(
            *soft <= quarter && *hard <= quarter,
            "ESCAPE: the child's {name} is {soft}/{hard}, the host's {host_soft}/{host_hard}\n{run}"
        );
        assert!(
            *host_soft > quarter,
            "positive control failed: the host's {name} is already small\n{control}"
        );
    }
}
per_backend!(per_user_rlimits_quartered);

/// The same classes as `nobody` (switched to with setpriv, which needs root): the per-user
/// counts of an unprivileged uid are bounded alike (inotify: not on the Landlock-only rung,
/// which has no user namespace), and the kernel surface is refused alike. The control runs
/// as `nobody` unconfined.
fn per_user_counts_and_surface_as_nobody(w: &World, b: Backend) {
    let Some(ws) = w.nobody_workspace("per_user_counts_and_surface_as_nobody") else {
        return;
    };
    let quarter = (host_inotify_limit() / 4).max(1);
    let mut script = vec![py(INOTIFY, &[(quarter + 8).to_string(), "0".into()])];
    script.push(py(PER_USER_RLIMITS, &[]));
    #[cfg(target_arch = "x86_64")]
    script.push(py(SURFACE, &["modify_ldt".into()]));
    let script = marked(&script.join("; "));
    let cmd = ["/bin/sh", "-c", script.as_str()];
    let as_nobody = |argv: Vec<std::ffi::OsString>| sandbox_support::run::as_nobody(&ws, argv);
    let run = as_nobody(w.confined(b).workspace(&ws).argv(&cmd));
    let control = as_nobody(cmd.iter().map(std::ffi::OsString::from).collect());
    run.assert_reached(ATTEMPT);
    control.assert_reached(ATTEMPT);
    let count = |r: &sandbox_support::run::Run| {
        let line = r.stdout.lines().find(|l| l.starts_with("count="));
        line.and_then(|l| field(l, "count"))
    };
    if b.has_namespaces() {
        let held = count(&run).unwrap_or_else(|| panic!("no count\n{run}"));
        assert!(
            held <= quarter,
            "ESCAPE: nobody's confined child holds {held} inotify instances\n{run}"
        );
    }
    assert_eq!(
        count(&control),
        Some(quarter + 8),
        "positive control failed: nobody unconfined stayed within the quarter\n{control}"
    );
    let (inside, outside) = (rlimits(&run.stdout), rlimits(&control.stdout));
    assert_eq!(inside.len(), 2, "no limits printed\n{run}");
    for ((name, soft, _), (_, host, _)) in inside.iter().zip(&outside) {
        assert!(
            *soft <= host / 4,
            "ESCAPE: nobody's {name} is {soft} of {host}\n{run}"
        );
    }
    #[cfg(target_arch = "x86_64")]
    {
        assert_not_escaped(&run);
        assert!(run.stdout.contains("modify_ldt ret=-1 errno=1\n"), "{run}");
        sandbox_support::judge::assert_escaped(&control);
    }
}
per_backend!(per_user_counts_and_surface_as_nobody);

/// Holds a pty made outside and prints its slave's path.
const OUTSIDE_PTY: &str =
    "import os, time\nm, s = os.openpty()\nprint(os.ttyname(s), flush=True)\ntime.sleep(120)";

/// Another session's terminal: a pty made outside (as a login shell's would be) must not be
/// opened from inside (its input could be read, its output forged). On the Landlock-only rung
/// only `/dev/ptmx` is granted, the slaves of the child's own ptys come from the helper.
fn outside_pty(w: &World, b: Backend) {
    let mut holder = Bg::spawn(&[PYTHON, "-c", OUTSIDE_PTY], &[]);
    let slave = holder.read_line().trim().to_owned();
    assert!(slave.starts_with("/dev/pts/"), "holder said {slave:?}");
    let src = "import os, sys\nfd = os.open(sys.argv[1], os.O_RDWR | os.O_NOCTTY)\nprint(\"ZC_ESCAPED opened\", fd)";
    let script = py(src, &[slave]);
    let run = confined(w, b, defaults, &script);
    assert_not_escaped(&run);
    sandbox_support::judge::assert_escaped(&control(w, &script));
}
per_backend!(outside_pty);

/// The extended attributes of a denied file (Landlock does not cover reading them): a
/// `user.` attribute holding the canary on the fake home's SSH key, read with getxattr and
/// listxattr from inside.
fn denied_file_xattrs(w: &World, b: Backend) {
    let key = w.home.join(".ssh/id_ed25519");
    let secret = w.secret("xattr");
    let set = Command::new(PYTHON)
        .args([
            "-c",
            "import os, sys; os.setxattr(sys.argv[1], \"user.zc\", sys.argv[2].encode())",
        ])
        .arg(&key)
        .arg(&secret)
        .status()
        .expect("python3 setxattr");
    assert!(
        set.success(),
        "could not set a user attribute on {}",
        key.display()
    );
    let src = "import os, sys\nfor f in (os.getxattr, ):\n    try: print(f(sys.argv[1], \"user.zc\").decode())\n    except OSError as e: print(e)\ntry: print(os.listxattr(sys.argv[1]))\nexcept OSError as e: print(e)";
    let script = py(src, &[q(&key)]);
    sandbox_support::judge::no_secret(w, b, defaults, &script);
}
per_backend!(denied_file_xattrs);
