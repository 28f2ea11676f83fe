//! The JSON body of a streaming Messages API request, serialized straight from the request.
//!
//! System messages become the top-level `system` blocks; tool results become `tool_result`
//! blocks of a user message; a user message's images become `image` blocks with a base64
//! source; messages of the same role in a row are merged (the API wants the roles to
//! alternate). An assistant step sends back its thinking blocks (signed or redacted)
//! before its text and `tool_use` blocks, as the API requires for tool use with thinking. The
//! system prompt and the tool list end with a `cache_control` breakpoint, so a long
//! conversation re-reads them from the prompt cache.

use serde::Serialize;
use serde_json::Value;

use super::super::http::BodySize;
use super::super::{ChatMessage, ChatRequest, ThinkingBlock, ToolSpec, UserPart};

/// What the body needs besides the request.
pub struct Options {
    pub max_tokens: u32,
    /// The thinking budget in tokens; `None` leaves extended thinking off.
    pub thinking_budget: Option<u32>,
}

/// The body, serialized into a buffer sized by `size`.
pub fn body(req: &ChatRequest, options: &Options, size: &BodySize) -> Vec<u8> {
    let system: Vec<TextBlock<'_>> = req
        .messages
        .iter()
        .filter_map(|m| match m {
            ChatMessage::System { content } if !content.is_empty() => Some(TextBlock {
                kind: "text",
                text: content,
                cache_control: None,
            }),
            _ => None,
        })
        .collect();
    let mut body = Body {
        model: &req.model,
        max_tokens: options.max_tokens,
        stream: true,
        system,
        messages: messages(&req.messages),
        tools: req.tools.iter().map(Tool::from).collect(),
        thinking: options.thinking_budget.map(|budget_tokens| Thinking {
            kind: "enabled",
            budget_tokens,
        }),
    };
    if let Some(last) = body.system.last_mut() {
        last.cache_control = Some(EPHEMERAL);
    }
    if let Some(last) = body.tools.last_mut() {
        last.cache_control = Some(EPHEMERAL);
    }
    size.serialize(&body)
}

const EPHEMERAL: CacheControl = CacheControl { kind: "ephemeral" };

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    max_tokens: u32,
    stream: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    system: Vec<TextBlock<'a>>,
    messages: Vec<Message<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Tool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<Thinking>,
}

#[derive(Serialize)]
struct Thinking {
    #[serde(rename = "type")]
    kind: &'static str,
    budget_tokens: u32,
}

#[derive(Serialize, Clone, Copy)]
struct CacheControl {
    #[serde(rename = "type")]
    kind: &'static str,
}

#[derive(Serialize)]
struct TextBlock<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
}

#[derive(Serialize)]
struct Message<'a> {
    role: &'static str,
    content: Vec<Block<'a>>,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block<'a> {
    Text {
        text: &'a str,
    },
    Image {
        source: ImageSource<'a>,
    },
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    RedactedThinking {
        data: &'a str,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: Value,
    },
    ToolResult {
        tool_use_id: &'a str,
        content: &'a str,
    },
}

#[derive(Serialize)]
struct ImageSource<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    media_type: &'a str,
    data: &'a str,
}

fn user_block(part: &UserPart) -> Block<'_> {
    match part {
        UserPart::Text(text) => Block::Text { text },
        UserPart::Image(image) => Block::Image {
            source: ImageSource {
                kind: "base64",
                media_type: &image.mime_type,
                data: &image.base64,
            },
        },
    }
}

/// The conversation without its system messages, roles alternating.
fn messages(history: &[ChatMessage]) -> Vec<Message<'_>> {
    let mut out: Vec<Message<'_>> = Vec::new();
    for message in history {
        let (role, blocks) = match message {
            ChatMessage::System { .. } => continue,
            ChatMessage::User { content } => ("user", vec![Block::Text { text: content }]),
            ChatMessage::UserParts { parts } => ("user", parts.iter().map(user_block).collect()),
            ChatMessage::Tool {
                tool_call_id,
                content,
            } => (
                "user",
                vec![Block::ToolResult {
                    tool_use_id: tool_call_id,
                    content,
                }],
            ),
            ChatMessage::Assistant {
                thinking,
                content,
                tool_calls,
            } => {
                let mut blocks: Vec<Block<'_>> =
                    thinking.iter().filter_map(thinking_block).collect();
                if let Some(text) = content.as_deref().filter(|t| !t.trim().is_empty()) {
                    blocks.push(Block::Text { text });
                }
                blocks.extend(tool_calls.iter().map(|call| Block::ToolUse {
                    id: &call.id,
                    name: &call.name,
                    input: tool_input(&call.arguments),
                }));
                ("assistant", blocks)
            }
        };
        if blocks.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.role == role => last.content.extend(blocks),
            _ => out.push(Message {
                role,
                content: blocks,
            }),
        }
    }
    out
}

/// A block the API takes back: signed thinking or redacted thinking. Unsigned reasoning (from
/// another provider) cannot be verified by the API and is left out.
fn thinking_block(block: &ThinkingBlock) -> Option<Block<'_>> {
    match block {
        ThinkingBlock::Text {
            text,
            signature: Some(signature),
        } => Some(Block::Thinking {
            thinking: text,
            signature,
        }),
        ThinkingBlock::Text { .. } => None,
        ThinkingBlock::Redacted { data } => Some(Block::RedactedThinking { data }),
    }
}

/// The call's arguments as the JSON object the API wants; anything else is sent as `{}` (the
/// call itself already failed with the model's text).
fn tool_input(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(value @ Value::Object(_)) => value,
        _ => Value::Object(Default::default()),
    }
}

#[derive(Serialize)]
struct Tool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
}

impl<'a> From<&'a ToolSpec> for Tool<'a> {
    fn from(t: &'a ToolSpec) -> Self {
        Tool {
            name: &t.name,
            description: &t.description,
            input_schema: &t.parameters,
            cache_control: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::provider::{ThoughtLevel, ToolCallRequest};

    fn options() -> Options {
        Options {
            max_tokens: 1000,
            thinking_budget: None,
        }
    }

    #[test]
    fn history_maps_to_alternating_messages_with_cache_breakpoints() {
        let req = ChatRequest {
            model: "claude-x".into(),
            messages: vec![
                ChatMessage::System {
                    content: "sys".into(),
                },
                ChatMessage::User {
                    content: "go".into(),
                },
                ChatMessage::Assistant {
                    thinking: vec![
                        ThinkingBlock::Text {
                            text: "hm".into(),
                            signature: Some("sig".into()),
                        },
                        ThinkingBlock::Redacted { data: "xyz".into() },
                        ThinkingBlock::Text {
                            text: "unsigned".into(),
                            signature: None,
                        },
                    ],
                    content: Some("calling".into()),
                    tool_calls: vec![
                        ToolCallRequest {
                            id: "t1".into(),
                            name: "read".into(),
                            arguments: "{\"path\":\"a\"}".into(),
                        },
                        ToolCallRequest {
                            id: "t2".into(),
                            name: "read".into(),
                            arguments: "not json".into(),
                        },
                    ],
                },
                ChatMessage::Tool {
                    tool_call_id: "t1".into(),
                    content: "A".into(),
                },
                ChatMessage::Tool {
                    tool_call_id: "t2".into(),
                    content: "B".into(),
                },
            ],
            tools: vec![ToolSpec {
                name: "read".into(),
                description: "d".into(),
                parameters: json!({"type": "object"}),
            }]
            .into(),
            thought_level: ThoughtLevel::Off,
        };
        let body: Value =
            serde_json::from_slice(&body(&req, &options(), &BodySize::default())).unwrap();
        assert_eq!(body["model"], "claude-x");
        assert_eq!(body["max_tokens"], 1000);
        assert!(body.get("thinking").is_none());
        assert_eq!(
            body["system"],
            json!([{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}])
        );
        assert_eq!(body["tools"][0]["input_schema"], json!({"type": "object"}));
        assert_eq!(body["tools"][0]["cache_control"]["type"], "ephemeral");
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 3, "{messages:?}");
        assert_eq!(
            messages[1]["content"],
            json!([
                {"type": "thinking", "thinking": "hm", "signature": "sig"},
                {"type": "redacted_thinking", "data": "xyz"},
                {"type": "text", "text": "calling"},
                {"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "a"}},
                {"type": "tool_use", "id": "t2", "name": "read", "input": {}},
            ])
        );
        assert_eq!(messages[2]["role"], "user");
        assert_eq!(
            messages[2]["content"],
            json!([
                {"type": "tool_result", "tool_use_id": "t1", "content": "A"},
                {"type": "tool_result", "tool_use_id": "t2", "content": "B"},
            ])
        );
    }

    #[test]
    fn a_user_message_with_images_has_base64_image_blocks() {
        let req = ChatRequest {
            model: "m".into(),
            messages: vec![ChatMessage::UserParts {
                parts: vec![
                    UserPart::Text("look".into()),
                    UserPart::Image(crate::provider::ImageData {
                        mime_type: "image/gif".into(),
                        base64: "R0lGODlh".into(),
                    }),
                ],
            }],
            tools: Vec::new().into(),
            thought_level: ThoughtLevel::Off,
        };
        let body: Value =
            serde_json::from_slice(&body(&req, &options(), &BodySize::default())).unwrap();
        assert_eq!(
            body["messages"],
            json!([{"role": "user", "content": [
                {"type": "text", "text": "look"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/gif", "data": "R0lGODlh"}},
            ]}])
        );
    }

    #[test]
    fn a_thinking_budget_enables_extended_thinking() {
        let req = ChatRequest {
            model: "m".into(),
            messages: vec![],
            tools: Vec::new().into(),
            thought_level: ThoughtLevel::High,
        };
        let options = Options {
            thinking_budget: Some(2048),
            ..options()
        };
        let body: Value =
            serde_json::from_slice(&body(&req, &options, &BodySize::default())).unwrap();
        assert_eq!(
            body["thinking"],
            json!({"type": "enabled", "budget_tokens": 2048})
        );
        assert!(body.get("tools").is_none() && body.get("system").is_none());
    }
}
