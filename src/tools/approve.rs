//! The approval gate every tool passes before it runs: the policy's [`Decision`], and when it
//! says ask, a `session/request_permission` with the spec's three options. Only the client's
//! answer approves; "Always allow" is remembered for the session.

use serde_json::{Value, json};

use super::{ToolContext, ToolError, ToolKind};
use crate::approval::{Action, Decision};
use crate::audit;

/// The options of an approval question (spec: `session/request_permission`).
pub fn approval_options() -> Value {
    json!([
        {"optionId": "allow-once", "name": "Allow once", "kind": "allow_once"},
        {"optionId": "allow-always", "name": "Always allow", "kind": "allow_always"},
        {"optionId": "reject-once", "name": "Reject", "kind": "reject_once"},
    ])
}

/// Runs the policy for this call and asks the client when it must; `Err` is the reason the
/// call is not executed. The decision and the answer are audit records, written before the
/// call runs (one that cannot be written refuses the call).
pub async fn gate(
    ctx: &ToolContext,
    tool: &str,
    kind: ToolKind,
    action: Action,
    summary: &str,
) -> Result<(), ToolError> {
    let (decision, rule) =
        crate::approval::explain(&ctx.env.policy, tool, action, &ctx.env.approvals);
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
        Decision::Deny(reason) => Err(ToolError(reason)),
        Decision::Ask => {
            let params = question(ctx, tool, kind, summary, approval_options());
            let event = call_event(ctx, "approval", tool);
            match ask_recorded(ctx, params, event).await?.as_str() {
                "allow-once" => Ok(()),
                "allow-always" => {
                    ctx.env.approvals.insert(tool);
                    Ok(())
                }
                _ => Err(ToolError(format!(
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
    ctx: &ToolContext,
    params: Value,
    event: audit::Event,
) -> Result<String, ToolError> {
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
fn event_kind(answer: &Result<String, ToolError>) -> &'static str {
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
pub fn call_event(ctx: &ToolContext, kind: &str, tool: &str) -> audit::Event {
    let subject = audit::tool::Subject::current();
    let tool = match (tool, &subject) {
        ("", Some(subject)) => Some(subject.tool.clone()),
        ("", None) => None,
        (tool, _) => Some(tool.to_owned()),
    };
    let event = audit::Event::new(kind)
        .with("session", ctx.session_id.as_str())
        .with("tool_call_id", ctx.call_id.as_str())
        .with("principal", ctx.env.audit.principal.clone())
        .with("agent", ctx.env.audit.agent.as_str())
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
pub async fn record_start(ctx: &ToolContext) -> Result<(), ToolError> {
    audit(call_event(ctx, "tool.start", "")).await
}

/// Records a refusal of the call (`policy.decision` with decision `deny`, `rule` and the
/// reason) and returns the reason as the call's error; when the record cannot be written,
/// the error says so (the call is refused either way).
pub async fn refuse(ctx: &ToolContext, tool: &str, rule: &str, reason: String) -> ToolError {
    let event = call_event(ctx, "policy.decision", tool)
        .with("decision", "deny")
        .with("rule", rule)
        .with("reason", reason.as_str());
    match audit(event).await {
        Ok(()) => ToolError(reason),
        Err(e) => e,
    }
}

/// The policy's path check ([`crate::policy::Policy::check_path`]) for `tool`: a refused
/// path is recorded with its rule before the call fails.
pub async fn check_path(
    ctx: &ToolContext,
    tool: &str,
    raw: &str,
    access: crate::policy::Access,
) -> Result<std::path::PathBuf, ToolError> {
    match ctx.env.policy.check_path(&ctx.cwd, raw, access) {
        Ok(path) => Ok(path),
        Err(denied) => Err(refuse(ctx, tool, denied.rule, denied.reason).await),
    }
}

/// Records `event`; a record that cannot be written refuses the call.
pub async fn audit(event: audit::Event) -> Result<(), ToolError> {
    audit::record(event).await.map_err(|e| {
        ToolError(format!(
            "audit: the call is refused because its audit record cannot be written ({e})"
        ))
    })
}

/// The `session/request_permission` params (without `sessionId`).
pub fn question(
    ctx: &ToolContext,
    tool: &str,
    kind: ToolKind,
    summary: &str,
    options: Value,
) -> Value {
    json!({
        "options": options,
        "toolCall": {
            "toolCallId": format!("approval-{}", ctx.call_id),
            "title": format!("Approve {tool}?"),
            "kind": kind.as_str(),
            "status": "pending",
            "rawInput": {"tool": tool, "summary": summary},
            "content": [{"type": "content", "content": {"type": "text", "text": summary}}],
        },
    })
}

/// Asks and returns the selected `optionId`; a dismissed, unanswered or failed question is
/// an error (the call is denied).
pub async fn ask(ctx: &ToolContext, params: Value) -> Result<String, ToolError> {
    let answer = ctx.env.asker.ask(params).await.map_err(|e| {
        ToolError(format!(
            "denied: the permission request got no answer ({e})"
        ))
    })?;
    let outcome = &answer["outcome"];
    match outcome["outcome"].as_str() {
        Some("selected") => outcome["optionId"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| ToolError("denied: the client's answer has no optionId".into())),
        Some("cancelled") => Err(ToolError(
            "denied: the permission request was cancelled".into(),
        )),
        _ => Err(ToolError(format!(
            "denied: the client's answer is not a permission outcome: {answer}"
        ))),
    }
}
