//! Which guarantee rests on which mechanism, per backend and on this machine.

use super::probes::process_limit;
use super::types::{Guarantee, ProcessLimitProbe};
use crate::backend::{Backend, LANDLOCK_RUNG_LIMITS};

fn g(what: &str, mechanism: &str) -> Guarantee {
    Guarantee {
        what: what.into(),
        mechanism: mechanism.into(),
    }
}

/// [`guarantees`] with the process count's real mechanism on this machine filled in.
pub fn guarantees_here(b: Backend, p: &ProcessLimitProbe) -> Vec<Guarantee> {
    let mut v = guarantees(b);
    if let Some(limits) = v.iter_mut().find(|g| g.what == RESOURCE_LIMITS) {
        let processes =
            process_limit(b, p).unwrap_or_else(|| "NOT ENFORCED (see missing)".to_string());
        limits.mechanism = format!("{RLIMITS}; process count: {processes}; {MEMORY}");
    }
    v
}

/// The process count left unbounded on `b` here, as a missing guarantee with its fix.
pub(super) fn missing_process_limit(b: Backend, p: &ProcessLimitProbe) -> Option<String> {
    let confined = matches!(
        b,
        Backend::Namespaces | Backend::Bubblewrap | Backend::Landlock
    );
    if !confined || process_limit(b, p).is_some() {
        return None;
    }
    let pid_max = if b == Backend::Namespaces {
        format!("{}; ", p.pid_namespace_pid_max.detail)
    } else {
        String::new()
    };
    Some(format!(
        "process count on {b}: not enforced (uid 0 ignores RLIMIT_NPROC; {pid_max}{}): run as a \
         non-root user, or give zeroclaw a writable pids cgroup",
        p.pids_cgroup.detail
    ))
}

pub(super) const RESOURCE_LIMITS: &str = "resource limits";
const RLIMITS: &str = "rlimits (CPU time, memory, file size, open files)";
const MEMORY: &str = "whole-execution memory: a memory cgroup per call (uid 0)";

/// Which guarantee rests on which mechanism, per backend (the process count's mechanism
/// depends on the machine: [`guarantees_here`]).
pub fn guarantees(b: Backend) -> Vec<Guarantee> {
    match b {
        Backend::Namespaces | Backend::Bubblewrap => {
            let ns = if b == Backend::Namespaces {
                "mount namespace"
            } else {
                "bubblewrap mount namespace"
            };
            vec![
                g(
                    "reads limited to allowed roots; secrets masked",
                    &format!("{ns} + Landlock"),
                ),
                g(
                    "writes limited to the workspace; .git/hooks, .git/config read-only",
                    &format!("{ns} (read-only binds, pinned .git)"),
                ),
                g("private /tmp and HOME", &format!("{ns} (tmpfs)")),
                g(
                    "the workspace's writes land only through validation: no repository a \
                     command creates or plants below the root reaches the host unvalidated \
                     (when the daemon keeps layers: sessions and `sandbox run`)",
                    if b == Backend::Namespaces {
                        "overlay upper layer per call, validated and landed after the call"
                    } else {
                        "overlay upper layer per call, validated and landed after the call \
                         (started by another user: mounted by the helper around bwrap in a \
                         workspace without .git; in a repository, or with a setuid bwrap, \
                         REDUCED: writes reach the workspace directly and nested repositories \
                         are not validated)"
                    },
                ),
                g(
                    "no network, no abstract or outside Unix sockets",
                    if b == Backend::Namespaces {
                        "net namespace + seccomp socket filter + Landlock + read-only roots as overlays"
                    } else {
                        "net namespace + seccomp socket filter + Landlock + read-only roots as overlays (bwrap started by root only)"
                    },
                ),
                g(
                    "no signals/ptrace to outside processes",
                    "pid namespace + Landlock scope + seccomp",
                ),
                g(
                    "no privilege: capabilities dropped, no_new_privs, no new namespaces",
                    "capset/bounding set + prctl + seccomp",
                ),
                g(
                    "no setuid/setgid file, file capability or device node left for the host",
                    "seccomp (mode arguments; attribute writes refused) + capabilities dropped",
                ),
                g(
                    "the host's per-user counts kept: a quarter of its inotify instances and watches",
                    "/proc/sys/user limits of the child's user namespace (bubblewrap: not for a non-root user of a setuid-root bwrap, which refuses --cap-add)",
                ),
                g(
                    "no descendant outlives the call",
                    "pid namespace (init exit kills all)",
                ),
                g(
                    RESOURCE_LIMITS,
                    &format!(
                        "{RLIMITS}; process count: the pid namespace's pid_max, else a pids cgroup (uid 0), else RLIMIT_NPROC; {MEMORY}"
                    ),
                ),
            ]
        }
        Backend::Landlock => {
            let mut v = vec![
                g(
                    "reads limited to allowed roots; secrets excluded",
                    "Landlock (per-entry rules)",
                ),
                g(
                    "writes limited to the workspace and a private TMPDIR/HOME",
                    "Landlock",
                ),
                g(
                    "mode, owner and time changes (chmod, chown, utimensat, ...) only inside the writable roots, on files the uid owns, never setuid/setgid, never to another owner",
                    "seccomp user notification, performed by the helper",
                ),
                g(
                    "other processes' /proc entries hidden",
                    "Landlock (rules on /proc's non-process entries and the command's own)",
                ),
                g(
                    "no network when denied (only Unix sockets; pathname ones only inside the writable roots, no abstract ones)",
                    "seccomp (socket families) + connect performed by the helper + Landlock TCP + scopes",
                ),
                g(
                    "Unix sockets outside the writable roots (docker.sock, ssh-agent) unreachable",
                    "seccomp user notification: connect performed by the helper; Unix datagram sockets denied",
                ),
                g(
                    "no signals/ptrace to outside processes; their rlimits, scheduling and I/O priority unchanged",
                    "Landlock scope + seccomp (pid 0 only)",
                ),
                g(
                    "the host's SysV IPC objects and message queues out of reach",
                    "seccomp (SysV IPC and mq_* denied)",
                ),
                g(
                    "no setuid/setgid file, file capability, ACL or device node left for the host",
                    "seccomp (mode arguments; attribute writes refused) + capabilities dropped",
                ),
                g(
                    "no privilege",
                    "capabilities dropped + no_new_privs + seccomp",
                ),
                g(
                    "no descendant outlives the call",
                    "child subreaper kills every descendant",
                ),
                g(
                    RESOURCE_LIMITS,
                    &format!(
                        "{RLIMITS}; process count: a pids cgroup (uid 0), else RLIMIT_NPROC; {MEMORY}"
                    ),
                ),
            ];
            v.extend(
                LANDLOCK_RUNG_LIMITS
                    .iter()
                    .map(|l| g(&format!("REDUCED (chosen only by name): {l}"), "none")),
            );
            v
        }
        Backend::Seatbelt => vec![g(
            "file, network and process rules",
            "Seatbelt (sandbox-exec)",
        )],
        Backend::None => vec![g(
            "NOTHING: the command runs unconfined (backend = \"none\")",
            "none",
        )],
    }
}
