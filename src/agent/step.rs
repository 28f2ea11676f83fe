//! One model call: streams the provider's events, forwards text and reasoning deltas as
//! `session/update`s at once, and collects the tool calls, whose arguments arrive in pieces.

use std::collections::BTreeMap;

use futures::StreamExt;

use super::history::text_chunk;
use crate::provider::{
    self, ChatRequest, Provider, ProviderError, ProviderEvent, ThinkingBlock, TokenUsage,
};
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
    /// The reasoning blocks, in order; the last one may still lack its signature.
    pub thinking: Vec<ThinkingBlock>,
    /// The tokens the call used, when the provider reported them.
    pub usage: Option<TokenUsage>,
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
            match step.thinking.last_mut() {
                Some(ThinkingBlock::Text {
                    text: open,
                    signature: None,
                }) => open.push_str(&text),
                _ => step.thinking.push(ThinkingBlock::Text {
                    text,
                    signature: None,
                }),
            }
        }
        ProviderEvent::ThinkingSignature(signature) => match step.thinking.last_mut() {
            Some(ThinkingBlock::Text {
                signature: open @ None,
                ..
            }) => *open = Some(signature),
            _ => step.thinking.push(ThinkingBlock::Text {
                text: String::new(),
                signature: Some(signature),
            }),
        },
        ProviderEvent::RedactedThinking(data) => {
            step.thinking.push(ThinkingBlock::Redacted { data });
        }
        ProviderEvent::ToolCallStart { index, id, name } => {
            let call = calls.entry(index).or_default();
            call.id = id;
            call.name = name;
        }
        ProviderEvent::ToolCallArgsDelta { index, delta } => {
            calls.entry(index).or_default().arguments.push_str(&delta);
        }
        ProviderEvent::Usage(usage) => {
            tracing::debug!(?usage, "model usage");
            let metrics = crate::metrics::get();
            metrics.tokens(
                usage.input_tokens,
                usage.output_tokens,
                usage.cache_read_tokens,
            );
            step.usage = Some(usage);
            crate::telemetry::usage(usage.input_tokens, usage.output_tokens);
        }
        ProviderEvent::Stop(reason) => step.stop = Some(reason),
        ProviderEvent::TextDelta(_)
        | ProviderEvent::ThinkingDelta(_)
        | ProviderEvent::ToolCallEnd { .. } => {}
    }
}
