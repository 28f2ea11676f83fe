//! Turn-loop tests for paths the shipped tools cannot reach from the binary yet (a tool that
//! runs until cancelled, the tool-round cap). The model is the one stand-in: a scripted
//! in-process provider replaying event lists, as the loopback server does over HTTP.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use futures::stream;
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::{Entry, StopReason, TurnRequest, run_turn};
use crate::provider::{self, ChatRequest, EventStream, Provider, ProviderError, ProviderEvent};
use crate::tools::UpdateSink;
use crate::tools::{BoxFuture, Tool, ToolContext, ToolError, ToolKind, ToolOutput, ToolRegistry};

/// Replays one event list per model call and records the requests.
struct Script {
    replies: Mutex<VecDeque<Vec<ProviderEvent>>>,
    requests: Mutex<Vec<ChatRequest>>,
}

impl Provider for Script {
    fn stream(&self, req: ChatRequest) -> BoxFuture<'_, Result<EventStream, ProviderError>> {
        self.requests.lock().unwrap().push(req);
        let events = self.replies.lock().unwrap().pop_front().unwrap_or_default();
        Box::pin(async move {
            let events: EventStream = Box::pin(stream::iter(events.into_iter().map(Ok)));
            Ok(events)
        })
    }

    fn list_models(&self) -> BoxFuture<'_, Result<Vec<crate::provider::ModelInfo>, ProviderError>> {
        Box::pin(async { Ok(Vec::new()) })
    }
}

fn call(id: &str, name: &str, args: &str) -> Vec<ProviderEvent> {
    vec![
        ProviderEvent::ToolCallStart {
            index: 0,
            id: id.into(),
            name: name.into(),
        },
        ProviderEvent::ToolCallArgsDelta {
            index: 0,
            delta: args.into(),
        },
        ProviderEvent::Stop(provider::StopReason::ToolUse),
    ]
}

/// A tool that runs until its turn is cancelled (a stand-in for a long shell command).
struct Forever;

impl Tool for Forever {
    fn name(&self) -> &str {
        "forever"
    }
    fn description(&self) -> &str {
        "never returns"
    }
    fn parameters(&self) -> Value {
        json!({"type": "object"})
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Execute
    }
    fn title(&self, _args: &Value) -> String {
        "forever".into()
    }
    fn execute<'a>(
        &'a self,
        _args: Value,
        _ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(std::future::pending())
    }
}

#[derive(Default)]
struct Collected {
    updates: Mutex<Vec<Value>>,
    changed: Notify,
}

impl UpdateSink for Collected {
    fn send(&self, update: Value) -> BoxFuture<'_, ()> {
        self.updates.lock().unwrap().push(update);
        self.changed.notify_waiters();
        Box::pin(async {})
    }
}

struct Harness {
    script: Arc<Script>,
    sink: Arc<Collected>,
    ctx: ToolContext,
    tools: ToolRegistry,
}

impl Harness {
    fn new(replies: Vec<Vec<ProviderEvent>>) -> Harness {
        let sink = Arc::new(Collected::default());
        let mut tools = ToolRegistry::builtin();
        tools.register(Arc::new(Forever));
        Harness {
            script: Arc::new(Script {
                replies: Mutex::new(replies.into()),
                requests: Mutex::default(),
            }),
            ctx: ToolContext {
                session_id: "s-test".into(),
                cwd: "/".into(),
                updates: sink.clone(),
                cancel: CancellationToken::new(),
                call_id: String::new(),
                env: Arc::default(),
            },
            sink,
            tools,
        }
    }

    fn request(&self, max_tool_iterations: u32) -> TurnRequest {
        TurnRequest {
            thought_level: Default::default(),
            usage: Default::default(),
            provider: self.script.clone(),
            model: "m".into(),
            system_prompt: None,
            prior: Arc::default(),
            user_text: "go".into(),
            user_images: Vec::new(),
            images: None,
            max_tool_iterations,
        }
    }

    fn statuses(&self) -> Vec<String> {
        self.sink
            .updates
            .lock()
            .unwrap()
            .iter()
            .map(|u| {
                format!(
                    "{}:{}",
                    u["sessionUpdate"].as_str().unwrap(),
                    u["status"].as_str().unwrap_or("")
                )
            })
            .collect()
    }
}

#[tokio::test]
async fn cancelling_during_a_tool_stops_it_and_records_it_failed() {
    let h = Harness::new(vec![call("c1", "forever", "{}")]);
    let cancel = h.ctx.cancel.clone();
    let sink = h.sink.clone();
    let canceller = async move {
        loop {
            let changed = sink.changed.notified();
            if sink
                .updates
                .lock()
                .unwrap()
                .iter()
                .any(|u| u["status"] == "in_progress")
            {
                break;
            }
            changed.await;
        }
        cancel.cancel();
    };
    let (outcome, ()) = tokio::join!(run_turn(h.request(5), &h.tools, &h.ctx), canceller);
    let outcome = outcome.unwrap();
    assert_eq!(outcome.stop_reason, StopReason::Cancelled);
    assert_eq!(
        h.statuses(),
        [
            "tool_call:pending",
            "tool_call_update:in_progress",
            "tool_call_update:failed"
        ]
    );
    assert!(matches!(
        outcome.entries.last(),
        Some(Entry::ToolResult { status, content, .. }) if status == "failed" && content == "cancelled"
    ));
}

#[tokio::test]
async fn the_tool_round_cap_fails_further_calls_and_ends_with_max_turn_requests() {
    let todo = r#"{"todos":[]}"#;
    let h = Harness::new(vec![
        call("c1", "todo_write", todo),
        call("c2", "todo_write", todo),
    ]);
    let outcome = run_turn(h.request(1), &h.tools, &h.ctx).await.unwrap();
    assert_eq!(outcome.stop_reason, StopReason::MaxTurnRequests);
    assert_eq!(h.script.requests.lock().unwrap().len(), 2);
    let statuses = h.statuses();
    assert_eq!(statuses.last().unwrap(), "tool_call_update:failed");
    assert!(statuses.contains(&"tool_call_update:completed".to_owned()));
}

#[tokio::test]
async fn bad_arguments_and_unknown_tools_fail_and_the_model_is_told() {
    let h = Harness::new(vec![
        call("c1", "todo_write", "{not json"),
        call("c2", "no_such_tool", "{}"),
        vec![
            ProviderEvent::TextDelta("ok".into()),
            ProviderEvent::Stop(provider::StopReason::EndTurn),
        ],
    ]);
    let outcome = run_turn(h.request(5), &h.tools, &h.ctx).await.unwrap();
    assert_eq!(outcome.stop_reason, StopReason::EndTurn);
    assert_eq!(outcome.content, "ok");
    let requests = h.script.requests.lock().unwrap();
    let last = format!("{:?}", requests.last().unwrap().messages);
    assert!(last.contains("not valid JSON"), "{last}");
    assert!(last.contains("unknown tool: no_such_tool"), "{last}");
}
