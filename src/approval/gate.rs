//! The approval gate every tool passes before it runs ([`pass`]): the policy's [`Decision`],
//! and when it says ask, a `session/request_permission` with the spec's three options
//! ([`ask_recorded`], through the client's [`Asker`]). Only the client's answer approves;
//! "Always allow" is remembered for the session. The gate also owns the policy's path check
//! of a call ([`check_path`]), its refusals ([`refuse`]) and the audit records that let a call
//! go on (`policy.decision`, `approval`, `tool.start`; [`call_event`], [`audit()`]).
//!
//! The gate sees a tool call through [`Call`] (the tools' `ToolContext` implements it) and
//! answers [`Refused`] (the tools turn it into their `ToolError`): `tools` uses the gate, the
//! gate uses nothing of `tools`.

use std::path::{Path, PathBuf};

use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::agent::AgentApprovals;
use super::decision::{self, Action, Approvals, Decision};
use crate::audit;
use crate::policy::{Access, Policy};

/// A tool call as the gate sees it (implemented by the tools' `ToolContext`): the session and
/// call it belongs to, the session's policy and remembered answers, and the way to ask.
pub trait Call: Send + Sync {
    fn session_id(&self) -> &str;
    /// The id of the call being executed (empty outside a call).
    fn call_id(&self) -> &str;
    /// The session's canonical working directory (relative paths resolve against it).
    fn cwd(&self) -> &Path;
    /// The session's policy for this call.
    fn policy(&self) -> &Policy;
    /// The session's "Always allow" answers.
    fn approvals(&self) -> &Approvals;
    /// The "Always allow" answers of the session's agent (network hosts).
    fn agent_approvals(&self) -> &dyn AgentApprovals;
    /// The way to ask the client.
    fn asker(&self) -> &dyn Asker;
    /// Who the session's calls are recorded for in the audit log.
    fn audit_scope(&self) -> &audit::tool::Scope;
    /// Cancelled when the turn is.
    fn cancel(&self) -> &CancellationToken;
}

/// Asks the client a `session/request_permission` question; `params` lacks `sessionId`.
/// Answers the `result` object, or an error text (no answer in time, connection gone).
pub trait Asker: Send + Sync {
    fn ask(&self, params: Value) -> BoxFuture<'_, Result<Value, String>>;
}

/// Why the gate does not let a call run; the message is written for the model to act on (the
/// tools answer it as the call's `ToolError`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

/// The options of an approval question (spec: `session/request_permission`).
pub fn approval_options() -> Value {
    json!([
        {"optionId": "allow-once", "name": "Allow once", "kind": "allow_once"},
        {"optionId": "allow-always", "name": "Always allow", "kind": "allow_always"},
        {"optionId": "reject-once", "name": "Reject", "kind": "reject_once"},
    ])
}

/// Runs the policy for this call and asks the client when it must (`kind`: the ACP tool kind
/// the question shows); `Err` is the reason the call is not executed. The decision and the
/// answer are audit records, written before the call runs (one that cannot be written
/// refuses the call).
pub async fn pass(
    ctx: &impl Call,
    tool: &str,
    kind: &str,
    action: Action,
    summary: &str,
) -> Result<(), Refused> {
    let (decision, rule) = decision::explain(ctx.policy(), tool, action, ctx.approvals());
    let (name, reason) = match &decision {
        Decision::Allow => ("allow", None),
        Decision::Ask => ("ask", None),
        Decision::Deny(reason) => ("deny", Some(reason.clone())),
    };
    let event = call_event(ctx, "policy.decision", tool)
        .with("decision", name)
        .with("rule", rule)
        .with("reason", reason);
    audit(event).await?;
    match decision {
        Decision::Allow => Ok(()),
        Decision::Deny(reason) => Err(Refused(reason)),
        Decision::Ask => {
            let params = question(ctx, tool, kind, summary, approval_options());
            let event = call_event(ctx, "approval", tool);
            match ask_recorded(ctx, params, event).await?.as_str() {
                "allow-once" => Ok(()),
                "allow-always" => {
                    ctx.approvals().insert(tool);
                    Ok(())
                }
                _ => Err(Refused(format!(
                    "denied by user: the user rejected {tool} ({summary}); do not retry it, \
                     ask the user what to do instead"
                ))),
            }
        }
    }
}

/// Asks `params` and records the answer (the approval metrics, and `event` with the answer
/// as an audit record, written before anything runs); the selected `optionId`. Every
/// approval question (a tool call's, a supervised network connection's) goes through here.
pub async fn ask_recorded(
    ctx: &impl Call,
    params: Value,
    event: audit::Event,
) -> Result<String, Refused> {
    let asked_ms = crate::store::now_ms();
    crate::metrics::get().approval("asked");
    let answer = ask(ctx, params).await;
    let event = event.with("asked_ms", asked_ms);
    let event = match &answer {
        Ok(option) => event
            .with("option_id", option.as_str())
            .with("option_kind", event_kind(&answer)),
        Err(e) => event
            .with("option_kind", "none")
            .with("error", e.0.as_str()),
    };
    crate::metrics::get().approval(event_kind(&answer));
    audit(event).await?;
    answer
}

/// The option kind of an answer (`none` for no answer).
fn event_kind(answer: &Result<String, Refused>) -> &'static str {
    match answer.as_ref().map(String::as_str) {
        Ok("allow-once") => "allow_once",
        Ok("allow-always") => "allow_always",
        Ok(_) => "reject_once",
        Err(_) => "none",
    }
}

/// An audit event about the call `ctx` runs (`tool` empty where the caller does not know it:
/// the call's own tool then), with the command or path the call names and its arguments'
/// digest.
pub fn call_event(ctx: &impl Call, kind: &str, tool: &str) -> audit::Event {
    let subject = audit::tool::Subject::current();
    let tool = match (tool, &subject) {
        ("", Some(subject)) => Some(subject.tool.clone()),
        ("", None) => None,
        (tool, _) => Some(tool.to_owned()),
    };
    let event = audit::Event::new(kind)
        .with("session", ctx.session_id())
        .with("tool_call_id", ctx.call_id())
        .with("principal", ctx.audit_scope().principal.clone())
        .with("agent", ctx.audit_scope().agent.as_str())
        .with("tool", tool);
    match subject {
        Some(subject) => subject.describe(event),
        None => event,
    }
}

/// Records that the call's work is about to start (`tool.start`, with the command or path
/// and the arguments' digest): written before a confined child runs (or an MCP server is
/// called), so what ran is in the log even when its end cannot be recorded; a record that
/// cannot be written refuses the call.
pub async fn record_start(ctx: &impl Call) -> Result<(), Refused> {
    audit(call_event(ctx, "tool.start", "")).await
}

/// Records a refusal of the call (`policy.decision` with decision `deny`, `rule` and the
/// reason) and returns the reason as the call's error; when the record cannot be written,
/// the error says so (the call is refused either way).
pub async fn refuse(ctx: &impl Call, tool: &str, rule: &str, reason: String) -> Refused {
    let event = call_event(ctx, "policy.decision", tool)
        .with("decision", "deny")
        .with("rule", rule)
        .with("reason", reason.as_str());
    match audit(event).await {
        Ok(()) => Refused(reason),
        Err(e) => e,
    }
}

/// The policy's path check ([`crate::policy::Policy::check_path`]) for `tool`: a refused
/// path is recorded with its rule before the call fails.
pub async fn check_path(
    ctx: &impl Call,
    tool: &str,
    raw: &str,
    access: Access,
) -> Result<PathBuf, Refused> {
    match ctx.policy().check_path(ctx.cwd(), raw, access) {
        Ok(path) => Ok(path),
        Err(denied) => Err(refuse(ctx, tool, denied.rule, denied.reason).await),
    }
}

/// Records `event`; a record that cannot be written refuses the call.
pub async fn audit(event: audit::Event) -> Result<(), Refused> {
    audit::record(event).await.map_err(|e| {
        Refused(format!(
            "audit: the call is refused because its audit record cannot be written ({e})"
        ))
    })
}

/// The `session/request_permission` params (without `sessionId`); `kind` is the ACP tool
/// kind the client shows.
pub fn question(ctx: &impl Call, tool: &str, kind: &str, summary: &str, options: Value) -> Value {
    json!({
        "options": options,
        "toolCall": {
            "toolCallId": format!("approval-{}", ctx.call_id()),
            "title": format!("Approve {tool}?"),
            "kind": kind,
            "status": "pending",
            "rawInput": {"tool": tool, "summary": summary},
            "content": [{"type": "content", "content": {"type": "text", "text": summary}}],
        },
    })
}

/// Asks and returns the selected `optionId`; a dismissed, unanswered or failed question is
/// an error (the call is denied).
pub async fn ask(ctx: &impl Call, params: Value) -> Result<String, Refused> {
    let answer = ctx.asker().ask(params).await.map_err(|e| {
        Refused(format!(
            "denied: the permission request got no answer ({e})"
        ))
    })?;
    let outcome = &answer["outcome"];
    match outcome["outcome"].as_str() {
        Some("selected") => outcome["optionId"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| Refused("denied: the client's answer has no optionId".into())),
        Some("cancelled") => Err(Refused(
            "denied: the permission request was cancelled".into(),
        )),
        _ => Err(Refused(format!(
            "denied: the client's answer is not a permission outcome: {answer}"
        ))),
    }
}
