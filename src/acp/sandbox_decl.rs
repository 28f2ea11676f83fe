//! The sandbox declared to the client, and a client's sandbox requirement.
//!
//! `initialize` (for the configured policy) and the `session/new` / `session/load` results (for
//! the session's agent and cwd) carry `_meta.zeroclaw.sandbox`: the rung that runs the tool
//! children, what it enforces and by which mechanism, what is missing here, what is not
//! enforced, the network mode, and the reads/writes/network lines — the same report
//! `zeroclaw doctor --json` and `/sandbox` print (`zeroclaw_sandbox::detect::report` and
//! [`describe`]), plus a `guarantees` summary shaped after the draft ACP sandbox-capability
//! RFD (`fsIsolation`, `netIsolation`, `processCaps`). ACP has no sandbox field yet (that RFD
//! was not merged), hence `_meta`.
//!
//! A `session/new` whose params carry `_meta.zeroclaw.requireSandbox` (`rung`: the weakest
//! acceptable rung; `network`: the most open acceptable mode) is refused with -32602 and
//! `data.reason = "sandbox_policy_unsatisfiable"` (with the declaration) when this host cannot
//! give it; an unknown requirement is refused too, never ignored.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use serde_json::{Map, Value, json};
use zeroclaw_sandbox::detect::{self, Report};
use zeroclaw_sandbox::{Backend, BackendChoice};

use crate::config::Config;
use crate::policy::{Policy, describe};
use crate::rpc::RpcError;

/// The reason in the error data of a requirement this host cannot meet.
pub const UNSATISFIABLE: &str = "sandbox_policy_unsatisfiable";

/// Where this process keeps the sandbox probes across processes (set by [`prepare`]; a process
/// that never called it probes for itself).
static KEPT_IN: OnceLock<PathBuf> = OnceLock::new();

/// The capability report for `choice`: probed once per process and choice (probing starts
/// children; the machine does not change under a running server), from the probes kept by an
/// earlier process when [`prepare`] named where and the host's facts are unchanged
/// (`zeroclaw_sandbox::detect::probes_kept_in`).
fn report(choice: BackendChoice, allow_partial: bool) -> Report {
    static CACHE: Mutex<Vec<((BackendChoice, bool), Report)>> = Mutex::new(Vec::new());
    let key = (choice, allow_partial);
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, r)) = cache.iter().find(|(k, _)| *k == key) {
        return r.clone();
    }
    let r = match KEPT_IN.get() {
        Some(dir) => detect::report_from(choice, allow_partial, detect::probes_kept_in(dir)),
        None => detect::report(choice, allow_partial),
    };
    cache.push((key, r.clone()));
    r
}

/// Makes the configured policy's declaration ready early: the probes are kept in
/// `<workspace_dir>/state/` across processes, and read (or run) on a thread of its own, so
/// that `initialize`, which needs them, finds them done or waits for this reading instead of
/// starting another.
pub fn prepare(config: &Config) {
    let _ = KEPT_IN.set(config.workspace_dir.join("state"));
    let policy = Policy::for_config(config);
    let (choice, allow_partial) = (policy.backend, policy.allow_partial);
    let started = std::thread::Builder::new()
        .name("sandbox-probe".into())
        .spawn(move || drop(report(choice, allow_partial)));
    if let Err(e) = started {
        // Only the head start is lost: `initialize` reads the probes itself.
        tracing::debug!(error = %e, "sandbox probe thread not started");
    }
}

/// `deny`, `proxy` or `allow`: how the session's children reach the network.
fn network_mode(policy: &Policy) -> &'static str {
    if policy.egress.is_some() {
        "proxy"
    } else if policy.network {
        "allow"
    } else {
        "deny"
    }
}

/// How open each network mode is (a requirement names the most open it accepts).
fn openness(mode: &str) -> Option<u8> {
    ["deny", "proxy", "allow"]
        .iter()
        .position(|m| *m == mode)
        .map(|p| p as u8)
}

/// The ladder, for a requirement's `rung`: the namespace and bubblewrap rungs enforce the same
/// (a new root, namespaces, Landlock, seccomp); the Landlock-only rung less (see
/// `zeroclaw doctor --backend landlock`); `none` nothing.
fn strength(rung: &str) -> Option<u8> {
    match rung {
        "none" => Some(0),
        "landlock" => Some(1),
        "seatbelt" => Some(2),
        "bubblewrap" | "namespaces" => Some(3),
        _ => None,
    }
}

/// The declaration for `policy`'s children in `cwd` (`None`: the session's cwd, as `doctor`).
pub fn declaration(policy: &Policy, cwd: Option<&Path>) -> Value {
    let r = report(policy.backend, policy.allow_partial);
    let rung = r.chosen.map(Backend::name);
    let confined = matches!(
        r.chosen,
        Some(Backend::Namespaces | Backend::Bubblewrap | Backend::Landlock)
    );
    let fs_isolation = match r.chosen {
        Some(Backend::Namespaces | Backend::Bubblewrap) => "fullRoot",
        Some(Backend::Landlock | Backend::Seatbelt) => "workspace",
        _ => "none",
    };
    let net_isolation = match (r.chosen, network_mode(policy)) {
        (None | Some(Backend::None), _) | (_, "allow") => "none",
        (_, "proxy") => "restricted",
        _ => "denyAll",
    };
    let lines = describe::lines(policy, cwd, r.chosen);
    json!({
        "rung": rung,
        "requested": r.requested,
        "error": r.error,
        "enforced": r.guarantees,
        "missing": r.missing,
        "notEnforced": describe::not_enforced(policy, r.chosen),
        "network": network_mode(policy),
        "lines": lines,
        // Each confined call proves its confinement from inside before its command runs
        // (the sandbox crate's `helper/inside_check.rs`), or fails.
        "insideCheck": confined,
        "guarantees": {
            "fsIsolation": fs_isolation,
            "netIsolation": net_isolation,
            "processCaps": r.chosen.is_some_and(|b| b != Backend::None),
        },
    })
}

/// Refuses (-32602) a `session/new` whose `_meta.zeroclaw.requireSandbox` this host cannot
/// meet for `policy`; no requirement, no check.
pub fn check_required(params: &Value, policy: &Policy) -> Result<(), RpcError> {
    let Some(required) = params
        .get("_meta")
        .and_then(|m| m.get("zeroclaw"))
        .and_then(|z| z.get("requireSandbox"))
    else {
        return Ok(());
    };
    let Some(required) = required.as_object() else {
        return Err(RpcError::invalid_params(
            "_meta.zeroclaw.requireSandbox must be an object ({\"rung\": ..., \"network\": ...})",
        ));
    };
    let declared = declaration(policy, None);
    let mut unmet = Vec::new();
    for (key, value) in required {
        match (key.as_str(), value.as_str()) {
            ("rung", Some(want)) => {
                let need = strength(want).ok_or_else(|| {
                    RpcError::invalid_params(format!(
                        "_meta.zeroclaw.requireSandbox.rung: unknown rung {want:?} (namespaces, \
                         bubblewrap, seatbelt, landlock, none)"
                    ))
                })?;
                let have = declared["rung"].as_str();
                if have.and_then(strength).unwrap_or(0) < need || (need > 0 && have.is_none()) {
                    unmet.push(format!(
                        "rung {want} or stronger, but this host gives {}",
                        have.unwrap_or("no usable sandbox")
                    ));
                }
            }
            ("network", Some(want)) => {
                let most = openness(want).ok_or_else(|| {
                    RpcError::invalid_params(format!(
                        "_meta.zeroclaw.requireSandbox.network: unknown mode {want:?} (deny, \
                         proxy, allow)"
                    ))
                })?;
                let have = network_mode(policy);
                let confined = declared["guarantees"]["processCaps"].as_bool() == Some(true);
                if openness(have).unwrap_or(u8::MAX) > most || (most < 2 && !confined) {
                    unmet.push(format!(
                        "network {want} at most, but this session's is {have}{}",
                        if confined {
                            ""
                        } else {
                            " and nothing confines it"
                        }
                    ));
                }
            }
            _ => {
                return Err(RpcError::invalid_params(format!(
                    "_meta.zeroclaw.requireSandbox.{key}: not a requirement zeroclaw can check \
                     (rung, network: strings)"
                ))
                .with_data(unsatisfiable(declared)));
            }
        }
    }
    if unmet.is_empty() {
        return Ok(());
    }
    Err(RpcError::invalid_params(format!(
        "the required sandbox cannot be given here: {} (see `zeroclaw doctor`)",
        unmet.join("; ")
    ))
    .with_data(unsatisfiable(declared)))
}

fn unsatisfiable(declared: Value) -> Value {
    let mut data = Map::new();
    data.insert("reason".into(), UNSATISFIABLE.into());
    data.insert("sandbox".into(), declared);
    Value::Object(data)
}

/// Adds the declaration to `answer` under `_meta.zeroclaw.sandbox`.
pub fn extend_answer(answer: &mut Value, declaration: Value) {
    let Some(obj) = answer.as_object_mut() else {
        return;
    };
    let meta = obj.entry("_meta").or_insert_with(|| json!({}));
    if !meta.is_object() {
        *meta = json!({});
    }
    let zeroclaw = meta
        .as_object_mut()
        .map(|m| m.entry("zeroclaw").or_insert_with(|| json!({})));
    if let Some(Value::Object(z)) = zeroclaw {
        z.insert("sandbox".into(), declaration);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ladder_orders_rungs_and_network_modes() {
        assert!(strength("namespaces") > strength("landlock"));
        assert_eq!(strength("bubblewrap"), strength("namespaces"));
        assert!(strength("landlock") > strength("none"));
        assert_eq!(strength("chroot"), None);
        assert!(openness("deny") < openness("proxy"));
        assert!(openness("proxy") < openness("allow"));
    }

    #[test]
    fn the_declaration_goes_under_meta_zeroclaw_keeping_what_is_there() {
        let mut answer = json!({"sessionId": "s", "_meta": {"zeroclaw": {"x": 1}}});
        extend_answer(&mut answer, json!({"rung": "namespaces"}));
        assert_eq!(answer["_meta"]["zeroclaw"]["x"], 1);
        assert_eq!(answer["_meta"]["zeroclaw"]["sandbox"]["rung"], "namespaces");
    }
}
