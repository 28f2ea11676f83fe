//! Maps OpenAI chat-completion stream chunks (the JSON in each SSE event) to [`ProviderEvent`]s.
//!
//! Stateful: tool calls are started when their index first appears and ended, in index order,
//! when a `finish_reason` arrives; [`ChunkMapper::finish`] yields the final `Stop` once the
//! stream is over (usage arrives in a chunk after the finish reason).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::{ProviderEvent, StopReason, TokenUsage};

/// The state of one streamed response.
#[derive(Debug, Default)]
pub struct ChunkMapper {
    open_calls: BTreeSet<usize>,
    /// Every call started so far, by id, and the last one started: for servers that omit
    /// `index` on tool-call deltas.
    call_ids: BTreeMap<String, usize>,
    last_call: Option<usize>,
    stop: Option<StopReason>,
    done: bool,
}

/// Why a chunk could not be mapped.
pub use super::http::MapError as ChunkError;

impl super::http::EventMapper for ChunkMapper {
    fn map(&mut self, data: &str) -> Result<Vec<ProviderEvent>, ChunkError> {
        ChunkMapper::map(self, data)
    }

    fn is_done(&self) -> bool {
        ChunkMapper::is_done(self)
    }

    fn finish(&mut self) -> Option<Vec<ProviderEvent>> {
        ChunkMapper::finish(self).map(|stop| vec![stop])
    }
}

impl ChunkMapper {
    pub fn new() -> ChunkMapper {
        ChunkMapper::default()
    }

    /// Whether `data: [DONE]` was seen.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// The events carried by one SSE event's data.
    pub fn map(&mut self, data: &str) -> Result<Vec<ProviderEvent>, ChunkError> {
        if data.trim() == "[DONE]" {
            self.done = true;
            return Ok(Vec::new());
        }
        let chunk: Value = serde_json::from_str(data)
            .map_err(|e| ChunkError::Invalid(format!("{e}: {}", short(data))))?;
        if let Some(error) = chunk.get("error").filter(|e| !e.is_null()) {
            return Err(ChunkError::Model(error_message(error)));
        }
        let mut events = Vec::new();
        if let Some(choice) = chunk.pointer("/choices/0") {
            self.map_choice(choice, &mut events)?;
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            events.push(usage_event(usage));
        }
        Ok(events)
    }

    /// The final `Stop`, or `None` when the model never said why it stopped.
    pub fn finish(&mut self) -> Option<ProviderEvent> {
        self.stop.take().map(ProviderEvent::Stop)
    }

    fn map_choice(
        &mut self,
        choice: &Value,
        events: &mut Vec<ProviderEvent>,
    ) -> Result<(), ChunkError> {
        let delta = choice.get("delta").unwrap_or(&Value::Null);
        // Servers name it one way or the other; some send both with the same text.
        let reasoning = non_empty_str(delta.get("reasoning"))
            .or_else(|| non_empty_str(delta.get("reasoning_content")));
        if let Some(text) = reasoning {
            events.push(ProviderEvent::ThinkingDelta(text.to_owned()));
        }
        if let Some(text) = non_empty_str(delta.get("content")) {
            events.push(ProviderEvent::TextDelta(text.to_owned()));
        }
        if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
            for call in calls {
                self.map_tool_call(call, events)?;
            }
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            let open = std::mem::take(&mut self.open_calls);
            events.extend(
                open.into_iter()
                    .map(|index| ProviderEvent::ToolCallEnd { index }),
            );
            self.stop = Some(stop_reason(reason));
        }
        Ok(())
    }

    fn map_tool_call(
        &mut self,
        call: &Value,
        events: &mut Vec<ProviderEvent>,
    ) -> Result<(), ChunkError> {
        let index = self.call_index(call)?;
        let function = call.get("function").unwrap_or(&Value::Null);
        if self.open_calls.insert(index) {
            let id = non_empty_str(call.get("id"))
                .map_or_else(|| format!("call_{index}"), str::to_owned);
            let name = non_empty_str(function.get("name"))
                .unwrap_or_default()
                .to_owned();
            self.call_ids.insert(id.clone(), index);
            self.last_call = Some(index);
            events.push(ProviderEvent::ToolCallStart { index, id, name });
        }
        if let Some(piece) = non_empty_str(function.get("arguments")) {
            events.push(ProviderEvent::ToolCallArgsDelta {
                index,
                delta: piece.to_owned(),
            });
        }
        Ok(())
    }

    /// The call's `index`; without one (some servers omit it), the index of the call with the
    /// same id, a new index for a new id, or else the call started last.
    fn call_index(&self, call: &Value) -> Result<usize, ChunkError> {
        if let Some(index) = call.get("index").and_then(Value::as_u64) {
            return Ok(index as usize);
        }
        match non_empty_str(call.get("id")) {
            Some(id) => Ok(self
                .call_ids
                .get(id)
                .copied()
                .unwrap_or_else(|| self.call_ids.values().max().map_or(0, |max| max + 1))),
            None => self
                .last_call
                .ok_or_else(|| ChunkError::Invalid("tool call without an index or id".to_owned())),
        }
    }
}

/// The events of a whole, non-streamed completion (a server that ignored `stream: true`):
/// its message is read as one delta, then the finish reason and usage, then `Stop`.
pub fn map_completion(body: &str) -> Result<Vec<ProviderEvent>, ChunkError> {
    let mut completion: Value = serde_json::from_str(body)
        .map_err(|e| ChunkError::Invalid(format!("{e}: {}", short(body))))?;
    if let Some(choice) = completion.pointer_mut("/choices/0") {
        let mut message = choice
            .get_mut("message")
            .map(Value::take)
            .unwrap_or_default();
        let mut has_calls = false;
        if let Some(calls) = message.get_mut("tool_calls").and_then(Value::as_array_mut) {
            for (index, call) in calls.iter_mut().enumerate() {
                call["index"] = Value::from(index);
            }
            has_calls = !calls.is_empty();
        }
        choice["delta"] = message;
        if !choice["finish_reason"].is_string() {
            choice["finish_reason"] = Value::from(if has_calls { "tool_calls" } else { "stop" });
        }
    }
    let mut mapper = ChunkMapper::new();
    let mut events = mapper.map(&completion.to_string())?;
    events.extend(mapper.finish());
    Ok(events)
}

fn stop_reason(reason: &str) -> StopReason {
    match reason {
        "tool_calls" | "function_call" => StopReason::ToolUse,
        "length" => StopReason::MaxTokens,
        "content_filter" => StopReason::Refusal,
        _ => StopReason::EndTurn,
    }
}

fn usage_event(usage: &Value) -> ProviderEvent {
    let count = |key: &str| usage.pointer(key).and_then(Value::as_u64).unwrap_or(0);
    ProviderEvent::Usage(TokenUsage {
        input_tokens: count("/prompt_tokens"),
        output_tokens: count("/completion_tokens"),
        cache_read_tokens: count("/prompt_tokens_details/cached_tokens"),
        cache_write_tokens: 0,
        reasoning_tokens: count("/completion_tokens_details/reasoning_tokens"),
    })
}

fn error_message(error: &Value) -> String {
    let message = error.get("message").and_then(Value::as_str);
    message.map_or_else(|| short(&error.to_string()), short)
}

fn non_empty_str(value: Option<&Value>) -> Option<&str> {
    value.and_then(Value::as_str).filter(|s| !s.is_empty())
}

fn short(text: &str) -> String {
    super::error::excerpt(text, "", 200)
}

#[cfg(test)]
mod tests;
