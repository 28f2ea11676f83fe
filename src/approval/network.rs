//! Supervised network approvals: the egress proxy's [`Approver`] for one tool call. A name
//! outside `allow_domains` is asked about with `session/request_permission` through the same
//! approval path as tool calls ([`gate::ask_recorded`]); "Always allow" is remembered for
//! the session's agent as `network:HOST` ([`super::agent`]: every session of that agent,
//! also after a restart on the same store, none of another agent's), so later connections to
//! that host are admitted without asking. (Tool "Always allow" answers stay per session.) A
//! `network:HOST` in a session's own approvals (stored with a call's result by older versions)
//! still admits the host in that session.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::json;

use super::gate::{self, Call};
use crate::config::AutonomyLevel;
use crate::egress::Rule;
use crate::egress::proxy::{Approval, Approver};

/// The approval key of `host` in the session's approvals.
pub fn approval_key(host: &str) -> String {
    format!("network:{host}")
}

/// The approver of a call in a `supervised` session (policy checks on); `None` otherwise
/// (`full` refuses unlisted names without asking, `readonly` has no network). It keeps a copy
/// of the call (the proxy asks while the call runs).
pub fn for_call<C: Call + Clone + 'static>(ctx: &C) -> Option<Arc<dyn Approver>> {
    let policy = ctx.policy();
    if !policy.checks || policy.level != AutonomyLevel::Supervised {
        return None;
    }
    Some(Arc::new(NetworkApprover { ctx: ctx.clone() }))
}

/// Asks the session's client about the connections of one call.
struct NetworkApprover<C> {
    ctx: C,
}

impl<C: Call> Approver for NetworkApprover<C> {
    fn approve<'a>(
        &'a self,
        name: &'a str,
        port: u16,
    ) -> Pin<Box<dyn Future<Output = Approval> + Send + 'a>> {
        Box::pin(async move {
            let ctx = &self.ctx;
            let key = approval_key(name);
            if ctx.approvals().contains(&key) || ctx.agent_approvals().contains(&key).await {
                return Ok("allowed always".to_owned());
            }
            let target = format!("{name}:{port}");
            let params = question(ctx, &target);
            let event = gate::call_event(ctx, "approval", "network").with("target", target);
            let answer = tokio::select! {
                answer = gate::ask_recorded(ctx, params, event) => answer,
                _ = ctx.cancel().cancelled() => {
                    return Err(Rule::NotApproved("the turn was cancelled".into()));
                }
            };
            match answer {
                Ok(option) if option == "allow-once" => Ok("allowed once".to_owned()),
                Ok(option) if option == "allow-always" => {
                    ctx.agent_approvals().insert(&key).await;
                    Ok("allowed always".to_owned())
                }
                Ok(_) => Err(Rule::NotApproved("the user rejected it".into())),
                Err(e) => {
                    let why = e.0.strip_prefix("denied: ").unwrap_or(&e.0).to_owned();
                    Err(Rule::NotApproved(why))
                }
            }
        })
    }
}

/// The `session/request_permission` params (without `sessionId`) for `target` (`host:port`).
fn question(ctx: &impl Call, target: &str) -> serde_json::Value {
    let title = format!("Allow network access to {target}?");
    json!({
        "options": gate::approval_options(),
        "toolCall": {
            "toolCallId": format!("approval-{}-network-{target}", ctx.call_id()),
            "title": title,
            "kind": "fetch",
            "status": "pending",
            "rawInput": {"network": target},
            "content": [{"type": "content", "content": {"type": "text", "text": title}}],
        },
    })
}
