//! Choosing the rung of the ladder from the probes, and the [`Report`] explaining it.

use super::guarantees::{guarantees_here, missing_process_limit};
use super::probes::probes;
use super::types::{BackendStatus, FULL_LANDLOCK_ABI, ProbeSource, Probes, Report};
use crate::backend::{Backend, BackendChoice, LANDLOCK_RUNG_LIMITS};
use crate::error::SandboxError;

pub fn statuses(p: &impl ProbeSource) -> Vec<BackendStatus> {
    Backend::LADDER.iter().map(|b| status(*b, p)).collect()
}

fn status(backend: Backend, p: &impl ProbeSource) -> BackendStatus {
    let mut reasons = Vec::new();
    let linux_needs = |reasons: &mut Vec<String>| {
        if !p.seccomp().ok {
            reasons.push("seccomp filters unavailable (CONFIG_SECCOMP_FILTER)".to_string());
        }
        if p.landlock_abi() == 0 {
            reasons.push("Landlock unavailable (Linux >= 5.13 with lsm=...,landlock)".to_string());
        }
    };
    match backend {
        Backend::Namespaces => {
            linux_needs(&mut reasons);
            let c = p.user_namespaces();
            if !c.ok {
                reasons.push(c.detail);
            }
        }
        Backend::Bubblewrap => {
            linux_needs(&mut reasons);
            let c = p.bubblewrap();
            if !c.ok {
                reasons.push(c.detail);
            }
        }
        Backend::Landlock => linux_needs(&mut reasons),
        Backend::Seatbelt => {
            if !p.sandbox_exec().ok {
                reasons.push("sandbox-exec is macOS only".into());
            }
        }
        Backend::None => {}
    }
    let linux = matches!(
        backend,
        Backend::Namespaces | Backend::Bubblewrap | Backend::Landlock
    );
    let partial = linux && reasons.is_empty() && p.landlock_abi() < FULL_LANDLOCK_ABI;
    BackendStatus {
        backend,
        available: reasons.is_empty(),
        partial,
        reason: reasons.join("; "),
    }
}

/// Picks the backend for `choice`: a named backend must be available, `auto` takes the
/// strongest rung with namespaces (namespaces, bubblewrap; Seatbelt on macOS) and never the
/// Landlock-only rung, which is used only when named; `none` only when named; partial
/// Landlock only when allowed.
pub fn choose(
    choice: BackendChoice,
    allow_partial: bool,
    p: &impl ProbeSource,
) -> Result<Backend, SandboxError> {
    let usable = |s: &BackendStatus| s.available && (!s.partial || allow_partial);
    if let Some(named) = choice.named() {
        let s = &status(named, p);
        if !s.available {
            return Err(SandboxError::Unavailable {
                requested: choice,
                reason: s.reason.clone(),
            });
        }
        if !usable(s) {
            return Err(SandboxError::Partial {
                backend: named,
                reason: format!("Landlock ABI {} < {FULL_LANDLOCK_ABI}", p.landlock_abi()),
            });
        }
        return Ok(named);
    }
    let automatic = |b: &&Backend| !matches!(b, Backend::None | Backend::Landlock);
    // The first usable rung wins; a lower rung's probe (a bwrap preflight run) is not paid
    // for unless every rung above it failed.
    let mut candidates: Vec<BackendStatus> = Vec::new();
    for b in Backend::LADDER.iter().filter(automatic) {
        let s = status(*b, p);
        if usable(&s) {
            return Ok(s.backend);
        }
        candidates.push(s);
    }
    let why = |s: &BackendStatus| {
        if s.partial {
            "partial Landlock (allow_partial = false)".to_string()
        } else {
            s.reason.clone()
        }
    };
    let mut reason = candidates
        .iter()
        .map(|s| format!("{}: {}", s.backend, why(s)))
        .collect::<Vec<_>>()
        .join("; ");
    let landlock = status(Backend::Landlock, p);
    reason += &if usable(&landlock) {
        format!(
            ". The reduced Landlock-only rung works here but is never chosen automatically: \
             set [sandbox] backend = \"landlock\" (CLI: --backend landlock) to accept it; it does not guarantee: {}",
            LANDLOCK_RUNG_LIMITS.join("; ")
        )
    } else {
        format!(
            ". The reduced Landlock-only rung (backend = \"landlock\", only by name) is not \
             usable either: {}",
            why(&landlock)
        )
    };
    Err(SandboxError::Unavailable {
        requested: choice,
        reason,
    })
}

/// The full report for `choice`.
pub fn report(choice: BackendChoice, allow_partial: bool) -> Report {
    report_from(choice, allow_partial, probes())
}

/// The report for given probes (pure; used by tests).
pub fn report_from(choice: BackendChoice, allow_partial: bool, probes: Probes) -> Report {
    let chosen = choose(choice, allow_partial, &probes);
    let backends = statuses(&probes);
    let mut missing: Vec<String> = backends
        .iter()
        .filter(|s| !s.available && s.backend != Backend::Seatbelt && s.backend != Backend::None)
        .map(|s| format!("{}: {}", s.backend, s.reason))
        .collect();
    let linux_confined = chosen.as_ref().is_ok_and(|b| {
        matches!(
            b,
            Backend::Namespaces | Backend::Bubblewrap | Backend::Landlock
        )
    });
    if linux_confined && !probes.memory_cgroup.ok {
        missing.push(format!(
            "whole-execution memory limit: {}",
            probes.memory_cgroup.detail
        ));
    }
    if let Ok(b) = &chosen {
        missing.extend(missing_process_limit(*b, &probes.process_limit));
    }
    Report {
        requested: choice,
        allow_partial,
        guarantees: chosen
            .as_ref()
            .map(|b| guarantees_here(*b, &probes.process_limit))
            .unwrap_or_default(),
        chosen: chosen.as_ref().ok().copied(),
        error: chosen.err().map(|e| e.to_string()),
        probes,
        backends,
        missing,
    }
}
