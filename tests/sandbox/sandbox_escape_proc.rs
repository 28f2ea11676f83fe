//! Escape suite, process classes of `SECURITY.md`: secrets in memory (environment, `/proc`,
//! inherited file descriptors, ancestors' memory) and other processes (signals, ptrace,
//! memory reads). Privilege lives in `sandbox_escape_privilege.rs`.
//!
//! Every attack runs on every Linux backend (`per_backend!`), confined first and judged from outside
//! where the kernel lets an observer see it, then unconfined as its positive control.

use crate::sandbox_support;

use std::fs;

use sandbox_support::judge::{confined, control, defaults, marked, no_secret};
use sandbox_support::procs::Bg;
use sandbox_support::py::{self, py};
use sandbox_support::world::q;
use sandbox_support::{ATTEMPT, Backend, PYTHON, World};

// ---- Secrets in memory --------------------------------------------------------------------

/// API keys and `SSH_AUTH_SOCK` in the launcher's environment never reach the child.
fn environment_secrets(w: &World, b: Backend) {
    no_secret(w, b, defaults, "env; tr '\\0' '\\n' < /proc/self/environ");
}
per_backend!(environment_secrets);

/// Every visible process's environment, the parent's (the launcher or helper) included.
fn proc_environ_of_every_process(w: &World, b: Backend) {
    let (_daemon, _) = Bg::secret_holder(&w.secret("daemon"));
    let script = "cat /proc/$PPID/environ; for p in /proc/[0-9]*; do cat $p/environ; done 2>/dev/null | tr '\\0' '\\n'";
    no_secret(w, b, defaults, script);
}
per_backend!(proc_environ_of_every_process);

/// `/proc/<daemon>/environ` of a process started outside.
fn proc_environ_of_outside_process(w: &World, b: Backend) {
    let (daemon, _) = Bg::secret_holder(&w.secret("daemon"));
    let pid = daemon.pid();
    no_secret(
        w,
        b,
        defaults,
        &format!("tr '\\0' '\\n' < /proc/{pid}/environ"),
    );
}
per_backend!(proc_environ_of_outside_process);

/// `/proc/<daemon>/cmdline` of a process started outside (a token passed as an argument).
fn proc_cmdline_of_outside_process(w: &World, b: Backend) {
    let (daemon, _) = Bg::secret_holder(&w.secret("daemon"));
    let pid = daemon.pid();
    no_secret(
        w,
        b,
        defaults,
        &format!("tr '\\0' '\\n' < /proc/{pid}/cmdline; ps -eo args 2>&1"),
    );
}
per_backend!(proc_cmdline_of_outside_process);

/// `/proc/<outside pid>/root` and `/cwd` lead into the host's filesystem.
fn proc_root_of_outside_process(w: &World, b: Backend) {
    let (daemon, _) = Bg::secret_holder(&w.secret("daemon"));
    let pid = daemon.pid();
    let key = w.home.join(".ssh/id_ed25519");
    let script = format!("cat /proc/{pid}/root{0} /proc/1/root{0}", key.display());
    no_secret(w, b, defaults, &script);
}
per_backend!(proc_root_of_outside_process);

/// A descriptor open in the launcher (no close-on-exec) does not reach the child.
fn inherited_file_descriptor(w: &World, b: Backend) {
    let secret = w.home.join(".aws/credentials");
    let outer = format!("exec 7< {0} 9< {0}; exec \"$@\"", q(&secret));
    let inner = marked("ls -l /proc/self/fd; cat <&7; cat /proc/self/fd/9");
    let wrapper = ["/bin/sh", "-c", outer.as_str(), "sh"];
    let cmd = ["/bin/sh", "-c", inner.as_str()];
    let run = w.confined(b).run_wrapped(&wrapper, &cmd);
    run.assert_reached(ATTEMPT);
    w.assert_no_canary(&run);
    w.assert_canary(&w.plain().run_wrapped(&wrapper, &cmd));
}
per_backend!(inherited_file_descriptor);

/// The command holds exactly stdin, stdout and stderr: none of the launcher's descriptors and
/// none of the sandbox's own pipes (plan, reports, lifeline — a held lifeline could keep the
/// tree alive after the launcher dies).
fn stray_file_descriptors(w: &World, b: Backend) {
    let secret = w.home.join(".aws/credentials");
    let outer = format!("exec 7< {0} 9< {0}; exec \"$@\"", q(&secret));
    let list = "import os; print(\"FDS\", sorted(int(f) for f in os.listdir(\"/proc/self/fd\")))";
    let inner = [PYTHON, "-c", list];
    let wrapper = ["/bin/sh", "-c", outer.as_str(), "sh"];
    let fds = |run: &sandbox_support::run::Run| -> Vec<u32> {
        let line = run
            .stdout
            .lines()
            .find_map(|l| l.strip_prefix("FDS "))
            .unwrap_or_else(|| panic!("no fd list\n{run}"));
        line.trim_matches(['[', ']'])
            .split(", ")
            .filter_map(|n| n.parse().ok())
            .collect()
    };
    let run = w.confined(b).run_wrapped(&wrapper, &inner);
    // 3 is the directory listdir itself opened.
    let stray: Vec<u32> = fds(&run).into_iter().filter(|fd| *fd > 3).collect();
    assert!(
        stray.is_empty(),
        "ESCAPE: stray descriptors {stray:?} reached the command\n{run}"
    );
    let control = w.plain().run_wrapped(&wrapper, &inner);
    assert!(
        fds(&control).contains(&7),
        "positive control failed: fd 7 not inherited\n{control}"
    );
}
per_backend!(stray_file_descriptors);

/// The memory of every ancestor (the helper, the launcher, the daemon) scanned for secrets.
fn memory_of_ancestors(w: &World, b: Backend) {
    no_secret(w, b, defaults, &py(&py::ancestor_memory(), &[]));
}
per_backend!(memory_of_ancestors);

// ---- Other processes ----------------------------------------------------------------------

/// `kill -9` of a process started outside (by pid and by process group): it lives on.
fn kill_outside_process(w: &World, b: Backend) {
    let mut victim = Bg::sleeper();
    let pid = victim.pid();
    let script = format!("kill -9 {pid}; kill -9 -- -{pid}; kill -STOP {pid}");
    let run = confined(w, b, defaults, &script);
    assert!(
        victim.alive_after_grace(),
        "ESCAPE: the outside process was killed\n{run}"
    );
    let state = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    assert!(
        !state.contains(") T "),
        "ESCAPE: the outside process was stopped: {state}\n{run}"
    );
    let control = control(w, &script);
    assert!(
        !victim.alive_after_grace(),
        "positive control failed: unconfined kill missed\n{control}"
    );
}
per_backend!(kill_outside_process);

fn memory_probe(w: &World, b: Backend, program: &str) {
    let (daemon, addr) = Bg::secret_holder(&w.secret("daemon-memory"));
    let script = py(program, &[daemon.pid().to_string(), addr.to_string()]);
    no_secret(w, b, defaults, &script);
}

/// `PTRACE_ATTACH` + `PEEKDATA` of a secret in an outside process's memory.
fn ptrace_outside_process(w: &World, b: Backend) {
    memory_probe(w, b, &py::ptrace_peek());
}
per_backend!(ptrace_outside_process);

fn process_vm_readv_outside_process(w: &World, b: Backend) {
    memory_probe(w, b, &py::process_vm_readv());
}
per_backend!(process_vm_readv_outside_process);

fn proc_mem_of_outside_process(w: &World, b: Backend) {
    memory_probe(w, b, &py::proc_mem());
}
per_backend!(proc_mem_of_outside_process);
