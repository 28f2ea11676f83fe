//! Messages API events, fed through the SSE decoder split at many points.

use serde_json::json;

use super::*;
use crate::provider::sse::SseDecoder;

fn sse(events: &[Value]) -> String {
    events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect()
}

fn decode(input: &str, size: usize) -> Vec<ProviderEvent> {
    let mut decoder = SseDecoder::new();
    let mut mapper = MessageMapper::new();
    let mut out = Vec::new();
    for piece in input.as_bytes().chunks(size) {
        for data in decoder.feed(piece).unwrap() {
            out.extend(mapper.map(&data).unwrap());
        }
    }
    assert!(mapper.is_done());
    out.extend(mapper.finish().expect("a stop"));
    out
}

#[test]
fn thinking_text_and_a_split_tool_use_map_in_order_with_usage_last() {
    let input = sse(&[
        json!({"type": "message_start", "message": {"usage": {
            "input_tokens": 5, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 20,
            "output_tokens": 1}}}),
        json!({"type": "ping"}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "hm"}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "s1"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "redacted_thinking", "data": "r"}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "content_block_start", "index": 2, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 2, "delta": {"type": "text_delta", "text": "é✓"}}),
        json!({"type": "content_block_stop", "index": 2}),
        json!({"type": "content_block_start", "index": 3, "content_block": {"type": "tool_use", "id": "t", "name": "f", "input": {}}}),
        json!({"type": "content_block_delta", "index": 3, "delta": {"type": "input_json_delta", "partial_json": "{\"a\":"}}),
        json!({"type": "content_block_delta", "index": 3, "delta": {"type": "input_json_delta", "partial_json": "1}"}}),
        json!({"type": "content_block_stop", "index": 3}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}}),
        json!({"type": "message_stop"}),
    ]);
    let expected = vec![
        ProviderEvent::ThinkingDelta("hm".into()),
        ProviderEvent::ThinkingSignature("s1".into()),
        ProviderEvent::RedactedThinking("r".into()),
        ProviderEvent::TextDelta("é✓".into()),
        ProviderEvent::ToolCallStart {
            index: 3,
            id: "t".into(),
            name: "f".into(),
        },
        ProviderEvent::ToolCallArgsDelta {
            index: 3,
            delta: "{\"a\":".into(),
        },
        ProviderEvent::ToolCallArgsDelta {
            index: 3,
            delta: "1}".into(),
        },
        ProviderEvent::ToolCallEnd { index: 3 },
        ProviderEvent::Usage(TokenUsage {
            input_tokens: 125,
            output_tokens: 9,
            cache_read_tokens: 100,
            cache_write_tokens: 20,
            reasoning_tokens: 0,
        }),
        ProviderEvent::Stop(StopReason::ToolUse),
    ];
    for size in [1, 2, 7, 64, input.len()] {
        assert_eq!(decode(&input, size), expected, "pieces of {size}");
    }
}

#[test]
fn an_error_event_is_a_model_error_naming_its_type() {
    let mut mapper = MessageMapper::new();
    let err = mapper
        .map(r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#);
    assert_eq!(
        err,
        Err(MapError::Model("overloaded_error: Overloaded".into()))
    );
}

#[test]
fn a_stream_without_stop_reason_has_no_stop() {
    let mut mapper = MessageMapper::new();
    mapper.map(r#"{"type":"message_stop"}"#).unwrap();
    assert_eq!(mapper.finish(), None);
}

#[test]
fn input_for_a_block_that_is_no_tool_use_is_invalid() {
    let mut mapper = MessageMapper::new();
    let delta = r#"{"type":"content_block_delta","index":4,"delta":{"type":"input_json_delta","partial_json":"{"}}"#;
    assert!(matches!(mapper.map(delta), Err(MapError::Invalid(_))));
}

#[test]
fn a_whole_message_maps_to_the_same_events() {
    let body = json!({
        "type": "message", "role": "assistant", "stop_reason": "end_turn",
        "content": [
            {"type": "thinking", "thinking": "t", "signature": "s"},
            {"type": "text", "text": "answer"},
        ],
        "usage": {"input_tokens": 2, "output_tokens": 3},
    });
    assert_eq!(
        map_message(&body.to_string()).unwrap(),
        vec![
            ProviderEvent::ThinkingDelta("t".into()),
            ProviderEvent::ThinkingSignature("s".into()),
            ProviderEvent::TextDelta("answer".into()),
            ProviderEvent::Usage(TokenUsage {
                input_tokens: 2,
                output_tokens: 3,
                ..TokenUsage::default()
            }),
            ProviderEvent::Stop(StopReason::EndTurn),
        ]
    );
}
