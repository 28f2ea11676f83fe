use super::guarantees::{RESOURCE_LIMITS, missing_process_limit};
use super::*;
use crate::backend::{Backend, BackendChoice};
use crate::error::SandboxError;

fn probes(userns: bool, bwrap: bool, abi: u32) -> Probes {
    let c = |ok: bool| Check {
        ok,
        detail: if ok { "ok".into() } else { "missing".into() },
    };
    Probes {
        kernel: "linux test".into(),
        landlock_abi: abi,
        seccomp: c(true),
        user_namespaces: c(userns),
        bubblewrap: c(bwrap),
        bwrap_path: None,
        cgroup_v2: c(false),
        memory_cgroup: c(true),
        process_limit: ProcessLimitProbe {
            root: false,
            pid_namespace_pid_max: c(false),
            pids_cgroup: c(false),
        },
        sandbox_exec: c(false),
    }
}

#[test]
fn auto_takes_the_strongest_rung() {
    assert_eq!(
        choose(BackendChoice::Auto, false, &probes(true, true, 7)).unwrap(),
        Backend::Namespaces
    );
    assert_eq!(
        choose(BackendChoice::Auto, false, &probes(false, true, 7)).unwrap(),
        Backend::Bubblewrap
    );
}

#[test]
fn auto_never_takes_the_landlock_rung() {
    let e = choose(BackendChoice::Auto, false, &probes(false, false, 7)).unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, SandboxError::Unavailable { .. }), "{text}");
    assert!(text.contains("namespaces: missing"), "{text}");
    assert!(text.contains("bubblewrap: missing"), "{text}");
    assert!(text.contains("backend = \"landlock\""), "{text}");
    assert!(text.contains(".git/hooks"), "{text}");
    // Named, it is still used.
    assert_eq!(
        choose(BackendChoice::Landlock, false, &probes(false, false, 7)).unwrap(),
        Backend::Landlock
    );
    // Without Landlock the error says so instead of offering it.
    let text = choose(BackendChoice::Auto, false, &probes(false, false, 0))
        .unwrap_err()
        .to_string();
    assert!(text.contains("not usable either"), "{text}");
}

#[test]
fn auto_with_nothing_usable_is_an_error_never_none() {
    let e = choose(BackendChoice::Auto, false, &probes(false, false, 0)).unwrap_err();
    assert!(matches!(e, SandboxError::Unavailable { .. }), "{e}");
}

#[test]
fn named_backend_unavailable_is_an_error() {
    let e = choose(BackendChoice::Bubblewrap, false, &probes(true, false, 7)).unwrap_err();
    assert!(matches!(
        e,
        SandboxError::Unavailable {
            requested: BackendChoice::Bubblewrap,
            ..
        }
    ));
}

#[test]
fn none_only_by_name() {
    assert_eq!(
        choose(BackendChoice::None, false, &probes(false, false, 0)).unwrap(),
        Backend::None
    );
}

#[test]
fn old_landlock_is_refused_unless_partial_is_allowed() {
    let p = probes(true, true, 3);
    assert!(matches!(
        choose(BackendChoice::Namespaces, false, &p),
        Err(SandboxError::Partial { .. })
    ));
    assert!(choose(BackendChoice::Auto, false, &p).is_err());
    assert_eq!(
        choose(BackendChoice::Auto, true, &p).unwrap(),
        Backend::Namespaces
    );
}

/// Without a writable memory cgroup the report lists the whole-execution memory bound as
/// missing; with one, it does not.
#[test]
fn a_missing_memory_cgroup_is_reported() {
    let bound = "whole-execution memory limit";
    let mut p = probes(true, true, 7);
    let r = report_from(BackendChoice::Auto, false, p.clone());
    assert!(!r.missing.iter().any(|m| m.starts_with(bound)), "{r:?}");
    p.memory_cgroup.ok = false;
    let r = report_from(BackendChoice::Auto, false, p);
    assert!(r.missing.iter().any(|m| m.starts_with(bound)), "{r:?}");
}

#[test]
fn report_names_the_choice_and_its_guarantees() {
    let r = report_from(BackendChoice::Landlock, false, probes(false, false, 7));
    assert_eq!(r.chosen, Some(Backend::Landlock));
    assert!(r.error.is_none());
    assert!(r.guarantees.iter().any(|g| g.what.starts_with("REDUCED")));
    // Mode changes and other processes' /proc are no longer among the reduced ones.
    assert!(
        !r.guarantees
            .iter()
            .any(|g| g.what.starts_with("REDUCED") && g.what.contains("chmod"))
    );
    assert_eq!(r.backends.len(), 5);
    assert!(r.missing.iter().any(|m| m.starts_with("namespaces:")));
    let json = serde_json::to_value(&r).unwrap();
    for key in [
        "requested",
        "chosen",
        "probes",
        "backends",
        "guarantees",
        "missing",
    ] {
        assert!(json.get(key).is_some(), "{key}");
    }
}

#[test]
fn auto_report_without_namespaces_offers_landlock_by_name() {
    let r = report_from(BackendChoice::Auto, false, probes(false, false, 7));
    assert_eq!(r.chosen, None);
    assert!(r.guarantees.is_empty());
    assert!(r.error.unwrap().contains("backend = \"landlock\""));
    let landlock = r.backends.iter().find(|s| s.backend == Backend::Landlock);
    assert!(landlock.is_some_and(|s| s.available));
}

#[test]
fn report_without_a_backend_carries_the_error() {
    let r = report_from(BackendChoice::Namespaces, false, probes(false, false, 7));
    assert_eq!(r.chosen, None);
    assert!(r.error.unwrap().contains("namespaces"));
}

fn limit_probe(root: bool, pid_max: bool, cgroup: bool) -> ProcessLimitProbe {
    let c = |ok: bool, what: &str| Check {
        ok,
        detail: what.into(),
    };
    ProcessLimitProbe {
        root,
        pid_namespace_pid_max: c(pid_max, "pid_max probe"),
        pids_cgroup: c(cgroup, "cgroup v1 pids at /x"),
    }
}

#[test]
fn the_process_count_is_reported_by_what_really_bounds_it() {
    let as_root_v1 = limit_probe(true, false, true);
    assert_eq!(
        process_limit(Backend::Landlock, &as_root_v1).unwrap(),
        "a pids cgroup per call (cgroup v1 pids at /x)"
    );
    assert_eq!(
        process_limit(Backend::Bubblewrap, &as_root_v1),
        process_limit(Backend::Landlock, &as_root_v1)
    );
    let new_kernel = limit_probe(true, true, true);
    assert_eq!(
        process_limit(Backend::Namespaces, &new_kernel).unwrap(),
        "the pid namespace's pid_max"
    );
    assert_eq!(
        process_limit(Backend::Namespaces, &limit_probe(false, true, false)).unwrap(),
        "the pid namespace's pid_max + RLIMIT_NPROC"
    );
    assert_eq!(
        process_limit(Backend::Landlock, &limit_probe(false, false, true)).unwrap(),
        "RLIMIT_NPROC"
    );
    let nothing = limit_probe(true, false, false);
    assert_eq!(process_limit(Backend::Landlock, &nothing), None);
    let missing = missing_process_limit(Backend::Landlock, &nothing).unwrap();
    assert!(
        missing.starts_with("process count on landlock: not enforced"),
        "{missing}"
    );
    assert!(missing_process_limit(Backend::Landlock, &as_root_v1).is_none());
    let limits = guarantees_here(Backend::Landlock, &nothing)
        .into_iter()
        .find(|g| g.what == RESOURCE_LIMITS)
        .unwrap();
    assert!(
        limits.mechanism.contains("NOT ENFORCED"),
        "{}",
        limits.mechanism
    );
}

#[test]
fn a_report_lists_an_unbounded_process_count_as_missing() {
    let mut p = probes(false, false, 7);
    p.process_limit = limit_probe(true, false, false);
    let r = report_from(BackendChoice::Landlock, false, p);
    assert!(
        r.missing
            .iter()
            .any(|m| m.starts_with("process count on landlock")),
        "{:?}",
        r.missing
    );
}
