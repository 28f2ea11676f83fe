//! The JSON body of an OpenAI-compatible streaming chat-completions request.

use serde_json::{Value, json};

use super::{ChatMessage, ChatRequest, ToolCallRequest, ToolSpec};

/// `stream: true` with usage reporting; tools in the OpenAI function format.
pub fn body(req: &ChatRequest) -> Value {
    let mut body = json!({
        "model": req.model,
        "messages": req.messages.iter().map(message).collect::<Vec<_>>(),
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    if !req.tools.is_empty() {
        body["tools"] = req.tools.iter().map(tool).collect();
    }
    body
}

fn message(m: &ChatMessage) -> Value {
    match m {
        ChatMessage::System { content } => json!({"role": "system", "content": content}),
        ChatMessage::User { content } => json!({"role": "user", "content": content}),
        ChatMessage::Assistant {
            content,
            tool_calls,
        } => {
            let mut m = json!({"role": "assistant", "content": content});
            if !tool_calls.is_empty() {
                m["tool_calls"] = tool_calls.iter().map(tool_call).collect();
            }
            m
        }
        ChatMessage::Tool {
            tool_call_id,
            content,
        } => json!({"role": "tool", "tool_call_id": tool_call_id, "content": content}),
    }
}

fn tool_call(c: &ToolCallRequest) -> Value {
    json!({
        "id": c.id,
        "type": "function",
        "function": {"name": c.name, "arguments": c.arguments},
    })
}

fn tool(t: &ToolSpec) -> Value {
    json!({
        "type": "function",
        "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
                    content: Some("done".into()),
                    tool_calls: vec![],
                },
            ],
            tools: vec![ToolSpec {
                name: "todo_write".into(),
                description: "d".into(),
                parameters: json!({"type": "object"}),
            }],
        };
        let body = body(&req);
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
    fn no_tools_means_no_tools_field() {
        let req = ChatRequest {
            model: "m".into(),
            messages: vec![],
            tools: vec![],
        };
        assert!(body(&req).get("tools").is_none());
    }
}
