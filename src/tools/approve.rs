//! The approval gate every tool passes before it runs: the policy's [`Decision`], and when it
//! says ask, a `session/request_permission` with the spec's three options. Only the client's
//! answer approves; "Always allow" is remembered for the session.

use serde_json::{Value, json};

use super::{ToolContext, ToolError, ToolKind};
use crate::policy::Decision;
use crate::policy::approval::Action;

/// The options of an approval question (spec: `session/request_permission`).
pub fn approval_options() -> Value {
    json!([
        {"optionId": "allow-once", "name": "Allow once", "kind": "allow_once"},
        {"optionId": "allow-always", "name": "Always allow", "kind": "allow_always"},
        {"optionId": "reject-once", "name": "Reject", "kind": "reject_once"},
    ])
}

/// Runs the policy for this call and asks the client when it must; `Err` is the reason the
/// call is not executed.
pub async fn gate(
    ctx: &ToolContext,
    tool: &str,
    kind: ToolKind,
    action: Action,
    summary: &str,
) -> Result<(), ToolError> {
    match ctx.env.policy.decide(tool, action, &ctx.env.approvals) {
        Decision::Allow => Ok(()),
        Decision::Deny(reason) => Err(ToolError(reason)),
        Decision::Ask => {
            let params = question(ctx, tool, kind, summary, approval_options());
            match ask(ctx, params).await?.as_str() {
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
