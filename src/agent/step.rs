//! One model call: streams the provider's events, forwards text and reasoning deltas as
//! `session/update`s at once, and collects the tool calls, whose arguments arrive in pieces.

use std::collections::BTreeMap;

use futures::StreamExt;

use super::history::text_chunk;
use crate::provider::{self, ChatRequest, Provider, ProviderError, ProviderEvent};
use crate::tools::UpdateSink;
use tokio_util::sync::CancellationToken;

/// A tool call as the model made it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// What one model call produced, also when it was cut short by cancellation.
#[derive(Debug, Default)]
pub struct Step {
    pub text: String,
    pub thinking: String,
    pub tool_calls: Vec<ModelToolCall>,
    pub stop: Option<provider::StopReason>,
    pub cancelled: bool,
}

/// Streams one model call until it ends, fails, or `cancel` fires (dropping the stream, which
/// aborts the HTTP request).
pub async fn stream_step(
    provider: &dyn Provider,
    request: ChatRequest,
    updates: &dyn UpdateSink,
    cancel: &CancellationToken,
) -> Result<Step, ProviderError> {
    let mut step = Step::default();
    let mut stream = tokio::select! {
        stream = provider.stream(request) => stream?,
        () = cancel.cancelled() => return Ok(Step { cancelled: true, ..step }),
    };
    let mut calls: BTreeMap<usize, ModelToolCall> = BTreeMap::new();
    loop {
        let event = tokio::select! {
            biased;
            () = cancel.cancelled() => {
                step.cancelled = true;
                break;
            }
            event = stream.next() => event,
        };
        match event {
            None => break,
            Some(event) => apply(&mut step, &mut calls, event?, updates).await,
        }
    }
    step.tool_calls = calls.into_values().collect();
    Ok(step)
}

async fn apply(
    step: &mut Step,
    calls: &mut BTreeMap<usize, ModelToolCall>,
    event: ProviderEvent,
    updates: &dyn UpdateSink,
) {
    match event {
        ProviderEvent::TextDelta(text) if !text.is_empty() => {
            updates.send(text_chunk("agent_message_chunk", &text)).await;
            step.text.push_str(&text);
        }
        ProviderEvent::ThinkingDelta(text) if !text.is_empty() => {
            updates.send(text_chunk("agent_thought_chunk", &text)).await;
            step.thinking.push_str(&text);
        }
        ProviderEvent::ToolCallStart { index, id, name } => {
            let call = calls.entry(index).or_default();
            call.id = id;
            call.name = name;
        }
        ProviderEvent::ToolCallArgsDelta { index, delta } => {
            calls.entry(index).or_default().arguments.push_str(&delta);
        }
        ProviderEvent::Usage {
            input_tokens,
            output_tokens,
        } => tracing::debug!(input_tokens, output_tokens, "model usage"),
        ProviderEvent::Stop(reason) => step.stop = Some(reason),
        ProviderEvent::TextDelta(_)
        | ProviderEvent::ThinkingDelta(_)
        | ProviderEvent::ToolCallEnd { .. } => {}
    }
}
