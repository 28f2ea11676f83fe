//! Hand-written Anthropic Messages API streams (after the shapes of the public API reference)
//! for the loopback model server: each helper is one event, the `*_reply` helpers whole
//! answers.
#![allow(dead_code)]

use serde_json::{Value, json};

use super::model_server::{Chunk, Reply};

fn event(json: Value) -> Chunk {
    Chunk { delay_ms: 0, json }
}

/// `message_start` with the prompt's usage (uncached, cache read, cache written).
pub fn message_start(input: u64, cache_read: u64, cache_write: u64) -> Chunk {
    event(json!({"type": "message_start", "message": {
        "id": "msg_loopback", "type": "message", "role": "assistant", "model": "claude-loopback",
        "content": [], "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": input, "cache_read_input_tokens": cache_read,
                  "cache_creation_input_tokens": cache_write, "output_tokens": 1},
    }}))
}

pub fn ping() -> Chunk {
    event(json!({"type": "ping"}))
}

pub fn block_start(index: usize, block: Value) -> Chunk {
    event(json!({"type": "content_block_start", "index": index, "content_block": block}))
}

pub fn block_delta(index: usize, delta: Value) -> Chunk {
    event(json!({"type": "content_block_delta", "index": index, "delta": delta}))
}

pub fn block_stop(index: usize) -> Chunk {
    event(json!({"type": "content_block_stop", "index": index}))
}

/// A text block streamed in `pieces`.
pub fn text_block(index: usize, pieces: &[&str]) -> Vec<Chunk> {
    let mut events = vec![block_start(index, json!({"type": "text", "text": ""}))];
    events.extend(
        pieces
            .iter()
            .map(|p| block_delta(index, json!({"type": "text_delta", "text": p}))),
    );
    events.push(block_stop(index));
    events
}

/// A thinking block streamed in `pieces`, closed by its signature.
pub fn thinking_block(index: usize, pieces: &[&str], signature: &str) -> Vec<Chunk> {
    let start = json!({"type": "thinking", "thinking": "", "signature": ""});
    let mut events = vec![block_start(index, start)];
    events.extend(
        pieces
            .iter()
            .map(|p| block_delta(index, json!({"type": "thinking_delta", "thinking": p}))),
    );
    events.push(block_delta(
        index,
        json!({"type": "signature_delta", "signature": signature}),
    ));
    events.push(block_stop(index));
    events
}

/// A redacted thinking block.
pub fn redacted_block(index: usize, data: &str) -> Vec<Chunk> {
    vec![
        block_start(index, json!({"type": "redacted_thinking", "data": data})),
        block_stop(index),
    ]
}

/// A `tool_use` block whose JSON input arrives in `pieces`.
pub fn tool_use_block(index: usize, id: &str, name: &str, pieces: &[&str]) -> Vec<Chunk> {
    let start = json!({"type": "tool_use", "id": id, "name": name, "input": {}});
    let mut events = vec![block_start(index, start)];
    events.extend(pieces.iter().map(|p| {
        block_delta(
            index,
            json!({"type": "input_json_delta", "partial_json": p}),
        )
    }));
    events.push(block_stop(index));
    events
}

/// `message_delta` with the stop reason and the output tokens, then `message_stop`.
pub fn message_end(stop_reason: &str, output_tokens: u64) -> Vec<Chunk> {
    vec![
        event(json!({"type": "message_delta",
                     "delta": {"stop_reason": stop_reason, "stop_sequence": null},
                     "usage": {"output_tokens": output_tokens}})),
        event(json!({"type": "message_stop"})),
    ]
}

/// An `error` event (e.g. `overloaded_error`) inside the stream.
pub fn error_event(kind: &str, message: &str) -> Chunk {
    event(json!({"type": "error", "error": {"type": kind, "message": message}}))
}

/// A whole message: start, the blocks, end.
pub fn message(blocks: Vec<Vec<Chunk>>, stop_reason: &str) -> Reply {
    let mut events = vec![message_start(10, 0, 0), ping()];
    events.extend(blocks.into_iter().flatten());
    events.extend(message_end(stop_reason, 5));
    Reply::Events(events)
}

/// A text answer.
pub fn text_reply(text: &str) -> Reply {
    message(vec![text_block(0, &[text])], "end_turn")
}

/// An API error body, as the API sends it with a non-2xx status.
pub fn error_body(kind: &str, message: &str) -> String {
    json!({"type": "error", "error": {"type": kind, "message": message}}).to_string()
}
