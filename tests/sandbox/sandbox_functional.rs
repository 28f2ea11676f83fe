//! Real work still runs under confinement, on every Linux backend: the shell and coreutils,
//! git, Python, a C compiler, an offline cargo build with the machine's rustup toolchain, a
//! private `/tmp`, the workspace, extra roots, network when allowed, and exit codes.
//!
//! Each test runs the real `zeroclaw sandbox run` with the CLI defaults (plus the flag under
//! test) and asserts what a user would see.

use crate::sandbox_support;

use std::fs;
use std::net::TcpListener;
use std::path::PathBuf;

use sandbox_support::run::Run;
use sandbox_support::world::{Snapshot, q, unique};
use sandbox_support::{Backend, PYTHON, World};

/// Asserts the run exited 0 and printed `expected` on stdout.
fn assert_ok(run: &Run, expected: &str) {
    assert_eq!(
        run.status_code(),
        Some(0),
        "the confined command failed\n{run}"
    );
    assert!(
        run.stdout.contains(expected),
        "expected {expected:?} on stdout\n{run}"
    );
}

fn real_home() -> PathBuf {
    PathBuf::from(std::env::var_os("HOME").expect("HOME is set for the tests"))
}

fn shell_and_coreutils(w: &World, b: Backend) {
    w.write(&w.ws.join("input.txt"), "pear\napple\nfig\n");
    let script = "set -e; sort input.txt | head -n1; mkdir -p a/b; echo x > a/b/c; ls -R a | wc -l; \
                  sed 's/pear/PEAR/' input.txt | grep -c PEAR; cp input.txt copy.txt; mv copy.txt moved.txt; \
                  rm moved.txt; printf '%s\\n' \"$(pwd)\"; uname -s; echo done";
    let run = w.confined(b).sh(script);
    assert_ok(&run, "apple\n");
    assert_ok(&run, &format!("{}\n", w.ws.display()));
    assert_ok(&run, "Linux\ndone");
    assert_eq!(
        fs::read_to_string(w.ws.join("a/b/c")).expect("a/b/c"),
        "x\n",
        "{run}"
    );
}
per_backend!(shell_and_coreutils);

/// Mode and time changes in the workspace and TMPDIR (supervised on the Landlock-only rung):
/// `chmod +x` and running the script, `touch -d`, `cp -p`, `cp -a` and `tar x` (restoring the
/// owner, as root), `fchmod` and `futimens` on a descriptor, `chmod` through a directory
/// descriptor, in TMPDIR too.
fn workspace_modes_and_times(w: &World, b: Backend) {
    let py_fd = r#"import os; fd = os.open("f.txt", os.O_RDONLY); os.fchmod(fd, 0o640); os.utime(fd, (7, 7)); d = os.open(".", os.O_PATH); os.chmod("g.txt", 0o604, dir_fd=d); print("py", oct(os.stat("f.txt").st_mode & 0o777), int(os.stat("f.txt").st_mtime), oct(os.stat("g.txt").st_mode & 0o777))"#;
    let script = format!(
        "set -e; printf '#!/bin/sh\\necho script-ran\\n' > s.sh; chmod +x s.sh; ./s.sh; \
         touch -d 2001-02-03 s.sh; date -r s.sh +%Y; mkdir d; cp -p s.sh d/; date -r d/s.sh +%Y; \
         tar cf t.tar d; mkdir x; tar xf t.tar -C x; cp -a d y; test -x x/d/s.sh; date -r x/d/s.sh +%Y; \
         echo a > f.txt; echo b > g.txt; {PYTHON} -c '{py_fd}'; \
         t=$(mktemp); chmod 600 \"$t\"; touch -d 2002-01-01 \"$t\"; date -r \"$t\" +%Y; echo done"
    );
    let run = w.confined(b).sh(&script);
    assert_ok(
        &run,
        "script-ran\n2001\n2001\n2001\npy 0o640 7 0o604\n2002\ndone",
    );
    let meta = fs::metadata(w.ws.join("s.sh")).expect("s.sh");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(meta.permissions().mode() & 0o111, 0o111, "{run}");
}
per_backend!(workspace_modes_and_times);

const GIT_IDENTITY: &str = "-c user.name=zc -c user.email=zc@example.invalid";

/// `git init`, `add` and `commit`, all confined, in a fresh project directory of the
/// workspace (`git init` at the workspace root is refused: its `.git/config` is protected).
fn git_init_add_commit(w: &World, b: Backend) {
    let script = format!(
        "set -e; mkdir proj; cd proj; git init -q; echo hi > f.txt; git add f.txt; git {GIT_IDENTITY} commit -qm first; git log --oneline"
    );
    let run = w.confined(b).sh(&script);
    assert_ok(&run, "first");
    let host = w.plain().sh("cd proj && git log --oneline");
    assert!(
        host.stdout.contains("first"),
        "the commit did not reach the host\n{run}\n{host}"
    );
}
per_backend!(git_init_add_commit);

/// A repository that existed before the session: add, commit, branch, status, diff.
fn git_work_in_existing_repo(w: &World, b: Backend) {
    let init = w
        .plain()
        .sh("git init -q && git config user.name zc && git config user.email zc@example.invalid");
    assert_eq!(init.status_code(), Some(0), "{init}");
    let config = Snapshot::of(&w.ws.join(".git/config"));
    let script = "set -e; echo one > a.txt; git add a.txt; git commit -qm one; git checkout -qb topic; \
                  echo two >> a.txt; git diff --stat; git commit -qam two; git log --oneline | wc -l; git status --short";
    let run = w.confined(b).sh(script);
    assert_ok(&run, "2\n");
    assert_eq!(config, Snapshot::of(&w.ws.join(".git/config")), "{run}");
    let host = w.plain().sh("git log --oneline topic | wc -l");
    assert_eq!(
        host.stdout.trim(),
        "2",
        "the commits did not reach the host\n{run}\n{host}"
    );
}
per_backend!(git_work_in_existing_repo);

/// A workspace that is a git worktree or submodule checkout: its `.git` is a file.
fn workspace_with_git_file(w: &World, b: Backend) {
    w.write(
        &w.ws.join(".git"),
        &format!("gitdir: {}\n", w.outside.join("repo.git").display()),
    );
    assert_ok(&w.confined(b).sh("echo works"), "works\n");
}
per_backend!(workspace_with_git_file);

fn python3(w: &World, b: Backend) {
    let script = format!(
        "{PYTHON} -c 'import json, sqlite3, hashlib; print(json.dumps({{\"sum\": sum(range(10))}}))'"
    );
    assert_ok(&w.confined(b).sh(&script), "{\"sum\": 45}");
}
per_backend!(python3);

fn python3_from_path(w: &World, b: Backend) {
    assert_ok(
        &w.confined(b).real_home().sh("python3 -c 'print(6 * 7)'"),
        "42\n",
    );
}
per_backend!(python3_from_path);

/// Local IPC still works with the network denied: a Unix socket pair and a pipe.
fn unix_socketpair_and_pipes(w: &World, b: Backend) {
    let script = format!(
        "{PYTHON} -c 'import os, socket; a, b = socket.socketpair(); a.send(b\"pair\"); r, w = os.pipe(); os.write(w, b\"pipe\"); print(b.recv(4).decode(), os.read(r, 4).decode())'"
    );
    assert_ok(&w.confined(b).sh(&script), "pair pipe\n");
}
per_backend!(unix_socketpair_and_pipes);

fn c_compiler(w: &World, b: Backend) {
    w.write(
        &w.ws.join("hello.c"),
        "#include <stdio.h>\nint main(void) { printf(\"hello %d\\n\", 6 * 7); return 0; }\n",
    );
    assert_ok(
        &w.confined(b).sh("cc -O1 -o hello hello.c && ./hello"),
        "hello 42\n",
    );
}
per_backend!(c_compiler);

/// A crate without dependencies, built offline with the machine's rustup toolchain; cargo's
/// own home is in the workspace, the toolchain comes read-only from `~/.rustup`.
fn cargo_build_offline(w: &World, b: Backend) {
    let home = real_home();
    w.write(
        &w.ws.join("tiny/Cargo.toml"),
        "[package]\nname = \"tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    );
    w.write(
        &w.ws.join("tiny/src/main.rs"),
        "fn main() { println!(\"tiny {}\", 6 * 7); }\n",
    );
    let script = format!(
        "set -e; cd tiny; export RUSTUP_HOME={} CARGO_HOME=\"$PWD/../.cargo-home\"; {} build --offline -q; ./target/debug/tiny",
        q(&home.join(".rustup")),
        q(&home.join(".cargo/bin/cargo"))
    );
    let run = w
        .confined(b)
        .real_home()
        .deadline(std::time::Duration::from_secs(300))
        .sh(&script);
    assert_ok(&run, "tiny 42\n");
}
per_backend!(cargo_build_offline);

/// `/tmp` is writable and private: the file is not in the host's `/tmp` afterwards.
fn private_tmp(w: &World, b: Backend) {
    let name = unique("zc-private-tmp-");
    let script = format!(
        "echo kept > /tmp/{name}; cat /tmp/{name}; t=$(mktemp); echo ok > \"$t\"; cat \"$t\""
    );
    let run = w.confined(b).sh(&script);
    assert_ok(&run, "kept\nok\n");
    assert!(
        !PathBuf::from("/tmp").join(&name).exists(),
        "the child's /tmp is the host's\n{run}"
    );
}
per_backend!(
    private_tmp,
    landlock: "reduced rung (chosen only by name): no private /tmp without a mount namespace (only a private TMPDIR)"
);

fn exit_code_passthrough(w: &World, b: Backend) {
    let run = w.confined(b).sh("exit 42");
    assert_eq!(run.status_code(), Some(42), "{run}");
    let run = w.confined(b).sh("kill -9 $$");
    assert_eq!(
        run.status_code(),
        Some(128 + 9),
        "signal death is 128+signo\n{run}"
    );
}
per_backend!(exit_code_passthrough);

fn stdout_and_stderr_apart(w: &World, b: Backend) {
    let run = w.confined(b).sh("echo to-out; echo to-err >&2");
    assert_ok(&run, "to-out");
    assert!(
        run.stderr.contains("to-err") && !run.stdout.contains("to-err"),
        "{run}"
    );
}
per_backend!(stdout_and_stderr_apart);

fn extra_read_and_write_roots(w: &World, b: Backend) {
    let out = w.outside.join("dir");
    let script = format!(
        "cat {}; echo written > {}/new.txt",
        q(&w.ro.join("ro.txt")),
        q(&out)
    );
    let run = w
        .confined(b)
        .allow_read(&w.ro)
        .allow_write(&out)
        .sh(&script);
    assert_ok(&run, &w.secret("ro"));
    assert_eq!(
        fs::read_to_string(out.join("new.txt")).ok().as_deref(),
        Some("written\n"),
        "{run}"
    );
}
per_backend!(extra_read_and_write_roots);

/// `--network allow` reaches a loopback listener of the host.
fn network_allowed(w: &World, b: Backend) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let script = format!(
        "{PYTHON} -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), timeout=5).sendall(b\"hi\"); print(\"sent\")'"
    );
    let run = w.confined(b).network_allow().sh(&script);
    assert_ok(&run, "sent");
    listener.set_nonblocking(true).expect("nonblocking");
    assert!(
        listener.accept().is_ok(),
        "the listener got no connection\n{run}"
    );
}
per_backend!(network_allowed);

/// A Unix socket served inside the workspace, reached by path (relative and absolute), and a
/// socket pair.
const UNIX_IN_WORKSPACE: &str = r#"
import os, socket
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind("srv.sock"); srv.listen(4)
for target in ("srv.sock", os.path.abspath("srv.sock")):
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    c.connect(target); c.sendall(b"ping")
    conn, _ = srv.accept()
    print("got", conn.recv(4).decode(), flush=True)
    conn.close(); c.close()
a, b = socket.socketpair()
a.sendall(b"pair"); print("pair", b.recv(4).decode(), flush=True)
"#;

/// With the network allowed, a Unix socket served inside the workspace is reachable
/// (supervised on the Landlock-only rung).
fn unix_socket_in_workspace_with_network_allowed(w: &World, b: Backend) {
    let quoted = UNIX_IN_WORKSPACE.replace('\'', r"'\''");
    let run = w
        .confined(b)
        .network_allow()
        .sh(&format!("{PYTHON} -c '{quoted}'"));
    assert_ok(&run, "got ping\ngot ping\npair pair\n");
}
per_backend!(unix_socket_in_workspace_with_network_allowed);

/// With the network denied too (the Landlock-only rung allows Unix sockets then, and its
/// supervisor connects only pathname ones inside the writable roots).
fn unix_socket_in_workspace_with_network_denied(w: &World, b: Backend) {
    let quoted = UNIX_IN_WORKSPACE.replace('\'', r"'\''");
    let run = w.confined(b).sh(&format!("{PYTHON} -c '{quoted}'"));
    assert_ok(&run, "got ping\ngot ping\npair pair\n");
}
per_backend!(unix_socket_in_workspace_with_network_denied);

/// A pipeline whose reader stops early ends quietly: the command starts with SIGPIPE at its
/// default action. (Rust programs ignore SIGPIPE, and an ignored signal survives `execve`, so
/// a helper written in Rust must reset it.)
fn sigpipe_has_its_default_action(w: &World, b: Backend) {
    let run = w
        .confined(b)
        // The shell's own status (the command the helper started): on the Landlock-only rung
        // only the command's /proc/<pid> is readable, not its descendants' /proc/self.
        .sh("yes | head -n1; grep '^SigIgn:' /proc/$$/status");
    assert_ok(&run, "y\n");
    assert!(
        !run.stderr.contains("Broken pipe"),
        "`yes` saw EPIPE instead of dying of SIGPIPE\n{run}"
    );
    let ignored = run
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("SigIgn:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .expect("SigIgn line");
    assert_eq!(
        ignored & (1 << (libc::SIGPIPE - 1)),
        0,
        "SIGPIPE is ignored in the sandbox\n{run}"
    );
}
per_backend!(sigpipe_has_its_default_action);

/// An unprivileged user's run on the namespaces backend (the CLI as `nobody`, switched to by
/// setpriv, so the test needs root, as on CI): the command gets its own user namespace,
/// mapping that uid alone, and pid and network namespaces of its own, and writes the workspace.
#[test]
fn unprivileged_user_runs_in_namespaces_of_its_own() {
    if !nix::unistd::geteuid().is_root() {
        crate::support::require_feature(
            "unprivileged_user_runs_in_namespaces_of_its_own: needs root to switch to nobody",
        );
        return;
    }
    if !Backend::Namespaces.available("unprivileged_user_runs_in_namespaces_of_its_own") {
        return;
    }
    let w = World::new();
    let ws = w.root.join("nobody-ws");
    fs::create_dir(&ws).expect("mkdir");
    std::os::unix::fs::chown(&ws, Some(65534), Some(65534)).expect("chown");
    let host_user_ns = fs::read_link("/proc/self/ns/user").expect("our user namespace");
    let script = "id -u; cat /proc/self/uid_map; echo pid=$$; readlink /proc/self/ns/user; \
                  cat /proc/net/dev | grep -c :; echo written > mine.txt";
    let mut argv: Vec<std::ffi::OsString> = vec![sandbox_support::run::zeroclaw().into()];
    argv.extend(["sandbox", "run", "--backend", "namespaces", "--workspace"].map(Into::into));
    argv.push(ws.clone().into());
    argv.extend(["--", "/bin/sh", "-c", script].map(Into::into));
    let run = sandbox_support::run::as_nobody(&ws, argv);
    assert_ok(&run, "65534\n");
    let map: Vec<&str> = run
        .stdout
        .lines()
        .nth(1)
        .unwrap_or("")
        .split_whitespace()
        .collect();
    assert_eq!(map, ["65534", "65534", "1"], "uid map\n{run}");
    let pid = run.stdout.lines().find_map(|l| l.strip_prefix("pid="));
    let pid: u32 = pid.and_then(|p| p.parse().ok()).expect("pid=N");
    assert!(
        pid < 10,
        "not in a pid namespace of its own (pid {pid})\n{run}"
    );
    assert!(
        !run.stdout.contains(&*host_user_ns.to_string_lossy()),
        "the command shares our user namespace\n{run}"
    );
    assert_ok(&run, "user:[");
    assert_ok(&run, "\n1\n"); // only `lo` in /proc/net/dev
    assert_eq!(
        fs::read_to_string(ws.join("mine.txt")).ok().as_deref(),
        Some("written\n"),
        "{run}"
    );
}

/// Ptys work (on the Landlock-only rung the slave comes from the helper): `pty.openpty()`, raw
/// mode on the slave, bytes both ways, and `pty.fork()` giving the child a terminal.
fn ptys(w: &World, b: Backend) {
    let src = r#"
import os, pty, time, tty
m, s = pty.openpty()
tty.setraw(s)
os.write(s, b"out\n"); print("master got", os.read(m, 16).decode().strip(), flush=True)
os.write(m, b"in\n"); print("slave got", os.read(s, 16).decode().strip(), flush=True)
pid, fd = pty.fork()
if pid == 0:
    print("child tty", os.isatty(0), flush=True)
    os._exit(0)
time.sleep(0.3)
print(os.read(fd, 64).decode().strip(), flush=True)
os.waitpid(pid, 0)
"#;
    let quoted = src.replace('\'', r"'\''");
    let run = w.confined(b).sh(&format!("{PYTHON} -c '{quoted}'"));
    assert_ok(&run, "master got out\nslave got in\nchild tty True\n");
}
per_backend!(ptys);
