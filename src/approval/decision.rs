//! The decision: whether a tool call runs, asks the client, or is refused ([`decide`]) — from
//! the session's [`Policy`] (its level, `always_ask`, `auto_approve`), the command's risk and
//! the session's remembered "Always allow" answers ([`Approvals`]). The policy is only read
//! here: it knows nothing of approval.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use crate::config::AutonomyLevel;
use crate::policy::{Policy, Risk};

/// What a call does, as far as approval is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Reads or searches.
    Read,
    /// Writes or edits a file.
    Write,
    /// A shell command of this risk.
    Shell(Risk),
}

/// The policy's verdict on one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow,
    /// Ask the client through `session/request_permission`.
    Ask,
    /// Refused without asking; the text is the model-facing reason.
    Deny(String),
}

/// The tools the user answered "Always allow" for, for the rest of the session (shared by
/// the session and its turns); the ones added since the last [`Approvals::take_new`] are
/// stored with the call's result.
#[derive(Debug, Clone, Default)]
pub struct Approvals(Arc<Mutex<ApprovalSet>>);

#[derive(Debug, Default)]
struct ApprovalSet {
    tools: BTreeSet<String>,
    new: Vec<String>,
}

impl Approvals {
    /// Approvals restored from a stored session.
    pub fn restored(tools: impl IntoIterator<Item = String>) -> Approvals {
        let set = ApprovalSet {
            tools: tools.into_iter().collect(),
            new: Vec::new(),
        };
        Approvals(Arc::new(Mutex::new(set)))
    }

    pub fn contains(&self, tool: &str) -> bool {
        self.lock().tools.contains(tool)
    }

    pub fn insert(&self, tool: &str) {
        let mut set = self.lock();
        if set.tools.insert(tool.to_owned()) {
            set.new.push(tool.to_owned());
        }
    }

    /// The tools approved since the last call.
    pub fn take_new(&self) -> Vec<String> {
        std::mem::take(&mut self.lock().new)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ApprovalSet> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn listed(list: &[String], tool: &str) -> bool {
    list.iter().any(|t| t == tool || t == "*")
}

/// The verdict of `policy` for `tool` doing `action`.
pub fn decide(policy: &Policy, tool: &str, action: Action, approvals: &Approvals) -> Decision {
    explain(policy, tool, action, approvals).0
}

/// The verdict with the rule that gave it (for the audit log): `policy_checks_off`,
/// `readonly_level`, `always_ask`, `auto_approve`, `allowed_always`, `supervised_level`
/// or `not_mutating`/`full_level`.
pub fn explain(
    policy: &Policy,
    tool: &str,
    action: Action,
    approvals: &Approvals,
) -> (Decision, &'static str) {
    if !policy.checks {
        return (Decision::Allow, "policy_checks_off");
    }
    let mutating = match action {
        Action::Read | Action::Shell(Risk::Low) => false,
        Action::Write | Action::Shell(_) => true,
    };
    if policy.level == AutonomyLevel::ReadOnly && mutating {
        let reason = match action {
            Action::Shell(risk) => format!(
                "denied by policy: autonomy level readonly refuses a {}-risk command \
                 (only read-only commands run)",
                risk.as_str()
            ),
            _ => format!("denied by policy: autonomy level readonly refuses {tool}"),
        };
        return (Decision::Deny(reason), "readonly_level");
    }
    if listed(&policy.always_ask, tool) {
        return (Decision::Ask, "always_ask");
    }
    if !mutating {
        return (Decision::Allow, "not_mutating");
    }
    if policy.level != AutonomyLevel::Supervised {
        return (Decision::Allow, "full_level");
    }
    if listed(&policy.auto_approve, tool) {
        (Decision::Allow, "auto_approve")
    } else if approvals.contains(tool) {
        (Decision::Allow, "allowed_always")
    } else {
        (Decision::Ask, "supervised_level")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn policy(level: AutonomyLevel) -> Policy {
        let dir = tempfile::tempdir().unwrap();
        let mut config = Config::load_with_env(dir.path(), Vec::new()).unwrap();
        config.autonomy.level = level;
        Policy::for_agent(&config, "default")
    }

    #[test]
    fn supervised_asks_for_writes_and_risky_commands_only() {
        let p = policy(AutonomyLevel::Supervised);
        let a = Approvals::default();
        assert_eq!(decide(&p, "file_read", Action::Read, &a), Decision::Allow);
        assert_eq!(
            decide(&p, "shell", Action::Shell(Risk::Low), &a),
            Decision::Allow
        );
        assert_eq!(
            decide(&p, "shell", Action::Shell(Risk::High), &a),
            Decision::Ask
        );
        assert_eq!(decide(&p, "file_write", Action::Write, &a), Decision::Ask);
        a.insert("file_write");
        assert_eq!(decide(&p, "file_write", Action::Write, &a), Decision::Allow);
    }

    #[test]
    fn readonly_refuses_and_full_never_asks() {
        let a = Approvals::default();
        let ro = policy(AutonomyLevel::ReadOnly);
        assert!(matches!(
            decide(&ro, "file_edit", Action::Write, &a),
            Decision::Deny(_)
        ));
        assert!(matches!(
            decide(&ro, "shell", Action::Shell(Risk::Medium), &a),
            Decision::Deny(_)
        ));
        let full = policy(AutonomyLevel::Full);
        assert_eq!(
            decide(&full, "shell", Action::Shell(Risk::High), &a),
            Decision::Allow
        );
        assert!(!full.workspace_only);
    }
}
