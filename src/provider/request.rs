//! The JSON body of an OpenAI-compatible streaming chat-completions request, serialized
//! straight from the request (no intermediate JSON tree: long histories are sent every turn).
//! A thought level other than `off` is sent as `reasoning_effort`. A user message with
//! images is an array of `text` and `image_url` parts, each image a `data:` URL.

use serde::Serialize;
use serde_json::Value;

use super::http::BodySize;
use super::{
    ChatMessage, ChatRequest, ImageData, ThoughtLevel, ToolCallRequest, ToolSpec, UserPart,
};

/// `stream: true` with usage reporting; tools in the OpenAI function format; serialized into
/// a buffer sized by `size`.
pub fn body(req: &ChatRequest, size: &BodySize) -> Vec<u8> {
    let body = Body {
        model: &req.model,
        messages: req.messages.iter().map(Message::from).collect(),
        stream: true,
        stream_options: StreamOptions {
            include_usage: true,
        },
        tools: req.tools.iter().map(Tool::from).collect(),
        reasoning_effort: match req.thought_level {
            ThoughtLevel::Off => None,
            level => Some(level.as_str()),
        },
    };
    size.serialize(&body)
}

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    messages: Vec<Message<'a>>,
    stream: bool,
    stream_options: StreamOptions,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Tool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_effort: Option<&'static str>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
enum Message<'a> {
    System {
        content: &'a str,
    },
    User {
        content: &'a str,
    },
    #[serde(rename = "user")]
    UserParts {
        content: Vec<Part<'a>>,
    },
    Assistant {
        content: Option<&'a str>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall<'a>>,
    },
    Tool {
        tool_call_id: &'a str,
        content: &'a str,
    },
}

impl<'a> From<&'a ChatMessage> for Message<'a> {
    fn from(m: &'a ChatMessage) -> Self {
        match m {
            ChatMessage::System { content } => Message::System { content },
            ChatMessage::User { content } => Message::User { content },
            ChatMessage::UserParts { parts } => Message::UserParts {
                content: parts.iter().map(Part::from).collect(),
            },
            ChatMessage::Assistant {
                content,
                tool_calls,
                ..
            } => Message::Assistant {
                content: content.as_deref(),
                tool_calls: tool_calls.iter().map(ToolCall::from).collect(),
            },
            ChatMessage::Tool {
                tool_call_id,
                content,
            } => Message::Tool {
                tool_call_id,
                content,
            },
        }
    }
}

/// One part of a user message's content array.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Part<'a> {
    Text { text: &'a str },
    ImageUrl { image_url: ImageUrl<'a> },
}

impl<'a> From<&'a UserPart> for Part<'a> {
    fn from(part: &'a UserPart) -> Self {
        match part {
            UserPart::Text(text) => Part::Text { text },
            UserPart::Image(image) => Part::ImageUrl {
                image_url: ImageUrl {
                    url: DataUrl(image),
                },
            },
        }
    }
}

#[derive(Serialize)]
struct ImageUrl<'a> {
    url: DataUrl<'a>,
}

/// `data:<mime>;base64,<data>`, written straight into the body (images are large).
struct DataUrl<'a>(&'a ImageData);

impl Serialize for DataUrl<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let image = self.0;
        serializer.collect_str(&format_args!(
            "data:{};base64,{}",
            image.mime_type, image.base64
        ))
    }
}

#[derive(Serialize)]
struct ToolCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: FunctionCall<'a>,
}

#[derive(Serialize)]
struct FunctionCall<'a> {
    name: &'a str,
    arguments: &'a str,
}

impl<'a> From<&'a ToolCallRequest> for ToolCall<'a> {
    fn from(c: &'a ToolCallRequest) -> Self {
        ToolCall {
            id: &c.id,
            kind: "function",
            function: FunctionCall {
                name: &c.name,
                arguments: &c.arguments,
            },
        }
    }
}

#[derive(Serialize)]
struct Tool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: FunctionSpec<'a>,
}

#[derive(Serialize)]
struct FunctionSpec<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

impl<'a> From<&'a ToolSpec> for Tool<'a> {
    fn from(t: &'a ToolSpec) -> Self {
        Tool {
            kind: "function",
            function: FunctionSpec {
                name: &t.name,
                description: &t.description,
                parameters: &t.parameters,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn parsed(req: &ChatRequest) -> Value {
        serde_json::from_slice(&body(req, &BodySize::default())).unwrap()
    }

    #[test]
    fn messages_and_tools_use_the_openai_shapes() {
        let req = ChatRequest {
            model: "m".into(),
            messages: vec![
                ChatMessage::System {
                    content: "s".into(),
                },
                ChatMessage::User {
                    content: "u".into(),
                },
                ChatMessage::Assistant {
                    thinking: vec![],
                    content: None,
                    tool_calls: vec![ToolCallRequest {
                        id: "c1".into(),
                        name: "todo_write".into(),
                        arguments: "{}".into(),
                    }],
                },
                ChatMessage::Tool {
                    tool_call_id: "c1".into(),
                    content: "ok".into(),
                },
                ChatMessage::Assistant {
                    thinking: vec![],
                    content: Some("done".into()),
                    tool_calls: vec![],
                },
            ],
            tools: vec![ToolSpec {
                name: "todo_write".into(),
                description: "d".into(),
                parameters: json!({"type": "object"}),
            }]
            .into(),
            thought_level: ThoughtLevel::Off,
        };
        let body = parsed(&req);
        assert_eq!(body["stream"], true);
        assert_eq!(body["stream_options"]["include_usage"], true);
        assert_eq!(
            body["messages"][0],
            json!({"role": "system", "content": "s"})
        );
        assert_eq!(body["messages"][2]["content"], Value::Null);
        assert_eq!(
            body["messages"][2]["tool_calls"][0]["function"]["name"],
            "todo_write"
        );
        assert_eq!(body["messages"][2]["tool_calls"][0]["type"], "function");
        assert_eq!(
            body["messages"][3],
            json!({"role": "tool", "tool_call_id": "c1", "content": "ok"})
        );
        assert!(body["messages"][4].get("tool_calls").is_none());
        assert_eq!(
            body["tools"][0]["function"]["parameters"],
            json!({"type": "object"})
        );
    }

    #[test]
    fn a_user_message_with_images_is_text_and_image_url_parts() {
        let req = ChatRequest {
            model: "m".into(),
            messages: vec![ChatMessage::UserParts {
                parts: vec![
                    UserPart::Text("look".into()),
                    UserPart::Image(ImageData {
                        mime_type: "image/png".into(),
                        base64: "iVBORw0KGgo=".into(),
                    }),
                ],
            }],
            tools: Vec::new().into(),
            thought_level: ThoughtLevel::Off,
        };
        assert_eq!(
            parsed(&req)["messages"][0],
            json!({"role": "user", "content": [
                {"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
            ]})
        );
    }

    #[test]
    fn no_tools_means_no_tools_field() {
        let req = ChatRequest {
            model: "m".into(),
            messages: vec![],
            tools: Vec::new().into(),
            thought_level: ThoughtLevel::High,
        };
        assert!(parsed(&req).get("tools").is_none());
        assert_eq!(parsed(&req)["reasoning_effort"], "high");
    }
}
