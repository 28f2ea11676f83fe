//! The record of one tool execution, and the trail a call leaves on its way: the sandbox
//! outcome (backend, enforcement report, exit, output size), noted by `tools::confine` in
//! the call's task and read back by the agent loop when the call ends; and the call's
//! [`Subject`] (its tool, the command or path it names, the digest of its arguments), which
//! every record written during the call carries.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use zeroclaw_sandbox::{End, ExitInfo, Outcome, Profile};

tokio::task_local! {
    static TRAIL: Arc<Mutex<Trail>>;
    static SUBJECT: Subject;
}

/// What one call is about: known to the agent loop, recorded with each of the call's records.
#[derive(Debug, Clone)]
pub struct Subject {
    pub tool: String,
    /// `command`, `path` or `pattern` and its value: the first the arguments name.
    pub target: Option<(&'static str, String)>,
    /// SHA-256 of the canonical encoding of all arguments.
    pub args_sha256: String,
}

impl Subject {
    pub fn of(tool: &str, args: &Value) -> Subject {
        Subject {
            tool: tool.to_owned(),
            target: target(args),
            args_sha256: super::chain::digest(args),
        }
    }

    /// The subject of the call running in this task, if any.
    pub fn current() -> Option<Subject> {
        SUBJECT.try_with(Subject::clone).ok()
    }

    /// `event` with the command or path and the arguments' digest.
    pub fn describe(&self, event: super::Event) -> super::Event {
        let event = event.with("args_sha256", self.args_sha256.as_str());
        match &self.target {
            Some((key, value)) => event.with(key, value.as_str()),
            None => event,
        }
    }
}

/// The command, path or pattern a call's arguments name (the first of these present).
fn target(args: &Value) -> Option<(&'static str, String)> {
    ["command", "path", "pattern"]
        .iter()
        .find_map(|k| args[*k].as_str().map(|v| (*k, v.to_owned())))
}

/// What the confined runs of one call reported (the last run wins), and what all of them
/// changed in the workspace (the transactional workspace's landings, in order).
#[derive(Debug, Default, Clone)]
pub struct Trail {
    pub sandbox: Option<Value>,
    pub changed: Vec<zeroclaw_sandbox::layer::Changed>,
    /// Changed paths the landings did not list (past `zeroclaw_sandbox::wire::LANDED_LISTED`).
    pub changed_more: u64,
}

/// Runs `call` (about `subject`) with a fresh trail and returns its output with what the
/// trail collected.
pub async fn traced<F: Future>(subject: Subject, call: F) -> (F::Output, Trail) {
    let trail = Arc::new(Mutex::new(Trail::default()));
    let output = SUBJECT
        .scope(subject, TRAIL.scope(trail.clone(), call))
        .await;
    let collected = trail.lock().unwrap_or_else(|e| e.into_inner()).clone();
    (output, collected)
}

/// Notes a confined run's outcome in the current call's trail (a no-op outside one).
pub fn note_outcome(profile: &Profile, outcome: &Outcome, took: Duration) {
    let exit = match outcome.exit {
        ExitInfo::Code(code) => json!({"code": code}),
        ExitInfo::Signal(signal) => json!({"signal": signal}),
    };
    let end = match outcome.end {
        End::Exited => "exited",
        End::TimedOut => "timed_out",
        End::Cancelled => "cancelled",
        End::OutputLimit => "output_limit",
        End::WriteLimit => "write_limit",
    };
    let enforcement = serde_json::to_value(&outcome.enforcement).unwrap_or(Value::Null);
    let profile_digest = serde_json::to_value(profile)
        .map(|p| super::chain::digest(&p))
        .unwrap_or_default();
    let sandbox = json!({
        "backend": outcome.enforcement.backend,
        "enforcement": enforcement,
        "profile_sha256": profile_digest,
        "exit": exit,
        "end": end,
        "duration_us": took.as_micros() as u64,
        "output_bytes": (outcome.stdout.len() + outcome.stderr.len()) as u64,
        "output_capped": outcome.truncated || outcome.end == End::OutputLimit,
    });
    let _ = TRAIL.try_with(|trail| {
        let mut trail = trail.lock().unwrap_or_else(|e| e.into_inner());
        trail.sandbox = Some(sandbox);
        trail
            .changed
            .extend(outcome.findings.changed.iter().cloned());
        trail.changed_more += outcome.findings.changed_more;
    });
}

/// Who ran a call and under what: known to the session, not to the tool.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    /// The authenticated principal (`uid:<n>`, `token:<name>`); `None` for stdio.
    pub principal: Option<String>,
    pub agent: String,
}

/// The fields of one tool execution record.
pub struct Execution<'a> {
    pub session: &'a str,
    pub turn: u64,
    pub call_id: &'a str,
    pub tool: &'a str,
    pub args: &'a Value,
    pub cwd: &'a std::path::Path,
    pub autonomy: crate::config::AutonomyLevel,
    pub scope: &'a Scope,
    pub status: &'a str,
    pub duration: Duration,
    pub trail: Trail,
}

impl Execution<'_> {
    /// The `tool.exec` event: the command or path named, never the other arguments (their
    /// SHA-256 over the canonical encoding stands for them).
    pub fn event(self) -> super::Event {
        let target = target(self.args);
        let mut event = super::Event::new("tool.exec")
            .with("session", self.session)
            .with("turn", self.turn)
            .with("tool_call_id", self.call_id)
            .with("principal", self.scope.principal.clone())
            .with("agent", self.scope.agent.as_str())
            .with("tool", self.tool)
            .with("args_sha256", super::chain::digest(self.args))
            .with("cwd", self.cwd.to_string_lossy().into_owned())
            .with(
                "autonomy",
                serde_json::to_value(self.autonomy).unwrap_or_default(),
            )
            .with("status", self.status)
            .with("duration_us", self.duration.as_micros() as u64)
            .with("sandbox", self.trail.sandbox);
        // Every path the call changed in the workspace, with the SHA-256 of what it wrote:
        // what a security team checks an agent's work against.
        if !self.trail.changed.is_empty() || self.trail.changed_more > 0 {
            event = event
                .with(
                    "changed",
                    serde_json::to_value(&self.trail.changed).unwrap_or_default(),
                )
                .with("changed_more", self.trail.changed_more);
        }
        if let Some((key, value)) = target {
            event = event.with(key, value);
        }
        event
    }
}
