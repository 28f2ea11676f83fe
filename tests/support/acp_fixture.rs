//! Ready-made setups for the protocol tests: a loopback model server with a script, a
//! `zeroclaw acp` process pointed at it and initialized, a temp workspace and one session.
#![allow(dead_code)]

use serde_json::Value;
use tempfile::TempDir;

use super::acp_client::{AcpClient, Builder};
use super::model_server::{ModelServer, Reply};

/// A model server, an initialized server process and a session in a temp workspace.
pub struct Fixture {
    pub model: ModelServer,
    pub client: AcpClient,
    pub work: TempDir,
    pub session: String,
}

impl Fixture {
    /// Starts everything with the default `coder` agent.
    pub fn start(script: Vec<Reply>) -> Fixture {
        Self::start_with(script, |b| b)
    }

    /// Starts everything; `tweak` adjusts the spawn options (env, flags, config).
    pub fn start_with(script: Vec<Reply>, tweak: impl FnOnce(Builder) -> Builder) -> Fixture {
        let model = ModelServer::start_blocking(script);
        let client = tweak(AcpClient::builder().model(model.base_url())).spawn();
        client.initialize();
        let work = tempfile::tempdir().expect("workspace");
        let session = client.new_session(work.path());
        Fixture {
            model,
            client,
            work,
            session,
        }
    }

    /// Prompts the session with one text block; returns the whole response message.
    pub fn prompt(&self, text: &str) -> Value {
        self.client.prompt(&self.session, text)
    }

    /// The session's updates received so far.
    pub fn updates(&self) -> Vec<Value> {
        self.client.updates_for(&self.session)
    }

    /// The `messages` array of the n-th chat request the model server received.
    pub fn model_messages(&self, n: usize) -> Vec<Value> {
        let requests = self.model.requests();
        let request = requests
            .get(n)
            .unwrap_or_else(|| panic!("model request {n} of {}", requests.len()));
        request["messages"].as_array().cloned().unwrap_or_default()
    }
}

/// Content of the last message with this role.
pub fn last_content(messages: &[Value], role: &str) -> String {
    messages
        .iter()
        .rev()
        .find(|m| m["role"] == role)
        .map(|m| content_text(&m["content"]))
        .unwrap_or_default()
}

/// Text of an OpenAI message `content` (a string or an array of text parts).
pub fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// Contract §3: every `tool_call` is announced once as `pending`, only announced ids get
/// `tool_call_update`s, and each call ends with exactly one `completed` or `failed` as its last
/// status. Returns the ids with their final status, in announcement order.
pub fn assert_tool_calls_well_formed(updates: &[Value]) -> Vec<(Value, String)> {
    let mut calls: Vec<(Value, Vec<String>)> = Vec::new();
    for u in updates {
        match u["sessionUpdate"].as_str() {
            Some("tool_call") => {
                assert_eq!(u["status"], "pending", "announced as pending: {u}");
                let seen = calls.iter().any(|(id, _)| *id == u["toolCallId"]);
                assert!(!seen, "announced twice: {u}");
                calls.push((u["toolCallId"].clone(), Vec::new()));
            }
            Some("tool_call_update") => {
                let entry = calls.iter_mut().find(|(id, _)| *id == u["toolCallId"]);
                let (_, statuses) =
                    entry.unwrap_or_else(|| panic!("update for an unannounced call: {u}"));
                if let Some(status) = u["status"].as_str() {
                    statuses.push(status.to_string());
                }
            }
            _ => {}
        }
    }
    calls
        .into_iter()
        .map(|(id, statuses)| {
            let finals = statuses
                .iter()
                .filter(|s| *s == "completed" || *s == "failed");
            assert_eq!(
                finals.count(),
                1,
                "call {id} has one final status: {statuses:?}"
            );
            let last = statuses.last().cloned().unwrap_or_default();
            assert!(
                last == "completed" || last == "failed",
                "call {id} ends final: {statuses:?}"
            );
            (id, last)
        })
        .collect()
}
