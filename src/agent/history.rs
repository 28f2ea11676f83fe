//! Conversation history: the entries a turn produces, their stored form
//! (`store::StoredEntry` kind + payload), and the two views built from them — the provider's
//! `ChatMessage`s for the next model call, and the `session/update`s that replay a session.
//! A prompt's images are kept by reference (see [`super::prompt_images`]); both views put
//! them back in place of their markers when given their bytes.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::prompt_images::{ImageRef, LoadedImages, user_parts};
use crate::provider::{ChatMessage, ThinkingBlock, TokenUsage, ToolCallRequest, UserPart};
use crate::store::StoredEntry;

/// One history entry, stored in order within its turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "payload", rename_all = "snake_case")]
pub enum Entry {
    /// The user's prompt, materialized to text; its images (if any) by reference, each
    /// marked in the text by its
    /// [`image_marker`](super::prompt_images::image_marker).
    User {
        text: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<ImageRef>,
    },
    /// Text the model streamed in one step.
    Assistant { text: String },
    /// One reasoning block the model streamed in a step; `signature` when the API signed it,
    /// `redacted` (the opaque data, `text` empty) for a block the API encrypted. Both go back
    /// to the model with the step.
    Thinking {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        redacted: Option<String>,
    },
    /// A tool call the model made; `arguments` is the JSON text as the model sent it.
    ToolCall {
        id: String,
        name: String,
        title: String,
        kind: String,
        #[serde(rename = "rawInput")]
        raw_input: Value,
        arguments: String,
        /// ACP `locations` announced with the call (null when none).
        #[serde(default, skip_serializing_if = "Value::is_null")]
        locations: Value,
    },
    /// The outcome of a tool call: `status` is `completed` or `failed`; `extra` holds what
    /// the final update carried besides the text (locations, diff, resource, `_meta`).
    ToolResult {
        id: String,
        status: String,
        content: String,
        #[serde(default, skip_serializing_if = "Value::is_null")]
        extra: Value,
    },
    /// The full plan after a `todo_write` call (ACP plan entries).
    Plan { entries: Value },
    /// The tokens of one model call, and their cost when the model has prices.
    Usage {
        #[serde(flatten)]
        usage: TokenUsage,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost: Option<f64>,
    },
}

impl Entry {
    pub fn to_stored(&self) -> StoredEntry {
        let mut value = serde_json::to_value(self).unwrap_or_default();
        let kind = value["kind"].as_str().unwrap_or_default().to_owned();
        StoredEntry {
            kind,
            payload: value["payload"].take(),
        }
    }

    /// Reads a stored entry; `None` for kinds this version does not know.
    pub fn from_stored(stored: &StoredEntry) -> Option<Entry> {
        Entry::from_stored_owned(stored.clone())
    }

    /// [`Entry::from_stored`] taking the entry: its payload's strings move into the entry
    /// instead of being copied (a `session/load` reads every entry of the session this way).
    pub fn from_stored_owned(stored: StoredEntry) -> Option<Entry> {
        let mut tagged = serde_json::Map::with_capacity(2);
        tagged.insert("kind".to_owned(), Value::String(stored.kind));
        tagged.insert("payload".to_owned(), stored.payload);
        serde_json::from_value(Value::Object(tagged)).ok()
    }
}

/// The messages the model sees for a history: one assistant message per model step
/// (its text and tool calls), followed by the tool results of that step. With `images`, a
/// prompt's images go as images; without, as their markers.
pub fn to_chat_messages<'a>(
    entries: impl IntoIterator<Item = &'a Entry>,
    images: Option<&LoadedImages>,
) -> Vec<ChatMessage> {
    let mut messages = Vec::new();
    let mut step: Option<StepMessage> = None;
    for entry in entries {
        match entry {
            Entry::User { text, images: refs } => {
                flush(&mut messages, &mut step);
                let parts = match images {
                    Some(loaded) if !refs.is_empty() => user_parts(text, refs, loaded),
                    _ => Vec::new(),
                };
                messages.push(
                    match parts.iter().any(|p| matches!(p, UserPart::Image(_))) {
                        true => ChatMessage::UserParts { parts },
                        false => ChatMessage::User {
                            content: text.clone(),
                        },
                    },
                );
            }
            Entry::Thinking {
                text,
                signature,
                redacted,
            } => {
                if step
                    .as_ref()
                    .is_some_and(|s| s.content.is_some() || !s.calls.is_empty())
                {
                    flush(&mut messages, &mut step);
                }
                let block = match redacted {
                    Some(data) => ThinkingBlock::Redacted { data: data.clone() },
                    None => ThinkingBlock::Text {
                        text: text.clone(),
                        signature: signature.clone(),
                    },
                };
                step.get_or_insert_with(Default::default)
                    .thinking
                    .push(block);
            }
            Entry::Assistant { text } => {
                if step.as_ref().is_some_and(|s| !s.calls.is_empty()) {
                    flush(&mut messages, &mut step);
                }
                let step = step.get_or_insert_with(Default::default);
                step.content.get_or_insert_with(String::new).push_str(text);
            }
            Entry::ToolCall {
                id,
                name,
                arguments,
                ..
            } => {
                let step = step.get_or_insert_with(Default::default);
                step.calls.push(ToolCallRequest {
                    id: id.clone(),
                    name: name.clone(),
                    arguments: arguments.clone(),
                });
            }
            Entry::ToolResult { id, content, .. } => {
                flush(&mut messages, &mut step);
                messages.push(ChatMessage::Tool {
                    tool_call_id: id.clone(),
                    content: content.clone(),
                });
            }
            Entry::Plan { .. } | Entry::Usage { .. } => {}
        }
    }
    flush(&mut messages, &mut step);
    messages
}

/// The assistant message of one model step, being gathered.
#[derive(Default)]
struct StepMessage {
    thinking: Vec<ThinkingBlock>,
    content: Option<String>,
    calls: Vec<ToolCallRequest>,
}

fn flush(messages: &mut Vec<ChatMessage>, step: &mut Option<StepMessage>) {
    if let Some(step) = step.take() {
        messages.push(ChatMessage::Assistant {
            thinking: step.thinking,
            content: step.content,
            tool_calls: step.calls,
        });
    }
}

/// The `update` objects of the `session/update`s that replay one entry: none for what the
/// client never saw (redacted reasoning, usage); a prompt with loaded images as its text
/// and image blocks in order.
pub fn to_replay_updates(entry: &Entry, images: &LoadedImages) -> Vec<Value> {
    match entry {
        Entry::User { text, images: refs } if !refs.is_empty() => {
            user_parts(text, refs, images)
                .iter()
                .map(|part| match part {
                    UserPart::Text(text) => text_chunk("user_message_chunk", text),
                    UserPart::Image(image) => json!({
                        "sessionUpdate": "user_message_chunk",
                        "content": {"type": "image", "mimeType": image.mime_type, "data": &*image.base64},
                    }),
                })
                .collect()
        }
        entry => to_replay_update(entry).into_iter().collect(),
    }
}

/// The `update` object of the `session/update` that replays one entry; `None` for what the
/// client never saw (redacted reasoning).
fn to_replay_update(entry: &Entry) -> Option<Value> {
    Some(match entry {
        Entry::User { text, .. } => text_chunk("user_message_chunk", text),
        Entry::Assistant { text } => text_chunk("agent_message_chunk", text),
        Entry::Thinking {
            redacted: Some(_), ..
        }
        | Entry::Usage { .. } => return None,
        Entry::Thinking { text, .. } => text_chunk("agent_thought_chunk", text),
        Entry::ToolCall {
            id,
            name,
            title,
            kind,
            raw_input,
            locations,
            ..
        } => {
            let mut update = tool_call_announce(id, name, title, kind, raw_input);
            if !locations.is_null() {
                update["locations"] = locations.clone();
            }
            update
        }
        Entry::ToolResult {
            id,
            status,
            content,
            extra,
        } => tool_call_finish(id, None, status, content, extra),
        Entry::Plan { entries } => json!({"sessionUpdate": "plan", "entries": entries}),
    })
}

/// `agent_message_chunk` / `agent_thought_chunk` / `user_message_chunk` with one text block.
pub fn text_chunk(kind: &str, text: &str) -> Value {
    json!({"sessionUpdate": kind, "content": {"type": "text", "text": text}})
}

/// The `tool_call` update announcing a call (`pending`).
pub fn tool_call_announce(
    id: &str,
    name: &str,
    title: &str,
    kind: &str,
    raw_input: &Value,
) -> Value {
    json!({
        "sessionUpdate": "tool_call",
        "toolCallId": id,
        "name": name,
        "title": title,
        "kind": kind,
        "status": "pending",
        "rawInput": raw_input,
    })
}

/// The `tool_call_update` moving a call to `in_progress`.
pub fn tool_call_started(id: &str) -> Value {
    json!({"sessionUpdate": "tool_call_update", "toolCallId": id, "status": "in_progress"})
}

/// The final `tool_call_update` of a call: `completed` or `failed`, the result as text content,
/// then `extra`'s `content` items appended and its other keys set.
pub fn tool_call_finish(
    id: &str,
    name: Option<&str>,
    status: &str,
    text: &str,
    extra: &Value,
) -> Value {
    let mut update = json!({
        "sessionUpdate": "tool_call_update",
        "toolCallId": id,
        "status": status,
        "content": [{"type": "content", "content": {"type": "text", "text": text}}],
        "rawOutput": text,
    });
    if let Some(name) = name {
        update["name"] = json!(name);
    }
    if let Value::Object(extra) = extra {
        for (key, value) in extra {
            match (key.as_str(), value, update["content"].as_array_mut()) {
                ("content", Value::Array(items), Some(content)) => {
                    content.extend(items.iter().cloned())
                }
                _ => update[key] = value.clone(),
            }
        }
    }
    update
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::agent::prompt_images::image_marker;
    use crate::provider::ImageData;

    fn call(id: &str) -> Entry {
        Entry::ToolCall {
            id: id.into(),
            name: "todo_write".into(),
            title: "Update plan".into(),
            kind: "think".into(),
            raw_input: json!({"todos": []}),
            arguments: "{\"todos\":[]}".into(),
            locations: Value::Null,
        }
    }

    fn thinking(text: &str) -> Entry {
        Entry::Thinking {
            text: text.into(),
            signature: None,
            redacted: None,
        }
    }

    fn result(id: &str) -> Entry {
        Entry::ToolResult {
            id: id.into(),
            status: "completed".into(),
            content: "ok".into(),
            extra: Value::Null,
        }
    }

    #[test]
    fn stored_form_round_trips() {
        for entry in [
            Entry::User {
                text: "hi".into(),
                images: vec![],
            },
            call("c1"),
            result("c1"),
            Entry::Plan { entries: json!([]) },
        ] {
            let stored = entry.to_stored();
            assert_eq!(Entry::from_stored(&stored), Some(entry));
        }
        let stored = thinking("t").to_stored();
        assert_eq!(stored.kind, "thinking");
        assert_eq!(stored.payload, json!({"text": "t"}));
    }

    #[test]
    fn a_tool_step_becomes_one_assistant_message_then_the_results() {
        let entries = vec![
            Entry::User {
                text: "go".into(),
                images: vec![],
            },
            thinking("hm"),
            Entry::Assistant {
                text: "calling".into(),
            },
            call("c1"),
            call("c2"),
            result("c1"),
            result("c2"),
            Entry::Assistant {
                text: "done".into(),
            },
        ];
        let messages = to_chat_messages(&entries, None);
        assert_eq!(messages.len(), 5, "{messages:?}");
        match &messages[1] {
            ChatMessage::Assistant {
                content,
                tool_calls,
                ..
            } => {
                assert_eq!(content.as_deref(), Some("calling"));
                assert_eq!(tool_calls.len(), 2);
            }
            other => panic!("unexpected {other:?}"),
        }
        assert!(
            matches!(&messages[4], ChatMessage::Assistant { content: Some(t), tool_calls, .. } if t == "done" && tool_calls.is_empty())
        );
    }

    #[test]
    fn replay_uses_the_acp_update_kinds() {
        assert_eq!(
            to_replay_update(&Entry::User {
                text: "q".into(),
                images: vec![]
            })
            .unwrap(),
            json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "q"}})
        );
        assert_eq!(to_replay_update(&call("c1")).unwrap()["status"], "pending");
        let finish = to_replay_update(&result("c1")).unwrap();
        assert_eq!(finish["sessionUpdate"], "tool_call_update");
        assert_eq!(finish["content"][0]["content"]["text"], "ok");
    }

    fn image(name: &str) -> (ImageRef, ImageData) {
        let reference = ImageRef {
            path: PathBuf::from(format!("/w/uploads/{name}.png")),
            mime_type: "image/png".into(),
            sha256: name.into(),
        };
        let data = ImageData {
            mime_type: "image/png".into(),
            base64: format!("{name}-bytes").into(),
        };
        (reference, data)
    }

    #[test]
    fn loaded_images_replace_their_markers_in_order_and_missing_ones_stay_text() {
        let (a, a_data) = image("a");
        let (b, _) = image("b");
        let text = format!(
            "compare\n\n{}\n\n{}\n\nand {}",
            image_marker(&a.path),
            image_marker(&b.path),
            image_marker(&a.path)
        );
        let loaded = LoadedImages::from([("a".to_owned(), a_data.clone())]);
        let parts = user_parts(&text, &[a.clone(), b.clone()], &loaded);
        assert_eq!(
            parts,
            vec![
                UserPart::Text("compare".into()),
                UserPart::Image(a_data.clone()),
                UserPart::Text(format!("{}\n\nand ", image_marker(&b.path))),
                UserPart::Image(a_data.clone()),
            ]
        );
        let entry = Entry::User {
            text: text.clone(),
            images: vec![a, b],
        };
        let stored = entry.to_stored();
        assert_eq!(stored.payload["images"][0]["mimeType"], "image/png");
        assert_eq!(Entry::from_stored(&stored).as_ref(), Some(&entry));
        match &to_chat_messages([&entry], Some(&loaded))[0] {
            ChatMessage::UserParts { parts: sent } => assert_eq!(*sent, parts),
            other => panic!("unexpected {other:?}"),
        }
        assert_eq!(
            to_chat_messages([&entry], None),
            vec![ChatMessage::User { content: text }]
        );
        let replay = to_replay_updates(&entry, &loaded);
        assert_eq!(replay.len(), 4);
        assert_eq!(
            replay[1]["content"],
            json!({"type": "image", "mimeType": "image/png", "data": "a-bytes"})
        );
        assert_eq!(replay[0]["content"]["text"], "compare");
    }
}
