//! Escape suite, what the host keeps for root and its memory: root-only files of `/proc` and
//! of exposed toolchain directories (a child running as uid 0 would own them), and the
//! memory of the whole execution (shared mappings and tmpfs files escape `RLIMIT_DATA`).
//!
//! Every attack runs on every Linux backend (`per_backend!`), confined first and judged from
//! outside, then unconfined as its positive control. The root-only classes need a launcher
//! running as root (an unprivileged child cannot read them anyway): elsewhere they print a
//! skip, and fail when `CI=true`.

use crate::sandbox_support;

use sandbox_support::judge::{assert_escaped, assert_not_escaped, confined, control, defaults};
use sandbox_support::py::py;
use sandbox_support::{Backend, World};

/// `true` when the test runs as root; otherwise prints why `test` is skipped (a failure on CI,
/// whose runs as root are the ones that judge these classes).
fn as_root(test: &str) -> bool {
    if nix::unistd::geteuid().is_root() {
        return true;
    }
    crate::support::require_feature(&format!(
        "{test}: needs root (an unprivileged child cannot read root-only files)"
    ));
    false
}

/// Root-only files of `/proc` that help kernel exploits (physical addresses, slab layout,
/// timers), and one of `/proc/sys`.
const ROOT_ONLY_PROC: &[&str] = &[
    "/proc/slabinfo",
    "/proc/kpageflags",
    "/proc/kpagecount",
    "/proc/kpagecgroup",
    "/proc/timer_list",
    "/proc/vmallocinfo",
    "/proc/pagetypeinfo",
    "/proc/sys/kernel/cad_pid",
];

/// What ordinary tools read in `/proc`.
const ORDINARY_PROC: &[&str] = &[
    "/proc/self/status",
    "/proc/cpuinfo",
    "/proc/meminfo",
    "/proc/stat",
    "/proc/loadavg",
    "/proc/uptime",
    "/proc/version",
    "/proc/mounts",
];

/// A script printing `ZC_READ <file>` for each of `files` that yields any bytes, and
/// `ZC_OK <file>` for each ordinary file the shell itself reads a line of.
fn proc_script(files: &[&str]) -> String {
    format!(
        "for f in {}; do n=$(head -c 4096 \"$f\" 2>/dev/null | wc -c); \
         [ \"$n\" -gt 0 ] && echo \"ZC_READ $f\"; done; \
         for f in {}; do read -r l < \"$f\" && echo \"ZC_OK $f\"; done; true",
        files.join(" "),
        ORDINARY_PROC.join(" ")
    )
}

/// None of the root-only `/proc` files gives a byte inside; the ordinary ones still read.
fn read_root_only_proc_files(w: &World, b: Backend) {
    if !as_root("read_root_only_proc_files") {
        return;
    }
    let present: Vec<&str> = ROOT_ONLY_PROC
        .iter()
        .copied()
        .filter(|f| std::path::Path::new(f).exists())
        .collect();
    let script = proc_script(&present);
    let run = confined(w, b, defaults, &script);
    let read: Vec<&str> = present
        .iter()
        .copied()
        .filter(|f| run.stdout.contains(&format!("ZC_READ {f}\n")))
        .collect();
    assert!(
        read.is_empty(),
        "ESCAPE: root-only /proc files read inside: {read:?}\n{run}"
    );
    for f in ORDINARY_PROC {
        assert!(
            run.stdout.contains(&format!("ZC_OK {f}\n")),
            "{f} no longer reads inside\n{run}"
        );
    }
    let control = control(w, &script);
    for f in &present {
        assert!(
            control.stdout.contains(&format!("ZC_READ {f}\n")),
            "positive control failed: {f} unreadable unconfined\n{control}"
        );
    }
}
per_backend!(read_root_only_proc_files);

/// A toolchain directory exposed under `$HOME` (a node prefix under `~/.nvm`) holding a
/// root-only registry token in its `etc/npmrc` and a root-only file at its top: the token is
/// never read inside, the toolchain's executable still runs.
fn read_root_only_toolchain_files(w: &World, b: Backend) {
    if !as_root("read_root_only_toolchain_files") {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let prefix = w.home.join(".nvm/versions/node/v99.0.0");
    let tool = prefix.join("bin/zc-tool");
    w.write(&tool, "#!/bin/sh\necho ZC_TOOL_RAN\n");
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    let secrets = [prefix.join("etc/npmrc"), w.home.join(".nvm/.zc-token")];
    for (i, secret) in secrets.iter().enumerate() {
        w.write(
            secret,
            &format!(
                "//registry/:_authToken={}\n",
                w.secret(&format!("npmrc{i}"))
            ),
        );
        std::fs::set_permissions(secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let script = format!(
        "{}; cat {} {}",
        tool.display(),
        secrets[0].display(),
        secrets[1].display()
    );
    let run = confined(w, b, defaults, &script);
    w.assert_no_canary(&run);
    assert!(
        run.stdout.contains("ZC_TOOL_RAN"),
        "the toolchain's executable no longer runs inside\n{run}"
    );
    w.assert_canary(&control(w, &script));
}
per_backend!(read_root_only_toolchain_files);

/// Maps `argv[1]` MiB `MAP_SHARED` (not counted by `RLIMIT_DATA`), populates it with
/// `MADV_POPULATE_WRITE` and holds it `argv[2]` seconds; `ZC_ESCAPED` once populated.
const SHARED_FILLER: &str = r#"
import mmap, sys, time
size = int(sys.argv[1]) << 20
try:
    m = mmap.mmap(-1, size, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    m.madvise(23)  # MADV_POPULATE_WRITE
    print("ZC_ESCAPED populated", size, flush=True)
    time.sleep(float(sys.argv[2]))
except (OSError, MemoryError) as e:
    print("populate failed:", e, flush=True)
"#;

/// The memory limit of these tests (MiB) and what each attack takes in all: twice as much.
const LIMIT_MIB: u64 = 128;
const TAKEN_MIB: u64 = 256;

/// The launcher as an unprivileged user has no memory cgroup: `doctor` must say the bound is
/// missing (then the attacks below are not judged).
fn memory_bound_available(w: &World) -> bool {
    if nix::unistd::geteuid().is_root() {
        return true;
    }
    let doctor = w.plain().run(&[sandbox_support::run::zeroclaw(), "doctor"]);
    assert!(
        doctor.stdout.contains("whole-execution memory limit"),
        "doctor does not report the missing memory bound\n{doctor}"
    );
    eprintln!("SKIP memory attacks: unprivileged, no memory cgroup (doctor reports it)");
    false
}

/// The run was stopped by the bound: OOM-killed (the shell reports 128 + SIGKILL) or refused
/// with `error` — not some unrelated failure.
fn assert_stopped(run: &sandbox_support::run::Run, error: &str) {
    assert!(
        run.status_code() == Some(137) || run.output().contains(error),
        "the confined run ended neither OOM-killed nor with {error:?}\n{run}"
    );
}

/// A run of `script` confined with a memory limit of `mib` MiB.
fn limited(w: &World, b: Backend, mib: u64, script: &str) -> sandbox_support::run::Run {
    let run = w
        .confined(b)
        .memory_mb(mib)
        .sh(&sandbox_support::judge::marked(script));
    run.assert_reached(sandbox_support::ATTEMPT);
    run
}

/// One process populating a shared mapping twice the limit: killed or refused, never
/// populated; under a limit above it, the same succeeds.
fn memory_shared_mapping(w: &World, b: Backend) {
    if !memory_bound_available(w) {
        return;
    }
    let script = py(SHARED_FILLER, &[TAKEN_MIB.to_string(), "0".into()]);
    let run = limited(w, b, LIMIT_MIB, &script);
    assert_not_escaped(&run);
    assert_stopped(&run, "populate failed");
    assert_escaped(&limited(w, b, 4 * TAKEN_MIB, &script));
}
per_backend!(memory_shared_mapping);

/// Four processes each populating a shared mapping of half the limit at the same time (each
/// within any per-process bound): not all of them can hold it.
fn memory_several_processes(w: &World, b: Backend) {
    if !memory_bound_available(w) {
        return;
    }
    let one = py(SHARED_FILLER, &[(TAKEN_MIB / 4).to_string(), "3".into()]);
    let script = format!("for i in 1 2 3 4; do {one} & done; wait");
    let count = |run: &sandbox_support::run::Run| run.stdout.matches("ZC_ESCAPED").count();
    let run = limited(w, b, LIMIT_MIB / 2, &script);
    assert!(
        count(&run) < 4,
        "ESCAPE: four processes held {TAKEN_MIB} MiB under a {} MiB limit\n{run}",
        LIMIT_MIB / 2
    );
    let control = limited(w, b, 4 * TAKEN_MIB, &script);
    assert_eq!(
        count(&control),
        4,
        "positive control failed: four processes could not hold {TAKEN_MIB} MiB\n{control}"
    );
}
per_backend!(memory_several_processes);

/// A file in the private tmpfs `/tmp` twice the limit: killed or refused, never written in
/// full; under a limit above it, the same succeeds.
fn memory_tmpfs_file(w: &World, b: Backend) {
    if !memory_bound_available(w) {
        return;
    }
    let script = format!(
        "head -c {} /dev/zero > /tmp/zc-fill && echo ZC_ESCAPED $(wc -c < /tmp/zc-fill)",
        TAKEN_MIB << 20
    );
    let run = limited(w, b, LIMIT_MIB, &script);
    assert_not_escaped(&run);
    assert_stopped(&run, "No space left");
    assert_escaped(&limited(w, b, 4 * TAKEN_MIB, &script));
}
per_backend!(memory_tmpfs_file, landlock: "reduced rung: no private tmpfs (its TMPDIR is on disk)");
