//! `session/prompt`: validates the prompt, claims the session (-32003 when busy), writes
//! attachments, sends images natively when the session's model takes them, runs the turn with `session/update`s streamed to the caller, stores the turn
//! in one transaction (with the digests of the turn's uploads and delivered files), then answers `{sessionId, stopReason, content}` with the turn's token
//! totals in `_meta.zeroclaw.usage`. A `$/cancel_request`
//! for the prompt cancels the turn exactly as `session/cancel` does.

use std::sync::Arc;

use serde_json::{Value, json};
use tracing::Instrument;

use super::session::Session;
use super::updates::PeerSink;
use super::{Connection, commands, config_options, embed, materialize, params, permission, titles};
use crate::agent::{TurnOutcome, TurnRequest, run_turn, usage};
use crate::rpc::{Peer, RpcError};
use crate::store::{NewTurn, SessionFile, StoreError};
use crate::tools::ToolContext;

pub async fn handle(conn: &Connection, peer: Peer, params: &Value) -> Result<Value, RpcError> {
    let id = params::session_id(params)?;
    let session = conn.session(id)?;
    let parts = materialize::parse(params::object(params)?.get("prompt"))?;
    let guard = session
        .start_turn()
        .map_err(|_| RpcError::session_busy(format!("session {id} is busy with another prompt")))?;
    // Taken before the first await, so the server never aborts a started turn half-way.
    let request_cancelled = peer.take_cancellation();
    let server = &conn.server;
    let fence = super::lease::for_turn(&server.leases, server.store.as_ref(), &session.id).await?;
    let title = titles::for_first_turn(&session, &parts);
    let mut prompt = materialize::write(parts, &session.cwd).await?;
    let models = config_options::models(conn, &session).await;
    let options = config_options::effective(&session, &models);
    let uploads = std::mem::take(&mut prompt.files);
    let request = turn_request(conn, &session, options, prompt).await?;
    let env = permission::tool_env(conn, &session, peer.clone());
    let delivered = embed::Recording::new(env.embedder.clone(), session.cwd.clone());
    let ctx = ToolContext {
        session_id: session.id.clone(),
        cwd: session.cwd.clone(),
        updates: Arc::new(PeerSink {
            peer: peer.clone(),
            session_id: session.id.clone(),
        }),
        cancel: guard.cancel.clone(),
        call_id: String::new(),
        env: env.with_embedder(delivered.clone()),
    };
    let request = match commands::intercept(conn, &peer, &session, &ctx, request).await {
        commands::Flow::Turn(request) => request,
        commands::Flow::Answered(answer) => {
            peer.release_after_response(guard.release());
            return answer;
        }
    };
    let traceparent = params.pointer("/_meta/traceparent").and_then(Value::as_str);
    let span = crate::telemetry::invoke_agent(
        &session.id,
        &session.agent_alias,
        &session.agent.model,
        traceparent,
    );
    let (tools, failed) = session
        .mcp
        .registry(
            &conn.server.tools,
            &ctx.env.policy,
            &session.cwd,
            crate::mcp::spec::operator_servers(&conn.server.config(), &session.agent_alias),
        )
        .await;
    // Told to the user, not only in the failed calls of the model that tries them.
    for line in failed {
        let content = json!({"type": "text", "text": format!("{line}\n")});
        let update = json!({"sessionUpdate": "agent_message_chunk", "content": content});
        peer.notify(
            "session/update",
            json!({"sessionId": session.id, "update": update}),
        )
        .await;
    }
    let turn = run_turn(request, &tools, &ctx).instrument(span);
    tokio::pin!(turn);
    let outcome = tokio::select! {
        biased;
        outcome = &mut turn => outcome,
        () = request_cancelled.cancelled() => {
            guard.cancel.cancel();
            turn.await
        }
    }
    .map_err(|error| {
        tracing::warn!(session = %session.id, %error, "turn failed");
        RpcError::internal(error.to_string())
    })?;
    let files = uploads.into_iter().chain(delivered.take()).collect();
    persist(conn, &session, &outcome, files, fence).await?;
    titles::announce(conn, &peer, &session, title).await;
    // The session is free for the next prompt now, but `session/stop` (which waits for the
    // turn) is answered only after this answer is queued.
    peer.release_after_response(guard.release());
    let (usage, cost) = usage::totals(&outcome.entries);
    let mut totals = usage::counts(&usage);
    if let Some(cost) = cost {
        totals["cost"] = json!(cost);
    }
    Ok(json!({
        "sessionId": session.id,
        "stopReason": outcome.stop_reason.as_str(),
        "content": outcome.content,
        "_meta": {"zeroclaw": {"usage": totals}},
    }))
}

/// The turn's request; the images of the history and the prompt go along (read back from
/// `uploads/`) only when the session's model takes images.
async fn turn_request(
    conn: &Connection,
    session: &Session,
    options: config_options::Effective,
    prompt: materialize::Prompt,
) -> Result<TurnRequest, RpcError> {
    let provider = conn
        .server
        .provider(&session.agent.provider)
        .map_err(|e| RpcError::internal(e.to_string()))?;
    let prior = session.history();
    let images = match options.images {
        true => {
            let mut loaded = super::images::load(&session.cwd, &prior).await;
            loaded.extend(prompt.loaded);
            Some(loaded)
        }
        false => None,
    };
    Ok(TurnRequest {
        provider,
        model: options.model,
        thought_level: options.thought_level,
        usage: options.usage,
        system_prompt: session.agent.system_prompt.clone(),
        prior,
        user_text: prompt.text,
        user_images: prompt.images,
        images,
        max_tool_iterations: session.agent.max_tool_iterations,
    })
}

/// Adds the turn to the session's history: in the store in one transaction under the
/// session's lease, then in memory. A turn that cannot be stored (the store is unreachable, or
/// the lease was taken over by another daemon) is kept in neither, and the prompt fails saying
/// so: what the next turn builds on is always what a restart would load.
async fn persist(
    conn: &Connection,
    session: &Session,
    outcome: &TurnOutcome,
    files: Vec<SessionFile>,
    fence: Option<crate::store::Fence>,
) -> Result<(), RpcError> {
    if let Some(store) = &conn.server.store {
        let mut turn = NewTurn::new(
            &session.id,
            outcome.entries.iter().map(|e| e.to_stored()).collect(),
        );
        turn.stop_reason = Some(outcome.stop_reason.as_str().to_owned());
        turn.files = files;
        turn.fence = fence;
        if let Err(error) = store.write_turn(turn).await {
            if matches!(error, StoreError::Lease(_)) {
                conn.server.leases.lost(&session.id);
            }
            tracing::error!(session = %session.id, %error, "storing the turn failed");
            return Err(RpcError::internal(format!(
                "the turn was not saved: {error}"
            )));
        }
    }
    session.append_history(&outcome.entries);
    Ok(())
}
