//! One prompt turn: the model is streamed step by step; each step's tool calls are announced
//! (`tool_call`, pending), executed through the registry (`in_progress`, then `completed` or
//! `failed`; a `deliver_file` result is embedded by the session's embedder first), and their
//! results go back to the model, until it stops. Cancellation ends the model stream and the
//! running tool at once. The caller stores [`TurnOutcome::entries`].

use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;
use tracing::Instrument;

use super::history::{self, Entry};
use super::recorder::PlanRecorder;
use super::step::{ModelToolCall, Step, stream_step};
use super::usage::{self, UsageContext};
use crate::approval::gate;
use crate::audit;
use crate::provider::{
    self, ChatMessage, ChatRequest, Provider, ProviderError, ThinkingBlock, ToolSpec,
};
use crate::tools::{ToolContext, ToolOutput, ToolRegistry};

/// Appended to the partial text of a turn the client cancelled.
pub const CANCELLED_MARKER: &str = "\n\n[turn cancelled via client]";

/// How a turn ended (the ACP `stopReason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    EndTurn,
    MaxTokens,
    MaxTurnRequests,
    Refusal,
    Cancelled,
}

impl StopReason {
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::EndTurn => "end_turn",
            StopReason::MaxTokens => "max_tokens",
            StopReason::MaxTurnRequests => "max_turn_requests",
            StopReason::Refusal => "refusal",
            StopReason::Cancelled => "cancelled",
        }
    }
}

/// Everything one turn needs besides the tools and their context.
pub struct TurnRequest {
    pub provider: Arc<dyn Provider>,
    pub model: String,
    /// The session's thought level (already `Off` for a model that does not take one).
    pub thought_level: provider::ThoughtLevel,
    pub system_prompt: Option<String>,
    /// The session's history before this turn.
    pub prior: Arc<Vec<Entry>>,
    /// The user's prompt, materialized to text, with its images' markers.
    pub user_text: String,
    /// The prompt's images (stored under `uploads/`), marked in `user_text`.
    pub user_images: Vec<super::prompt_images::ImageRef>,
    /// The bytes of the history's and the prompt's images when the model takes images;
    /// `None` sends their markers instead.
    pub images: Option<super::prompt_images::LoadedImages>,
    /// Tool rounds allowed; a model asking for more ends the turn with `max_turn_requests`.
    pub max_tool_iterations: u32,
    /// The model's context window and prices, for `usage_update`.
    pub usage: UsageContext,
}

/// The result of a turn that was not a provider failure.
#[derive(Debug)]
pub struct TurnOutcome {
    pub stop_reason: StopReason,
    /// The text the model streamed in this turn (plus the marker when cancelled).
    pub content: String,
    /// This turn's history entries, starting with the user's prompt.
    pub entries: Vec<Entry>,
}

/// A turn that failed; nothing of it is stored.
#[derive(Debug, thiserror::Error)]
pub enum TurnError {
    #[error(transparent)]
    Provider(#[from] ProviderError),
}

struct Turn<'a> {
    request: &'a TurnRequest,
    tools: &'a ToolRegistry,
    /// What each model call of the turn offers of `tools` (their schemas under the turn's
    /// policy): built once, where every call built and freed them again.
    specs: std::sync::Arc<[ToolSpec]>,
    ctx: &'a ToolContext,
    entries: Vec<Entry>,
    content: String,
}

/// The schemas of `tools` as offered under `ctx`'s policy.
fn specs(tools: &ToolRegistry, ctx: &ToolContext) -> std::sync::Arc<[ToolSpec]> {
    tools
        .iter()
        .map(|tool| ToolSpec {
            name: tool.name().to_owned(),
            description: tool.description().to_owned(),
            parameters: tool.parameters_for(&ctx.env.policy),
        })
        .collect()
}

/// Runs one turn to its end.
pub async fn run_turn(
    request: TurnRequest,
    tools: &ToolRegistry,
    ctx: &ToolContext,
) -> Result<TurnOutcome, TurnError> {
    let mut turn = Turn {
        entries: vec![Entry::User {
            text: request.user_text.clone(),
            images: request.user_images.clone(),
        }],
        request: &request,
        tools,
        specs: specs(tools, ctx),
        ctx,
        content: String::new(),
    };
    let started = Instant::now();
    let stop_reason = turn.run().await;
    crate::metrics::get().turn(started.elapsed());
    let stop_reason = stop_reason?;
    if stop_reason == StopReason::Cancelled {
        turn.content.push_str(CANCELLED_MARKER);
    }
    Ok(TurnOutcome {
        stop_reason,
        content: turn.content,
        entries: turn.entries,
    })
}

impl Turn<'_> {
    async fn run(&mut self) -> Result<StopReason, TurnError> {
        let mut rounds = 0u32;
        loop {
            crate::metrics::get().model_request();
            let step = stream_step(
                self.request.provider.as_ref(),
                self.chat_request(),
                self.ctx.updates.as_ref(),
                &self.ctx.cancel,
            )
            .instrument(crate::telemetry::chat(&self.request.model))
            .await?;
            self.record_step_text(&step);
            if let Some(usage) = step.usage {
                self.record_usage(usage).await;
            }
            if step.cancelled {
                return Ok(StopReason::Cancelled);
            }
            match step.stop {
                Some(provider::StopReason::MaxTokens) => return Ok(StopReason::MaxTokens),
                Some(provider::StopReason::Refusal) => return Ok(StopReason::Refusal),
                _ => {}
            }
            if step.tool_calls.is_empty() {
                return Ok(StopReason::EndTurn);
            }
            let calls = self.announce(&step.tool_calls).await;
            if rounds >= self.request.max_tool_iterations {
                self.fail_all(
                    &calls,
                    "not executed: the tool iteration limit of this turn was reached",
                )
                .await;
                return Ok(StopReason::MaxTurnRequests);
            }
            rounds += 1;
            if !self.execute_all(&calls).await {
                return Ok(StopReason::Cancelled);
            }
        }
    }

    fn chat_request(&self) -> ChatRequest {
        let mut messages = Vec::new();
        if let Some(system) = &self.request.system_prompt {
            messages.push(ChatMessage::System {
                content: system.clone(),
            });
        }
        let history = self.request.prior.iter().chain(&self.entries);
        messages.extend(history::to_chat_messages(
            history,
            self.request.images.as_ref(),
        ));
        ChatRequest {
            model: self.request.model.clone(),
            thought_level: self.request.thought_level,
            messages,
            tools: self.specs.clone(),
        }
    }

    /// Keeps one call's usage in the history and sends its `usage_update`.
    async fn record_usage(&mut self, usage: provider::TokenUsage) {
        let prices = self.request.usage.prices.as_ref();
        let cost = prices.map(|p| usage::cost(&usage, p));
        self.entries.push(Entry::Usage { usage, cost });
        let (_, session_cost) = usage::totals(self.request.prior.iter().chain(&self.entries));
        let update = usage::update(&usage, &self.request.usage, session_cost);
        self.ctx.updates.send(update).await;
    }

    fn record_step_text(&mut self, step: &Step) {
        for block in &step.thinking {
            self.entries.push(match block {
                ThinkingBlock::Text { text, signature } => Entry::Thinking {
                    text: text.clone(),
                    signature: signature.clone(),
                    redacted: None,
                },
                ThinkingBlock::Redacted { data } => Entry::Thinking {
                    text: String::new(),
                    signature: None,
                    redacted: Some(data.clone()),
                },
            });
        }
        if !step.text.is_empty() {
            self.entries.push(Entry::Assistant {
                text: step.text.clone(),
            });
            self.content.push_str(&step.text);
        }
    }

    /// Sends `tool_call` (pending) for each call and records them; returns the calls with
    /// their parsed arguments.
    async fn announce(&mut self, calls: &[ModelToolCall]) -> Vec<AnnouncedCall> {
        let mut announced = Vec::new();
        for (i, call) in calls.iter().enumerate() {
            let id = if call.id.is_empty() {
                format!("call-{}-{i}", self.entries.len())
            } else {
                call.id.clone()
            };
            let args = parse_arguments(&call.arguments);
            let (title, kind, locations) = match self.tools.get(&call.name) {
                Some(tool) => (
                    tool.title(&args),
                    tool.kind().as_str(),
                    tool.locations(&args, &self.ctx.cwd),
                ),
                None => (call.name.clone(), "other", Value::Null),
            };
            let mut update = history::tool_call_announce(&id, &call.name, &title, kind, &args);
            if !locations.is_null() {
                update["locations"] = locations.clone();
            }
            self.ctx.updates.send(update).await;
            self.entries.push(Entry::ToolCall {
                id: id.clone(),
                name: call.name.clone(),
                title,
                kind: kind.to_owned(),
                raw_input: args.clone(),
                arguments: call.arguments.clone(),
                locations,
            });
            announced.push(AnnouncedCall {
                id,
                name: call.name.clone(),
                args,
            });
        }
        announced
    }

    /// Executes the calls in order; `false` when the turn was cancelled meanwhile (the calls
    /// not finished are recorded as failed).
    async fn execute_all(&mut self, calls: &[AnnouncedCall]) -> bool {
        for (i, call) in calls.iter().enumerate() {
            self.ctx
                .updates
                .send(history::tool_call_started(&call.id))
                .await;
            let recorder = Arc::new(PlanRecorder::new(self.ctx.updates.clone()));
            let result = tokio::select! {
                biased;
                () = self.ctx.cancel.cancelled() => None,
                result = self.execute(call, recorder.clone()) => Some(result),
            };
            let Some(result) = result else {
                self.fail_all(&calls[i..], "cancelled").await;
                return false;
            };
            for entries in recorder.take() {
                self.entries.push(Entry::Plan { entries });
            }
            self.finish(call, result).await;
        }
        true
    }

    async fn execute(
        &self,
        call: &AnnouncedCall,
        recorder: Arc<PlanRecorder>,
    ) -> Result<ToolOutput, String> {
        let ctx = ToolContext {
            session_id: self.ctx.session_id.clone(),
            cwd: self.ctx.cwd.clone(),
            updates: recorder,
            cancel: self.ctx.cancel.clone(),
            call_id: call.id.clone(),
            // A mode the client chose during the turn applies from this call on.
            env: self.ctx.env.for_next_call(),
        };
        let subject = audit::tool::Subject::of(&call.name, &call.args);
        // A call that cannot be dispatched is refused, and the refusal recorded.
        let tool = match (self.tools.get(&call.name), &call.args) {
            (None, _) => Err(("unknown_tool", format!("unknown tool: {}", call.name))),
            (Some(_), Value::String(raw)) => Err((
                "invalid_arguments",
                format!("the arguments are not valid JSON: {raw}"),
            )),
            (Some(tool), _) => Ok(tool),
        };
        let tool = match tool {
            Ok(tool) => tool,
            Err((rule, reason)) => {
                let refused = gate::refuse(&ctx, &call.name, rule, reason);
                return Err(audit::tool::traced(subject, refused).await.0.0);
            }
        };
        let started = Instant::now();
        let span = crate::telemetry::execute_tool(&call.name, &call.id);
        let (result, trail) = audit::tool::traced(subject, tool.execute(call.args.clone(), &ctx))
            .instrument(span.clone())
            .await;
        if result.is_err() {
            crate::telemetry::failed(&span);
        }
        let execution = audit::tool::Execution {
            session: &ctx.session_id,
            turn: self.number(),
            call_id: &call.id,
            tool: &call.name,
            args: &call.args,
            cwd: &ctx.cwd,
            autonomy: ctx.env.policy.level,
            scope: &ctx.env.audit,
            status: if result.is_ok() {
                "completed"
            } else {
                "failed"
            },
            duration: started.elapsed(),
            trail,
        };
        let backend = execution
            .trail
            .sandbox
            .as_ref()
            .map_or("none".to_owned(), |s| {
                s["backend"].as_str().unwrap_or("none").to_owned()
            });
        crate::metrics::get().tool_execution(
            crate::tools::metric_label(&call.name),
            &backend,
            execution.status,
            execution.duration,
        );
        // The record is part of the call: one that cannot be written fails it.
        if let Err(e) = audit::record(execution.event()).await {
            return Err(match result {
                Err(failed) => format!("{failed} (and its audit record failed too: {e})"),
                Ok(_) => format!(
                    "audit: the call's result is withheld because its audit record cannot be \
                     written: {e}"
                ),
            });
        }
        let mut output = result.map_err(|e| e.0)?;
        // A delivered file is embedded by the client-facing layer, which re-checks it.
        if let Some(delivery) = output.delivery.take() {
            let embedder = ctx.env.embedder.clone();
            let item = embedder.embed(&ctx, &delivery).await.map_err(|e| e.0)?;
            append_content(&mut output.extra, item);
        }
        Ok(output)
    }

    /// This turn's number in the session (1 for the first).
    fn number(&self) -> u64 {
        let prior = self.request.prior.iter();
        prior.filter(|e| matches!(e, Entry::User { .. })).count() as u64 + 1
    }

    async fn finish(&mut self, call: &AnnouncedCall, result: Result<ToolOutput, String>) {
        let (status, text, mut extra) = match result {
            Ok(output) => ("completed", output.text, output.extra),
            Err(text) => ("failed", text, Value::Null),
        };
        // "Always allow" answers travel with the result, so a restored session keeps them.
        let allowed = self.ctx.env.approvals.take_new();
        if !allowed.is_empty() {
            if !extra.is_object() {
                extra = Value::Object(Default::default());
            }
            extra["_meta"]["zeroclaw"]["allowAlways"] = serde_json::json!(allowed);
        }
        let update = history::tool_call_finish(&call.id, Some(&call.name), status, &text, &extra);
        self.ctx.updates.send(update).await;
        self.entries.push(Entry::ToolResult {
            id: call.id.clone(),
            status: status.to_owned(),
            content: text,
            extra,
        });
    }

    async fn fail_all(&mut self, calls: &[AnnouncedCall], reason: &str) {
        for call in calls {
            self.finish(call, Err(reason.to_owned())).await;
        }
    }
}

/// Appends `item` to `extra`'s `content` list (made an object with one when needed).
fn append_content(extra: &mut Value, item: Value) {
    if !extra.is_object() {
        *extra = Value::Object(Default::default());
    }
    match extra["content"].as_array_mut() {
        Some(content) => content.push(item),
        None => extra["content"] = Value::Array(vec![item]),
    }
}

struct AnnouncedCall {
    id: String,
    name: String,
    args: Value,
}

/// The arguments as JSON; text that is not a JSON object stays a string (and fails the call).
fn parse_arguments(arguments: &str) -> Value {
    let text = if arguments.trim().is_empty() {
        "{}"
    } else {
        arguments
    };
    match serde_json::from_str::<Value>(text) {
        Ok(value @ Value::Object(_)) => value,
        _ => Value::String(arguments.to_owned()),
    }
}
