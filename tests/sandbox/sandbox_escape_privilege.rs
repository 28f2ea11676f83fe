//! Escape suite, privilege class of `SECURITY.md`: retained capabilities, no_new_privs and
//! setuid, new namespaces (also through `clone3` and the i386 syscall table), `mount`,
//! `chroot`, `personality`, `/proc/sys`, kernel attack surface (io_uring, bpf, perf,
//! userfaultfd, keyctl) and terminal injection (TIOCSTI, TIOCLINUX, with high request bits).
//!
//! Every attack runs on every Linux backend (`per_backend!`), confined first and judged from
//! outside where the kernel lets an observer see it, then unconfined as its positive control.

use crate::sandbox_support;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::sync::Mutex;

use sandbox_support::judge::{
    assert_escaped, assert_not_escaped, confined, control, defaults, marked, not_escaped,
};
use sandbox_support::py::{self, py};
use sandbox_support::world::{q, unique};
use sandbox_support::{ATTEMPT, Backend, PYTHON, World};

// ---- Privilege ----------------------------------------------------------------------------

/// Capability sets from `/proc/self/status` as (name, hex value).
fn capabilities(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| l.strip_prefix("Cap"))
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.to_owned(), v.trim().to_owned()))
        .collect()
}

/// Root inside must hold no capability at all: effective, permitted, bounding, ambient.
/// (`exec`: the reader is the command itself — on the Landlock-only rung its descendants
/// cannot read their own /proc/self.)
fn retained_capabilities(w: &World, b: Backend) {
    let script = "exec grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb)' /proc/self/status";
    let run = confined(w, b, defaults, script);
    let caps = capabilities(&run.stdout);
    assert_eq!(caps.len(), 5, "expected five capability sets\n{run}");
    for (set, value) in &caps {
        assert!(
            value.trim_start_matches('0').is_empty(),
            "ESCAPE: Cap{set} = {value}\n{run}"
        );
    }
    let control = control(w, script);
    assert!(
        capabilities(&control.stdout)
            .iter()
            .any(|(s, v)| s == "Eff" && !v.trim_start_matches('0').is_empty()),
        "positive control failed: root outside should hold capabilities\n{control}"
    );
}
per_backend!(retained_capabilities);

fn no_new_privs(w: &World, b: Backend) {
    let script = "exec grep NoNewPrivs /proc/self/status";
    let run = confined(w, b, defaults, script);
    assert!(
        run.stdout.contains("NoNewPrivs:\t1"),
        "ESCAPE: no_new_privs is not set\n{run}"
    );
    let control = control(w, script);
    assert!(
        control.stdout.contains("NoNewPrivs:\t0"),
        "positive control failed\n{control}"
    );
}
per_backend!(no_new_privs);

/// A setuid-root copy of `cat` gains nothing: no capabilities, no secret. It is exec'd, so it
/// reads its own /proc/self as the command itself (see `retained_capabilities`).
fn setuid_binary(w: &World, b: Backend) {
    let suid = w.ws.join("suidcat");
    fs::copy("/bin/cat", &suid).expect("copy cat");
    fs::set_permissions(&suid, fs::Permissions::from_mode(0o4755)).expect("chmod 4755");
    let key = w.home.join(".ssh/id_ed25519");
    let script = format!("exec ./suidcat /proc/self/status {}", q(&key));
    let run = confined(w, b, defaults, &script);
    w.assert_no_canary(&run);
    assert!(
        run.stdout.contains("CapEff:\t0000000000000000"),
        "ESCAPE: setuid gave capabilities\n{run}"
    );
    w.assert_canary(&control(w, &script));
}
per_backend!(setuid_binary);

fn user_namespace(w: &World, b: Backend) {
    let script = format!(
        "unshare -U -r sh -c 'echo ZC_ESCAPED unshare-r'; unshare -U true && echo ZC_ESCAPED unshare-U; {}",
        py(&py::kernel_surface(), &["unshare_user".into()])
    );
    not_escaped(w, b, defaults, &script);
}
per_backend!(user_namespace);

/// `clone3` takes its flags in memory a filter cannot read: it must be refused as a whole.
fn user_namespace_clone3(w: &World, b: Backend) {
    kernel_surface(w, b, "clone3_user");
}
per_backend!(user_namespace_clone3);

/// A user namespace through the i386 syscall table (`int 0x80`), past a native-only filter.
fn user_namespace_i386(w: &World, b: Backend) {
    not_escaped(w, b, defaults, &py(&py::i386(), &["unshare".into()]));
}
per_backend!(user_namespace_i386);

/// `mount` inside fails; outside nothing was mounted. The control mounts in a private
/// mount namespace so the host is left untouched.
fn mount_filesystem(w: &World, b: Backend) {
    let target = w.ws.join("mnt");
    fs::create_dir_all(&target).expect("mkdir mnt");
    let script = format!(
        "mount -t tmpfs zc-escape {0} && echo ZC_ESCAPED mount; mount --bind / {0} && echo ZC_ESCAPED bind",
        q(&target)
    );
    let run = confined(w, b, defaults, &script);
    if unmount_all(&target) {
        panic!(
            "ESCAPE: a mount appeared on the host at {}\n{run}",
            target.display()
        );
    }
    assert_not_escaped(&run);
    let private = [
        "unshare",
        "-m",
        "--propagation",
        "private",
        "/bin/sh",
        "-c",
        &marked(&script),
    ];
    assert_escaped(&w.plain().run(&private));
}
per_backend!(mount_filesystem);

/// Lazily unmounts everything stacked on `target`; whether there was anything.
fn unmount_all(target: &std::path::Path) -> bool {
    let mounted = || {
        let mounts = fs::read_to_string("/proc/self/mountinfo").expect("mountinfo");
        mounts.contains(&format!(" {} ", target.display()))
    };
    let found = mounted();
    for _ in 0..8 {
        if !mounted() {
            break;
        }
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(target)
            .status();
    }
    found
}

fn chroot(w: &World, b: Backend) {
    not_escaped(
        w,
        b,
        defaults,
        "chroot / /bin/true && echo ZC_ESCAPED chroot",
    );
}
per_backend!(chroot);

/// `personality(ADDR_NO_RANDOMIZE)` through `setarch -R`.
fn personality_change(w: &World, b: Backend) {
    let script = "p=$(setarch \"$(uname -m)\" -R cat /proc/self/personality); echo \"personality $p\"; case \"$p\" in *40000) echo ZC_ESCAPED;; esac";
    not_escaped(w, b, defaults, script);
}
per_backend!(personality_change);

/// Serializes the tests whose positive control flips a host sysctl.
static SYSCTL: Mutex<()> = Mutex::new(());

/// Puts a sysctl back to its value on drop.
struct Restore(&'static str, String);

impl Drop for Restore {
    fn drop(&mut self) {
        let _ = fs::write(self.0, &self.1);
    }
}

/// Writing `/proc/sys` (root owns it; no capability is checked for most entries): a global
/// sysctl, not one a UTS or IPC namespace would absorb. The control bumps the harmless
/// `printk_ratelimit` by one and the guard restores it.
fn write_kernel_sysctl(w: &World, b: Backend) {
    let _one_at_a_time = SYSCTL.lock().unwrap_or_else(|e| e.into_inner());
    const PATH: &str = "/proc/sys/kernel/printk_ratelimit";
    let original = fs::read_to_string(PATH).expect("read sysctl");
    let _restore = Restore(PATH, original.clone());
    let bumped = original.trim().parse::<u64>().expect("a number") + 1;
    let script = format!("echo {bumped} > {PATH}");
    let run = confined(w, b, defaults, &script);
    let now = fs::read_to_string(PATH).expect("read sysctl");
    assert_eq!(
        now, original,
        "ESCAPE: the host's sysctl was changed\n{run}"
    );
    let control = control(w, &script);
    let now = fs::read_to_string(PATH).expect("read sysctl");
    assert_ne!(now, original, "positive control failed\n{control}");
}
per_backend!(write_kernel_sysctl);

/// A raw syscall must fail with EPERM, EACCES or ENOSYS: refused, not merely mis-called.
fn kernel_surface(w: &World, b: Backend, syscall: &str) {
    let script = py(&py::kernel_surface(), &[syscall.to_owned()]);
    let run = confined(w, b, defaults, &script);
    assert_not_escaped(&run);
    let refused = ["errno=1", "errno=13", "errno=38"]
        .iter()
        .any(|e| run.stdout.contains(&format!("ret=-1 {e}")));
    assert!(
        refused,
        "{syscall} failed for another reason than a refusal\n{run}"
    );
    assert_escaped(&control(w, &script));
}

fn io_uring_setup(w: &World, b: Backend) {
    kernel_surface(w, b, "io_uring_setup");
}
per_backend!(io_uring_setup);

fn bpf(w: &World, b: Backend) {
    kernel_surface(w, b, "bpf");
}
per_backend!(bpf);

fn perf_event_open(w: &World, b: Backend) {
    kernel_surface(w, b, "perf_event_open");
}
per_backend!(perf_event_open);

/// `userfaultfd(UFFD_USER_MODE_ONLY)`, which needs no privilege at all outside.
fn userfaultfd(w: &World, b: Backend) {
    kernel_surface(w, b, "userfaultfd");
}
per_backend!(userfaultfd);

fn keyctl_add_key(w: &World, b: Backend) {
    kernel_surface(w, b, "add_key");
}
per_backend!(keyctl_add_key);

/// Every ioctl the attack script tried was refused by the filter (EPERM or ENOSYS), not merely
/// rejected by the tty layer (ENOTTY) — so the filter also holds where a tty does reach the
/// child, and a request with high bits set did not slip past a 64-bit comparison.
fn assert_ioctl_filtered(run: &sandbox_support::run::Run) {
    let tried: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| l.starts_with("fd "))
        .collect();
    assert!(!tried.is_empty(), "no ioctl was attempted\n{run}");
    for line in tried {
        let refused = line.ends_with("errno 1") || line.ends_with("errno 38");
        assert!(
            refused,
            "ESCAPE: the ioctl reached the tty layer: {line}\n{run}"
        );
    }
}

/// TIOCLINUX needs a virtual console to do harm; what is checked is that the filter refuses
/// it (EPERM/ENOSYS) where the unconfined call reaches the tty layer (ENOTTY on a pipe).
fn tioclinux(w: &World, b: Backend, request: &str) {
    let script = py(
        &py::tiocsti(),
        &[request.into(), "x".into(), "/nonexistent".into()],
    );
    let run = confined(w, b, defaults, &script);
    assert_ioctl_filtered(&run);
    let control = control(w, &script);
    assert!(
        control
            .stdout
            .lines()
            .any(|l| l.starts_with("fd ") && l.ends_with("errno 25")),
        "positive control failed: the ioctl did not reach the tty layer\n{control}"
    );
}

fn tioclinux_ioctl(w: &World, b: Backend) {
    tioclinux(w, b, "0x541C");
}
per_backend!(tioclinux_ioctl);

fn tioclinux_high_bits(w: &World, b: Backend) {
    tioclinux(w, b, "0xffffffff0000541C");
}
per_backend!(tioclinux_high_bits);

/// TIOCSTI into the terminal the launcher runs on, judged from the terminal's input queue.
fn tiocsti(w: &World, b: Backend, request: &str) {
    let payload = unique("zcinject");
    let attack = py::tiocsti();
    let inner = [
        "/bin/sh",
        "-c",
        &marked(&py(
            &attack,
            &[request.into(), payload.clone(), "@TTY@".into()],
        )),
    ];
    let harness = [PYTHON, "-c", py::PTY_HARNESS];
    let run = w.confined(b).run_wrapped(&harness, &inner);
    run.assert_reached(ATTEMPT);
    let injected = run
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("INJECTED:"))
        .unwrap_or_default();
    assert!(
        !injected.contains(&payload),
        "ESCAPE: the child typed into the terminal\n{run}"
    );
    assert_ioctl_filtered(&run);
    let control = w.plain().run_wrapped(&harness, &inner);
    let injected = control
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("INJECTED:"))
        .unwrap_or_default();
    assert!(
        injected.contains(&payload),
        "positive control failed: no injection\n{control}"
    );
}

fn tiocsti_injection(w: &World, b: Backend) {
    tiocsti(w, b, "0x5412");
}
per_backend!(tiocsti_injection);

/// The request with bit 32 set: the kernel truncates it to TIOCSTI, a 64-bit filter must too.
fn tiocsti_high_bits(w: &World, b: Backend) {
    tiocsti(w, b, "0x100005412");
}
per_backend!(tiocsti_high_bits);
