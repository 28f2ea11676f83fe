//! The session's slash commands: announced with an `available_commands_update` once the
//! `session/new` answer is queued, and run when a prompt is exactly one text starting with one of them.
//! `/mode [level]` shows or sets the session's mode ([`super::modes`]); `/network` shows the
//! effective network policy of the session's tools ([`network_policy`]); `/sandbox` the
//! doctor's summary with what the session's children read, write and reach
//! ([`crate::policy::describe`]); `/compact` has the model summarise the history
//! and keeps that summary as the session's only history entry (stored, and what a replay
//! shows). Only `/compact` changes the history; the other commands' exchanges are not stored.
//! Any other text starting with `/` is an ordinary prompt.

use serde_json::{Value, json};

use super::session::Session;
use super::{Connection, modes};
use crate::agent::{Entry, StopReason, TurnRequest, run_turn};
use crate::policy::{Policy, describe};
use crate::rpc::{Peer, RpcError};
use crate::tools::ToolContext;

/// What the prompt handler does next.
pub enum Flow {
    /// The prompt was a command; this is its answer.
    Answered(Result<Value, RpcError>),
    /// An ordinary prompt: run the turn.
    Turn(TurnRequest),
}

/// The `availableCommands` of the update.
pub fn available() -> Value {
    json!([
        {"name": "mode", "description": "Show or set this session's autonomy mode",
         "input": {"hint": "readonly | supervised | full"}},
        {"name": "network", "description": "Show the network policy of this session's tools"},
        {"name": "sandbox", "description": "Show how this session's tools are confined (the doctor's summary)"},
        {"name": "compact", "description": "Summarise the conversation so far into one entry, through the model"},
    ])
}

/// Announces the commands once the current request's answer is queued.
pub fn announce_after_response(peer: &Peer, session_id: &str) {
    peer.release_after_response(Announce {
        peer: peer.clone(),
        session_id: session_id.to_owned(),
    });
}

struct Announce {
    peer: Peer,
    session_id: String,
}

impl Drop for Announce {
    /// Runs right after the answer is queued, so the update directly follows it.
    fn drop(&mut self) {
        let update =
            json!({"sessionUpdate": "available_commands_update", "availableCommands": available()});
        let params = json!({"sessionId": self.session_id, "update": update});
        self.peer.notify_now("session/update", params);
    }
}

/// The effective network policy of the session's tool commands, as `/network` shows it.
pub fn network_policy(policy: &Policy) -> String {
    if let Some(egress) = &policy.egress {
        format!(
            "Network for tool commands: through zeroclaw's egress proxy ([sandbox.network] \
             mode = \"proxy\"): {}",
            egress.describe().join("; ")
        )
    } else if policy.network {
        "Network for tool commands: allowed ([autonomy] network = \"allow\"): commands \
         run with the host's network."
            .to_owned()
    } else {
        "Network for tool commands: denied ([autonomy] network = \"deny\"): commands run \
         without any network access. (The model provider is reached by zeroclaw itself.)"
            .to_owned()
    }
}

/// Runs the prompt as a command when it is one; otherwise hands the turn back.
pub async fn intercept(
    conn: &Connection,
    peer: &Peer,
    session: &Session,
    ctx: &ToolContext,
    request: TurnRequest,
) -> Flow {
    let text = request.user_text.trim();
    let Some(rest) = text.strip_prefix('/') else {
        return Flow::Turn(request);
    };
    let (name, arg) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let arg = arg.trim();
    let output = match name {
        "mode" => mode(conn, peer, session, arg).await,
        "network" => network_policy(&ctx.env.policy),
        "sandbox" => sandbox(&ctx.env.policy, session).await,
        "compact" => return Flow::Answered(compact(conn, peer, session, ctx, request).await),
        _ => return Flow::Turn(request),
    };
    Flow::Answered(Ok(say(peer, session, output).await))
}

/// Sends `text` as the agent's message and returns the prompt answer carrying it.
async fn say(peer: &Peer, session: &Session, text: String) -> Value {
    let update =
        json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}});
    peer.notify(
        "session/update",
        json!({"sessionId": session.id, "update": update}),
    )
    .await;
    json!({"sessionId": session.id, "stopReason": "end_turn", "content": text})
}

async fn mode(conn: &Connection, peer: &Peer, session: &Session, arg: &str) -> String {
    let config = conn.server.config();
    if arg.is_empty() {
        let modes = modes::modes(&config, session);
        let ids: Vec<&str> = modes["availableModes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|m| m["id"].as_str())
            .collect();
        return format!(
            "Mode: {} (available: {})",
            modes["currentModeId"].as_str().unwrap_or_default(),
            ids.join(", ")
        );
    }
    match modes::choose(conn, peer, session, arg).await {
        Ok(level) => format!(
            "Mode set to {}: it applies from the next tool call.",
            modes::id(level)
        ),
        Err(error) => format!("Mode unchanged: {}", error.message),
    }
}

async fn sandbox(policy: &Policy, session: &Session) -> String {
    let (choice, allow_partial) = (policy.backend, policy.allow_partial);
    let report = tokio::task::spawn_blocking(move || {
        zeroclaw_sandbox::detect::report(choice, allow_partial)
    })
    .await;
    let Ok(report) = report else {
        return "The sandbox report could not be made.".to_owned();
    };
    let mut text = format!(
        "Sandbox of this session (level {}, cwd {}):\nbackend: ",
        modes::id(policy.level),
        session.cwd.display()
    );
    match (&report.chosen, &report.error) {
        (Some(chosen), _) => text += &format!("{chosen} (requested {})\n", report.requested),
        (None, Some(error)) => text += &format!("NONE USABLE, nothing runs: {error}\n"),
        (None, None) => text += "none\n",
    }
    // What this session's children read, write and reach; the report's own lines on those
    // describe the sandbox's default profile, not this session's.
    for line in describe::lines(policy, Some(&session.cwd), report.chosen) {
        text += &format!("- {line}\n");
    }
    for guarantee in report
        .guarantees
        .iter()
        .filter(|g| !describe::replaces(&g.what))
    {
        text += &format!("- {} [{}]\n", guarantee.what, guarantee.mechanism);
    }
    for missing in &report.missing {
        text += &format!("- missing: {missing}\n");
    }
    text + &network_policy(policy)
}

const COMPACT_INSTRUCTION: &str = "Summarise our conversation so far for your own later use: \
    the goals, the decisions taken, the files and commands involved and what is left to do. \
    Answer with the summary only; do not call tools.";

/// The label of a compacted history's only entry.
pub const SUMMARY_HEADING: &str = "Summary of the earlier conversation:";

async fn compact(
    conn: &Connection,
    peer: &Peer,
    session: &Session,
    ctx: &ToolContext,
    mut request: TurnRequest,
) -> Result<Value, RpcError> {
    if request.prior.is_empty() {
        return Ok(say(peer, session, "Nothing to compact yet.".to_owned()).await);
    }
    request.user_text = COMPACT_INSTRUCTION.to_owned();
    request.max_tool_iterations = 0;
    let outcome = run_turn(request, &conn.server.tools, ctx)
        .await
        .map_err(|e| RpcError::internal(format!("compaction failed: {e}")))?;
    let summary = outcome.content.trim();
    if outcome.stop_reason != StopReason::EndTurn || summary.is_empty() {
        let stop = outcome.stop_reason.as_str();
        return Ok(json!({"sessionId": session.id, "stopReason": stop,
            "content": "The history was not compacted: the model gave no summary."}));
    }
    let entry = Entry::Assistant {
        text: format!("{SUMMARY_HEADING}\n{summary}"),
    };
    if let Some(store) = &conn.server.store {
        store
            .replace_history(&session.id, vec![entry.to_stored()])
            .await
            .map_err(|e| RpcError::internal(format!("storing the summary failed: {e}")))?;
    }
    session.replace_history(vec![entry]);
    Ok(json!({"sessionId": session.id, "stopReason": "end_turn", "content": summary}))
}
