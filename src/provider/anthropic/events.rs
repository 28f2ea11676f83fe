//! Maps the Messages API's stream events (the JSON of each SSE event, whose `type` names it)
//! to [`ProviderEvent`]s.
//!
//! Content blocks are numbered by `index`: text and thinking deltas are forwarded as they
//! come, a thinking block's `signature_delta` closes it with its signature, a
//! `redacted_thinking` block is one event, and a `tool_use` block is a tool call whose JSON
//! input arrives as `input_json_delta` pieces and ends at its `content_block_stop`. Usage is
//! gathered from `message_start` (prompt and cache tokens) and `message_delta` (output tokens)
//! and reported once, with the `Stop`, after `message_stop`.

use std::collections::BTreeSet;

use serde_json::Value;

use super::super::error::excerpt;
use super::super::http::{EventMapper, MapError};
use super::super::{ProviderEvent, StopReason, TokenUsage};

/// The state of one streamed message.
#[derive(Debug, Default)]
pub struct MessageMapper {
    open_calls: BTreeSet<usize>,
    usage: Option<TokenUsage>,
    stop: Option<StopReason>,
    done: bool,
}

impl MessageMapper {
    pub fn new() -> MessageMapper {
        MessageMapper::default()
    }

    fn content_block_start(&mut self, event: &Value) -> Result<Vec<ProviderEvent>, MapError> {
        let index = block_index(event)?;
        let block = &event["content_block"];
        Ok(match block["type"].as_str() {
            Some("tool_use") => {
                self.open_calls.insert(index);
                let mut events = vec![ProviderEvent::ToolCallStart {
                    index,
                    id: str_of(&block["id"]).to_owned(),
                    name: str_of(&block["name"]).to_owned(),
                }];
                // The start usually carries `{}`; a server that sends the input whole here
                // gets it used.
                if let Some(input) = block.get("input").filter(|i| non_empty_object(i)) {
                    events.push(ProviderEvent::ToolCallArgsDelta {
                        index,
                        delta: input.to_string(),
                    });
                }
                events
            }
            Some("thinking") => text_event(&block["thinking"], ProviderEvent::ThinkingDelta),
            Some("redacted_thinking") => {
                vec![ProviderEvent::RedactedThinking(
                    str_of(&block["data"]).to_owned(),
                )]
            }
            Some("text") => text_event(&block["text"], ProviderEvent::TextDelta),
            _ => Vec::new(),
        })
    }

    fn content_block_delta(&mut self, event: &Value) -> Result<Vec<ProviderEvent>, MapError> {
        let index = block_index(event)?;
        let delta = &event["delta"];
        Ok(match delta["type"].as_str() {
            Some("text_delta") => text_event(&delta["text"], ProviderEvent::TextDelta),
            Some("thinking_delta") => text_event(&delta["thinking"], ProviderEvent::ThinkingDelta),
            Some("signature_delta") => {
                text_event(&delta["signature"], ProviderEvent::ThinkingSignature)
            }
            Some("input_json_delta") if self.open_calls.contains(&index) => {
                text_event(&delta["partial_json"], |delta| {
                    ProviderEvent::ToolCallArgsDelta { index, delta }
                })
            }
            Some("input_json_delta") => {
                return Err(MapError::Invalid(format!(
                    "input_json_delta for block {index}, which is not a started tool_use"
                )));
            }
            _ => Vec::new(),
        })
    }

    fn message_delta(&mut self, event: &Value) {
        if let Some(reason) = event.pointer("/delta/stop_reason").and_then(Value::as_str) {
            self.stop = Some(stop_reason(reason));
        }
        if let Some(usage) = event.get("usage").filter(|u| u.is_object()) {
            let total = self.usage.get_or_insert_with(TokenUsage::default);
            merge_usage(total, usage);
        }
    }
}

impl EventMapper for MessageMapper {
    fn map(&mut self, data: &str) -> Result<Vec<ProviderEvent>, MapError> {
        let event: Value = serde_json::from_str(data)
            .map_err(|e| MapError::Invalid(format!("{e}: {}", short(data))))?;
        match event["type"].as_str() {
            Some("message_start") => {
                if let Some(usage) = event.pointer("/message/usage").filter(|u| u.is_object()) {
                    merge_usage(self.usage.get_or_insert_with(TokenUsage::default), usage);
                }
                Ok(Vec::new())
            }
            Some("content_block_start") => self.content_block_start(&event),
            Some("content_block_delta") => self.content_block_delta(&event),
            Some("content_block_stop") => {
                let index = block_index(&event)?;
                Ok(match self.open_calls.remove(&index) {
                    true => vec![ProviderEvent::ToolCallEnd { index }],
                    false => Vec::new(),
                })
            }
            Some("message_delta") => {
                self.message_delta(&event);
                Ok(Vec::new())
            }
            Some("message_stop") => {
                self.done = true;
                Ok(Vec::new())
            }
            Some("error") => Err(MapError::Model(error_message(&event["error"]))),
            // `ping` and event types added later.
            _ => Ok(Vec::new()),
        }
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn finish(&mut self) -> Option<Vec<ProviderEvent>> {
        let stop = self.stop.take()?;
        let mut events: Vec<ProviderEvent> = std::mem::take(&mut self.open_calls)
            .into_iter()
            .map(|index| ProviderEvent::ToolCallEnd { index })
            .collect();
        events.extend(self.usage.take().map(ProviderEvent::Usage));
        events.push(ProviderEvent::Stop(stop));
        Some(events)
    }
}

/// The events of a whole, non-streamed message (a server that ignored `stream: true`).
pub fn map_message(body: &str) -> Result<Vec<ProviderEvent>, MapError> {
    let message: Value = serde_json::from_str(body)
        .map_err(|e| MapError::Invalid(format!("{e}: {}", short(body))))?;
    if message["type"] == "error" {
        return Err(MapError::Model(error_message(&message["error"])));
    }
    let mut mapper = MessageMapper::new();
    let mut events = Vec::new();
    let start =
        serde_json::json!({"type": "message_start", "message": {"usage": message["usage"]}});
    events.extend(mapper.map(&start.to_string())?);
    let blocks = message["content"].as_array().cloned().unwrap_or_default();
    for (index, block) in blocks.into_iter().enumerate() {
        let mut start = serde_json::json!({"type": "content_block_start", "index": index});
        start["content_block"] = block.clone();
        events.extend(mapper.map(&start.to_string())?);
        if let Some(signature) = block["signature"].as_str().filter(|s| !s.is_empty()) {
            events.push(ProviderEvent::ThinkingSignature(signature.to_owned()));
        }
        let stop = serde_json::json!({"type": "content_block_stop", "index": index});
        events.extend(mapper.map(&stop.to_string())?);
    }
    mapper.stop = Some(stop_reason(
        message["stop_reason"].as_str().unwrap_or("end_turn"),
    ));
    events.extend(mapper.finish().unwrap_or_default());
    Ok(events)
}

/// Adds the counts present in one `usage` object (later counts replace earlier ones: the
/// API's counts are cumulative).
fn merge_usage(total: &mut TokenUsage, usage: &Value) {
    let count = |key: &str| usage.get(key).and_then(Value::as_u64);
    let uncached = count("input_tokens");
    let read = count("cache_read_input_tokens");
    let written = count("cache_creation_input_tokens");
    if uncached.is_some() || read.is_some() || written.is_some() {
        let (read, written) = (read.unwrap_or(0), written.unwrap_or(0));
        total.input_tokens = uncached.unwrap_or(0) + read + written;
        total.cache_read_tokens = read;
        total.cache_write_tokens = written;
    }
    if let Some(output) = count("output_tokens") {
        total.output_tokens = output;
    }
}

fn stop_reason(reason: &str) -> StopReason {
    match reason {
        "tool_use" => StopReason::ToolUse,
        "max_tokens" | "model_context_window_exceeded" => StopReason::MaxTokens,
        "refusal" => StopReason::Refusal,
        // end_turn, stop_sequence, pause_turn
        _ => StopReason::EndTurn,
    }
}

fn text_event(value: &Value, event: impl FnOnce(String) -> ProviderEvent) -> Vec<ProviderEvent> {
    match value.as_str().filter(|s| !s.is_empty()) {
        Some(text) => vec![event(text.to_owned())],
        None => Vec::new(),
    }
}

fn block_index(event: &Value) -> Result<usize, MapError> {
    event["index"]
        .as_u64()
        .map(|i| i as usize)
        .ok_or_else(|| MapError::Invalid(format!("no block index: {}", short(&event.to_string()))))
}

fn non_empty_object(value: &Value) -> bool {
    value.as_object().is_some_and(|o| !o.is_empty())
}

fn str_of(value: &Value) -> &str {
    value.as_str().unwrap_or_default()
}

/// `type: message` of an API error object, e.g. `overloaded_error: Overloaded`.
fn error_message(error: &Value) -> String {
    let message = error["message"].as_str().map(short);
    match (error["type"].as_str(), message) {
        (Some(kind), Some(message)) => format!("{kind}: {message}"),
        (None, Some(message)) => message,
        (Some(kind), None) => kind.to_owned(),
        (None, None) => short(&error.to_string()),
    }
}

fn short(text: &str) -> String {
    excerpt(text, "", 200)
}

#[cfg(test)]
mod tests;
