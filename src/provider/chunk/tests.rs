//! Chunk mapping, fed through the SSE decoder split at every byte.

use serde_json::json;

use super::*;
use crate::provider::sse::SseDecoder;

fn sse(chunks: &[Value]) -> String {
    let mut text: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    text.push_str("data: [DONE]\n\n");
    text
}

/// Decodes `input` in pieces of `size` bytes and maps it, including the final Stop.
fn events(input: &str, size: usize) -> Vec<ProviderEvent> {
    let mut decoder = SseDecoder::new();
    let mut mapper = ChunkMapper::new();
    let mut out = Vec::new();
    for piece in input.as_bytes().chunks(size) {
        for data in decoder.feed(piece).unwrap() {
            out.extend(mapper.map(&data).unwrap());
        }
    }
    if let Some(data) = decoder.finish().unwrap() {
        out.extend(mapper.map(&data).unwrap());
    }
    assert!(mapper.is_done());
    out.extend(mapper.finish());
    out
}

fn delta(d: Value) -> Value {
    json!({"choices": [{"index": 0, "delta": d, "finish_reason": null}]})
}

fn finish(reason: &str) -> Value {
    json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
}

fn call(index: u64, id: Option<&str>, name: Option<&str>, args: &str) -> Value {
    let mut function = json!({"arguments": args});
    if let Some(name) = name {
        function["name"] = json!(name);
    }
    let mut call = json!({"index": index, "type": "function", "function": function});
    if let Some(id) = id {
        call["id"] = json!(id);
    }
    delta(json!({"tool_calls": [call]}))
}

#[test]
fn text_reasoning_usage_and_stop_map_in_order_at_every_split() {
    let input = sse(&[
        delta(json!({"role": "assistant", "content": ""})),
        delta(json!({"reasoning": "thinking…"})),
        delta(json!({"reasoning_content": " more"})),
        delta(json!({"content": "Hel"})),
        delta(json!({"content": "lo ✓"})),
        finish("stop"),
        json!({"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 5}}),
    ]);
    let expected = vec![
        ProviderEvent::ThinkingDelta("thinking…".into()),
        ProviderEvent::ThinkingDelta(" more".into()),
        ProviderEvent::TextDelta("Hel".into()),
        ProviderEvent::TextDelta("lo ✓".into()),
        ProviderEvent::Usage(TokenUsage {
            input_tokens: 12,
            output_tokens: 5,
            ..Default::default()
        }),
        ProviderEvent::Stop(StopReason::EndTurn),
    ];
    for size in [1, 2, 3, 7, 64, input.len()] {
        assert_eq!(events(&input, size), expected, "pieces of {size}");
    }
}

#[test]
fn interleaved_tool_calls_start_stream_arguments_and_end_at_finish() {
    let input = sse(&[
        call(0, Some("call_a"), Some("todo_write"), ""),
        call(1, Some("call_b"), Some("read"), "{\"pa"),
        call(0, None, None, "{\"todos\":"),
        call(1, None, None, "th\":\"x\"}"),
        call(0, None, None, "[]}"),
        finish("tool_calls"),
    ]);
    let expected = vec![
        ProviderEvent::ToolCallStart {
            index: 0,
            id: "call_a".into(),
            name: "todo_write".into(),
        },
        ProviderEvent::ToolCallStart {
            index: 1,
            id: "call_b".into(),
            name: "read".into(),
        },
        ProviderEvent::ToolCallArgsDelta {
            index: 1,
            delta: "{\"pa".into(),
        },
        ProviderEvent::ToolCallArgsDelta {
            index: 0,
            delta: "{\"todos\":".into(),
        },
        ProviderEvent::ToolCallArgsDelta {
            index: 1,
            delta: "th\":\"x\"}".into(),
        },
        ProviderEvent::ToolCallArgsDelta {
            index: 0,
            delta: "[]}".into(),
        },
        ProviderEvent::ToolCallEnd { index: 0 },
        ProviderEvent::ToolCallEnd { index: 1 },
        ProviderEvent::Stop(StopReason::ToolUse),
    ];
    for size in [1, 5, input.len()] {
        assert_eq!(events(&input, size), expected, "pieces of {size}");
    }
}

#[test]
fn finish_reasons_map_to_stop_reasons() {
    for (reason, stop) in [
        ("stop", StopReason::EndTurn),
        ("tool_calls", StopReason::ToolUse),
        ("length", StopReason::MaxTokens),
        ("content_filter", StopReason::Refusal),
    ] {
        let got = events(&sse(&[finish(reason)]), 4);
        assert_eq!(got, vec![ProviderEvent::Stop(stop)], "{reason}");
    }
}

#[test]
fn a_call_without_id_gets_one_derived_from_its_index() {
    let got = events(
        &sse(&[call(2, None, Some("f"), "{}"), finish("tool_calls")]),
        9,
    );
    assert_eq!(
        got[0],
        ProviderEvent::ToolCallStart {
            index: 2,
            id: "call_2".into(),
            name: "f".into()
        }
    );
}

#[test]
fn an_error_object_in_the_stream_is_a_model_error() {
    let mut mapper = ChunkMapper::new();
    let err = mapper.map(r#"{"error":{"message":"upstream overloaded","code":502}}"#);
    assert_eq!(err, Err(ChunkError::Model("upstream overloaded".into())));
}

#[test]
fn non_json_data_is_invalid() {
    let mut mapper = ChunkMapper::new();
    assert!(matches!(mapper.map("{nope"), Err(ChunkError::Invalid(_))));
}

#[test]
fn no_finish_reason_means_no_stop() {
    let mut mapper = ChunkMapper::new();
    mapper
        .map(&delta(json!({"content": "x"})).to_string())
        .unwrap();
    assert_eq!(mapper.finish(), None);
}

#[test]
fn reasoning_sent_under_both_names_is_not_doubled() {
    let mut mapper = ChunkMapper::new();
    let chunk = delta(json!({"reasoning": "r", "reasoning_content": "r"}));
    let got = mapper.map(&chunk.to_string()).unwrap();
    assert_eq!(got, vec![ProviderEvent::ThinkingDelta("r".into())]);
}

#[test]
fn a_non_streamed_completion_maps_to_the_same_events() {
    let body = json!({
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": "calling", "reasoning_content": "why",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "a", "arguments": "{}"}},
                {"id": "c2", "type": "function", "function": {"name": "b", "arguments": "{\"x\":1}"}},
            ],
        }}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 4},
    });
    let got = map_completion(&body.to_string()).unwrap();
    assert_eq!(
        got,
        vec![
            ProviderEvent::ThinkingDelta("why".into()),
            ProviderEvent::TextDelta("calling".into()),
            ProviderEvent::ToolCallStart {
                index: 0,
                id: "c1".into(),
                name: "a".into()
            },
            ProviderEvent::ToolCallArgsDelta {
                index: 0,
                delta: "{}".into()
            },
            ProviderEvent::ToolCallStart {
                index: 1,
                id: "c2".into(),
                name: "b".into()
            },
            ProviderEvent::ToolCallArgsDelta {
                index: 1,
                delta: "{\"x\":1}".into()
            },
            ProviderEvent::ToolCallEnd { index: 0 },
            ProviderEvent::ToolCallEnd { index: 1 },
            ProviderEvent::Usage(TokenUsage {
                input_tokens: 3,
                output_tokens: 4,
                ..Default::default()
            }),
            ProviderEvent::Stop(StopReason::ToolUse),
        ]
    );
}

#[test]
fn calls_without_an_index_are_told_apart_by_id() {
    let call = |id: Option<&str>, name: Option<&str>, args: &str| {
        let mut c = json!({"type": "function", "function": {"arguments": args}});
        if let Some(id) = id {
            c["id"] = json!(id);
        }
        if let Some(name) = name {
            c["function"]["name"] = json!(name);
        }
        delta(json!({"tool_calls": [c]}))
    };
    let input = sse(&[
        call(Some("g1"), Some("a"), "{\"x\":"),
        call(None, None, "1}"),
        call(Some("g2"), Some("b"), "{}"),
        finish("tool_calls"),
    ]);
    let got = events(&input, 3);
    assert_eq!(
        got,
        vec![
            ProviderEvent::ToolCallStart {
                index: 0,
                id: "g1".into(),
                name: "a".into()
            },
            ProviderEvent::ToolCallArgsDelta {
                index: 0,
                delta: "{\"x\":".into()
            },
            ProviderEvent::ToolCallArgsDelta {
                index: 0,
                delta: "1}".into()
            },
            ProviderEvent::ToolCallStart {
                index: 1,
                id: "g2".into(),
                name: "b".into()
            },
            ProviderEvent::ToolCallArgsDelta {
                index: 1,
                delta: "{}".into()
            },
            ProviderEvent::ToolCallEnd { index: 0 },
            ProviderEvent::ToolCallEnd { index: 1 },
            ProviderEvent::Stop(StopReason::ToolUse),
        ]
    );
}

#[test]
fn a_first_call_with_neither_index_nor_id_is_invalid() {
    let mut mapper = ChunkMapper::new();
    let chunk = delta(json!({"tool_calls": [{"function": {"name": "a"}}]}));
    assert!(matches!(
        mapper.map(&chunk.to_string()),
        Err(ChunkError::Invalid(_))
    ));
}
