//! The confinement checked from inside: once the last stage (seccomp) is applied, and before
//! the command runs (a warm init: once it has confined itself, before its call arrives), the
//! confined process observes that what it was told to enforce holds — no capability left,
//! `no_new_privs` set, a seccomp filter installed, a write outside the writable roots refused,
//! the denied paths showing nothing, the network as planned. A property that does not hold
//! fails the call closed with the stage it belongs to; the ones that held go into the
//! enforcement report ([`InsideCheck`]), and from there into the call's audit record.
//!
//! The checks observe effects, not the stages' own return values: a stage that reported
//! success but did nothing (the field's worst bug of 2026: Landlock applied after a privilege
//! drop that made it a no-op) is caught here.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Instant;

use nix::errno::Errno;

use crate::backend::Backend;
use crate::error::{SetupError, Stage};
use crate::plan::Plan;
use crate::wire::{Enforcement, InsideCheck};

/// Where a write is tried: the first that exists and no write rule covers. `/dev/shm` is
/// writable to everyone as far as modes go (a private tmpfs on the namespace backends, the
/// host's on the Landlock-only rung), so only Landlock refuses it; `/` is read-only (the new
/// root) or the host's.
const WRITE_CANARIES: [&str; 2] = ["/dev/shm", "/"];

/// A TEST-NET-1 address (RFC 5737): never routed, so a connect that gets anywhere proves the
/// host's network is reachable, and nothing is ever reached (transparent egress's watch on
/// refused connections skips this probe's refusal).
const OUTSIDE: std::net::Ipv4Addr = crate::egress::refused_watch::PROBE;

/// Checks the calling process's confinement per `plan` and what `report` says was applied;
/// fills in `report.checked`.
pub(super) fn check(plan: &Plan, report: &mut Enforcement) -> Result<(), SetupError> {
    let start = Instant::now();
    let mut out = InsideCheck::default();
    capabilities(&mut out)?;
    no_new_privs(&mut out)?;
    seccomp(&mut out)?;
    let landlock = report.landlock != "none" && !report.landlock.is_empty();
    if landlock {
        write_outside(plan, &mut out)?;
        read_root(plan, &mut out)?;
    } else {
        out.not_checked
            .push("writes outside the writable roots: no Landlock ruleset".into());
    }
    denied(plan, &mut out)?;
    network(plan, &mut out)?;
    out.nanos = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
    report.checked = Some(out);
    Ok(())
}

fn failed(stage: Stage, what: impl std::fmt::Display) -> SetupError {
    SetupError::new(stage, format!("inside check: {what}"))
        .hint("the confinement did not take effect; nothing was run (report this as a bug)")
}

fn capabilities(out: &mut InsideCheck) -> Result<(), SetupError> {
    let sets = crate::sys::capability_sets()
        .map_err(|e| failed(Stage::Capabilities, format!("capget: {e}")))?;
    for (held, name) in sets.iter().zip(["effective", "permitted", "inheritable"]) {
        if *held != 0 {
            return Err(failed(
                Stage::Capabilities,
                format!("{name} capabilities left: {held:#x}"),
            ));
        }
    }
    // The ambient set is a subset of permitted and inheritable: empty with them.
    out.held.push(
        "capabilities: effective, permitted, inheritable and ambient sets empty (capget)".into(),
    );
    Ok(())
}

fn no_new_privs(out: &mut InsideCheck) -> Result<(), SetupError> {
    match nix::sys::prctl::get_no_new_privs() {
        Ok(true) => {
            out.held
                .push("no_new_privs set (PR_GET_NO_NEW_PRIVS)".into());
            Ok(())
        }
        Ok(false) => Err(failed(Stage::NoNewPrivs, "PR_GET_NO_NEW_PRIVS is 0")),
        Err(e) => Err(failed(
            Stage::NoNewPrivs,
            format!("PR_GET_NO_NEW_PRIVS: {e}"),
        )),
    }
}

fn seccomp(out: &mut InsideCheck) -> Result<(), SetupError> {
    match crate::sys::seccomp_mode() {
        Ok(2) => {
            out.held
                .push("seccomp filter installed (PR_GET_SECCOMP = 2)".into());
            Ok(())
        }
        Ok(mode) => Err(failed(
            Stage::Seccomp,
            format!("PR_GET_SECCOMP = {mode}, not a filter"),
        )),
        Err(e) => Err(failed(Stage::Seccomp, format!("PR_GET_SECCOMP: {e}"))),
    }
}

/// The stage a filesystem property belongs to: the masks on the namespace backends, Landlock
/// on the rung that has only it.
fn fs_stage(plan: &Plan) -> Stage {
    if plan.backend == Backend::Landlock {
        Stage::Landlock
    } else {
        Stage::Mounts
    }
}

fn covered(path: &Path, rules: &[PathBuf]) -> bool {
    rules.iter().any(|rule| path.starts_with(rule))
}

/// A directory made where no write rule reaches must be refused (and is removed at once if it
/// was not). On every backend with Landlock this is Landlock's refusal alone.
fn write_outside(plan: &Plan, out: &mut InsideCheck) -> Result<(), SetupError> {
    let name = format!(".zeroclaw-inside-check-{}", std::process::id());
    for dir in WRITE_CANARIES.map(Path::new) {
        if covered(dir, &plan.landlock.write) {
            continue;
        }
        let canary = dir.join(&name);
        match nix::unistd::mkdir(&canary, nix::sys::stat::Mode::from_bits_truncate(0o700)) {
            Ok(()) => {
                let _ = std::fs::remove_dir(&canary);
                return Err(failed(
                    Stage::Landlock,
                    format!(
                        "mkdir({}) succeeded outside the writable roots",
                        canary.display()
                    ),
                ));
            }
            Err(e @ (Errno::EACCES | Errno::EPERM | Errno::EROFS)) => {
                out.held.push(format!(
                    "write outside the writable roots refused: mkdir({}): {}",
                    canary.display(),
                    e.desc()
                ));
                return Ok(());
            }
            // Not there, or a stale canary: this place proves nothing, try the next.
            Err(_) => {}
        }
    }
    out.not_checked.push(
        "writes outside the writable roots: every canary place is writable by the plan or missing"
            .into(),
    );
    Ok(())
}

/// Without a new root (Landlock-only rung) the host's `/` must not be listable unless a rule
/// grants it.
fn read_root(plan: &Plan, out: &mut InsideCheck) -> Result<(), SetupError> {
    let root = Path::new("/");
    let rules = &plan.landlock;
    if plan.backend != Backend::Landlock
        || covered(root, &rules.read)
        || covered(root, &rules.write)
        || covered(root, &rules.devices)
    {
        return Ok(());
    }
    match std::fs::read_dir(root) {
        Ok(_) => Err(failed(
            Stage::Landlock,
            "opendir(/) succeeded though no rule grants it",
        )),
        Err(e) => {
            out.held.push(format!(
                "reads outside the read roots refused: opendir(/): {e}"
            ));
            Ok(())
        }
    }
}

/// Each denied path shows nothing: it cannot be opened, or it is an empty directory or file
/// (the namespace backends' masks).
fn denied(plan: &Plan, out: &mut InsideCheck) -> Result<(), SetupError> {
    if plan.denied.is_empty() {
        out.not_checked.push("denied paths: none planned".into());
        return Ok(());
    }
    for path in &plan.denied {
        if shows_something(path) {
            return Err(failed(
                fs_stage(plan),
                format!("denied path {} is readable", path.display()),
            ));
        }
    }
    out.held.push(format!(
        "denied paths show nothing ({} checked)",
        plan.denied.len()
    ));
    Ok(())
}

/// Whether `path` can be read and holds something. Only directories and regular files are
/// opened (a FIFO or a device is never opened: that could block or act).
fn shows_something(path: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    if meta.is_dir() {
        std::fs::read_dir(path).is_ok_and(|mut entries| entries.next().is_some())
    } else if meta.is_file() {
        let mut byte = [0u8; 1];
        std::fs::File::open(path).is_ok_and(|mut f| f.read(&mut byte).is_ok_and(|n| n > 0))
    } else {
        false
    }
}

/// With the network denied or proxied, an IP socket cannot be made or cannot leave the host:
/// a connect to an address outside must be refused at once (the socket refused by seccomp, no
/// route in a namespace with only `lo`, or Landlock's TCP rule). A connect in progress (the
/// host's network) fails the check when its short wait ends.
fn network(plan: &Plan, out: &mut InsideCheck) -> Result<(), SetupError> {
    if !plan.egress.own_namespace {
        out.not_checked
            .push("network: the host's (network = allow)".into());
        return Ok(());
    }
    let stage = if plan.backend == Backend::Landlock {
        Stage::Landlock
    } else {
        Stage::Namespaces
    };
    // A port transparent egress does not listen on (its listeners would accept).
    let taken = plan.egress.transparent.as_deref().unwrap_or_default();
    let port = [9, 1, 7, 13, 19]
        .into_iter()
        .find(|p| !taken.contains(p))
        .unwrap_or(9);
    let addr = std::net::SocketAddr::from((OUTSIDE, port));
    match std::net::TcpStream::connect_timeout(&addr, std::time::Duration::from_millis(50)) {
        Ok(_) => Err(failed(stage, format!("connect({addr}) succeeded"))),
        Err(e) => match e.raw_os_error() {
            Some(
                libc::ENETUNREACH
                | libc::EHOSTUNREACH
                | libc::EACCES
                | libc::EPERM
                | libc::EAFNOSUPPORT
                | libc::EPROTONOSUPPORT,
            ) => {
                out.held
                    .push(format!("network: connect({addr}) refused: {e}"));
                Ok(())
            }
            // Transparent egress makes every IPv4 address local to `lo` (the proxy's listeners
            // take the allowed ports): a refusal there is our own stack's, when `lo` is the
            // namespace's only interface.
            Some(libc::ECONNREFUSED) if plan.egress.transparent.is_some() => {
                match only_loopback() {
                    Ok(()) => {
                        out.held.push(format!(
                            "network: connect({addr}) refused on lo (transparent egress), lo the \
                             only interface"
                        ));
                        Ok(())
                    }
                    Err(why) => Err(failed(stage, why)),
                }
            }
            _ => Err(failed(
                stage,
                format!("connect({addr}): {e} (the host's network is reachable)"),
            )),
        },
    }
}

/// `Ok` when the network namespace has no interface but `lo` (`/proc/self/net/dev`).
fn only_loopback() -> Result<(), String> {
    let dev = std::fs::read_to_string("/proc/self/net/dev")
        .map_err(|e| format!("/proc/self/net/dev: {e} (the interfaces cannot be listed)"))?;
    let others: Vec<&str> = dev
        .lines()
        .skip(2)
        .filter_map(|l| l.split(':').next().map(str::trim))
        .filter(|name| *name != "lo")
        .collect();
    if others.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "interfaces besides lo: {} (the host's network is reachable)",
            others.join(", ")
        ))
    }
}
