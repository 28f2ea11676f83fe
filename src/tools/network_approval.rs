//! Supervised network approvals: the egress proxy's [`Approver`] for one tool call. A name
//! outside `allow_domains` is asked about with `session/request_permission` through the same
//! approval path as tool calls ([`approve::ask_recorded`]); "Always allow" is remembered for
//! the session's agent as `network:HOST` ([`AgentApprovals`]: every session of that agent,
//! also after a restart on the same store, none of another agent's), so later connections to
//! that host are admitted without asking. (Tool "Always allow" answers stay per session.) A
//! `network:HOST` in a session's own approvals (stored with a call's result by older versions)
//! still admits the host in that session.

use std::collections::BTreeSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use serde_json::json;

use super::{BoxFuture, ToolContext, approve};
use crate::config::AutonomyLevel;
use crate::egress::Rule;
use crate::egress::proxy::{Approval, Approver};

/// The approval key of `host` in the session's approvals.
pub fn approval_key(host: &str) -> String {
    format!("network:{host}")
}

/// The "Always allow" answers of one agent, shared by its sessions (kept by the client-facing
/// layer, in the store when there is one).
pub trait AgentApprovals: Send + Sync {
    fn contains<'a>(&'a self, key: &'a str) -> BoxFuture<'a, bool>;
    fn insert<'a>(&'a self, key: &'a str) -> BoxFuture<'a, ()>;
}

/// Answers kept in memory only (a tool environment without a client).
#[derive(Default)]
pub struct Remembered(Mutex<BTreeSet<String>>);

impl AgentApprovals for Remembered {
    fn contains<'a>(&'a self, key: &'a str) -> BoxFuture<'a, bool> {
        let found = self
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(key);
        Box::pin(std::future::ready(found))
    }

    fn insert<'a>(&'a self, key: &'a str) -> BoxFuture<'a, ()> {
        let mut keys = self.0.lock().unwrap_or_else(|e| e.into_inner());
        keys.insert(key.to_owned());
        Box::pin(std::future::ready(()))
    }
}

/// The approver of a call in a `supervised` session (policy checks on); `None` otherwise
/// (`full` refuses unlisted names without asking, `readonly` has no network).
pub fn for_call(ctx: &ToolContext) -> Option<Arc<dyn Approver>> {
    let policy = &ctx.env.policy;
    if !policy.checks || policy.level != AutonomyLevel::Supervised {
        return None;
    }
    Some(Arc::new(NetworkApprover {
        ctx: ToolContext {
            session_id: ctx.session_id.clone(),
            cwd: ctx.cwd.clone(),
            updates: ctx.updates.clone(),
            cancel: ctx.cancel.clone(),
            call_id: ctx.call_id.clone(),
            env: ctx.env.clone(),
        },
    }))
}

/// Asks the session's client about the connections of one call.
struct NetworkApprover {
    ctx: ToolContext,
}

impl Approver for NetworkApprover {
    fn approve<'a>(
        &'a self,
        name: &'a str,
        port: u16,
    ) -> Pin<Box<dyn Future<Output = Approval> + Send + 'a>> {
        Box::pin(async move {
            let ctx = &self.ctx;
            let key = approval_key(name);
            if ctx.env.approvals.contains(&key) || ctx.env.agent_approvals.contains(&key).await {
                return Ok("allowed always".to_owned());
            }
            let target = format!("{name}:{port}");
            let params = question(ctx, &target);
            let event = approve::call_event(ctx, "approval", "network").with("target", target);
            let answer = tokio::select! {
                answer = approve::ask_recorded(ctx, params, event) => answer,
                _ = ctx.cancel.cancelled() => {
                    return Err(Rule::NotApproved("the turn was cancelled".into()));
                }
            };
            match answer {
                Ok(option) if option == "allow-once" => Ok("allowed once".to_owned()),
                Ok(option) if option == "allow-always" => {
                    ctx.env.agent_approvals.insert(&key).await;
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
fn question(ctx: &ToolContext, target: &str) -> serde_json::Value {
    let title = format!("Allow network access to {target}?");
    json!({
        "options": approve::approval_options(),
        "toolCall": {
            "toolCallId": format!("approval-{}-network-{target}", ctx.call_id),
            "title": title,
            "kind": "fetch",
            "status": "pending",
            "rawInput": {"network": target},
            "content": [{"type": "content", "content": {"type": "text", "text": title}}],
        },
    })
}
