//! Escape suite, what the host keeps for root and its memory: root-only files of `/proc` and
//! of exposed toolchain directories (a child running as uid 0 would own them), and the
//! memory of the whole execution (shared mappings and tmpfs files escape `RLIMIT_DATA`).
//!
//! Every attack runs on every Linux backend (`per_backend!`), confined first and judged from
//! outside, then unconfined as its positive control. The root-only classes need a launcher
//! running as root (an unprivileged child cannot read them anyway): elsewhere they print a
//! skip, and fail when `CI=true`.

#[macro_use]
mod sandbox_support;

use sandbox_support::judge::{confined, control, defaults};
use sandbox_support::{Backend, World};

/// `true` when the test runs as root; otherwise prints why `test` is skipped (a failure on CI,
/// whose runs as root are the ones that judge these classes).
fn as_root(test: &str) -> bool {
    if nix::unistd::geteuid().is_root() {
        return true;
    }
    let why = format!("{test}: needs root (an unprivileged child cannot read root-only files)");
    assert_ne!(std::env::var("CI").as_deref(), Ok("true"), "{why}");
    eprintln!("SKIP {why}");
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
