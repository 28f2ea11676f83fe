//! Model providers behind one streaming trait.
//!
//! The agent builds a [`ChatRequest`], calls [`Provider::stream`] and consumes
//! [`ProviderEvent`]s until [`ProviderEvent::Stop`]. Dropping the stream aborts the HTTP
//! request, which is how cancellation stops the model. [`openai`] implements the trait over
//! [`sse`]-framed chat-completion chunks, mapped to events by [`chunk`]; [`anthropic`] over
//! the Messages API's events. Both share the HTTP plumbing of [`http`].

pub mod anthropic;
pub mod chunk;
mod error;
mod http;
pub mod openai;
mod request;
mod retry;
pub mod sse;

use std::pin::Pin;
use std::sync::Arc;

use futures::Stream;
use serde::{Deserialize, Serialize};

pub use error::{MAX_RETRY_AFTER_SECS, ProviderError};

use crate::config::{Config, ProviderKind};

/// One message of the conversation sent to the model.
#[derive(Debug, Clone, PartialEq)]
pub enum ChatMessage {
    System {
        content: String,
    },
    User {
        content: String,
    },
    /// A user message with images: text and images in the order of the prompt.
    UserParts {
        parts: Vec<UserPart>,
    },
    Assistant {
        /// The step's reasoning blocks, sent back to the APIs that require them.
        thinking: Vec<ThinkingBlock>,
        content: Option<String>,
        tool_calls: Vec<ToolCallRequest>,
    },
    Tool {
        tool_call_id: String,
        content: String,
    },
}

/// One part of a [`ChatMessage::UserParts`].
#[derive(Debug, Clone, PartialEq)]
pub enum UserPart {
    Text(String),
    Image(ImageData),
}

/// An image as the APIs take it inline: its MIME type and its bytes in standard base64
/// (shared, as every model call of a turn sends the whole history again).
#[derive(Debug, Clone, PartialEq)]
pub struct ImageData {
    pub mime_type: String,
    pub base64: std::sync::Arc<str>,
}

/// One reasoning block of a model step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ThinkingBlock {
    /// Reasoning text; `signature` when the API signed it (then it must come back unchanged).
    Text {
        text: String,
        signature: Option<String>,
    },
    /// Reasoning the API encrypted; only the opaque `data` is kept and sent back.
    Redacted { data: String },
}

/// The tokens of one model call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenUsage {
    /// All prompt tokens, cached ones included.
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Prompt tokens read from the provider's cache.
    pub cache_read_tokens: u64,
    /// Prompt tokens written to the provider's cache.
    pub cache_write_tokens: u64,
    /// Output tokens spent on reasoning, where the API tells.
    pub reasoning_tokens: u64,
}

/// A tool call the model made; `arguments` is JSON text as the model produced it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCallRequest {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// A tool offered to the model; `parameters` is a JSON Schema object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: serde_json::Value,
}

/// One model call.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    pub model: String,
    pub messages: Vec<ChatMessage>,
    /// The tools offered, shared by the model calls of one turn (built once per turn).
    pub tools: std::sync::Arc<[ToolSpec]>,
    /// How hard the model should think; `Off` sends no reasoning setting at all.
    pub thought_level: ThoughtLevel,
}

/// The session's thought level, which each provider maps to its own setting.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum ThoughtLevel {
    #[default]
    Off,
    Low,
    Medium,
    High,
}

impl ThoughtLevel {
    pub const ALL: [ThoughtLevel; 4] = [
        ThoughtLevel::Off,
        ThoughtLevel::Low,
        ThoughtLevel::Medium,
        ThoughtLevel::High,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ThoughtLevel::Off => "off",
            ThoughtLevel::Low => "low",
            ThoughtLevel::Medium => "medium",
            ThoughtLevel::High => "high",
        }
    }

    pub fn parse(value: &str) -> Option<ThoughtLevel> {
        ThoughtLevel::ALL.into_iter().find(|l| l.as_str() == value)
    }
}

/// What a streaming model call yields, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProviderEvent {
    TextDelta(String),
    ThinkingDelta(String),
    /// The signature closing the reasoning block streamed so far.
    ThinkingSignature(String),
    /// A whole redacted reasoning block.
    RedactedThinking(String),
    ToolCallStart {
        index: usize,
        id: String,
        name: String,
    },
    ToolCallArgsDelta {
        index: usize,
        delta: String,
    },
    ToolCallEnd {
        index: usize,
    },
    Usage(TokenUsage),
    Stop(StopReason),
}

/// Why the model stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StopReason {
    EndTurn,
    ToolUse,
    MaxTokens,
    Refusal,
}

/// The events of one model call; dropping it aborts the request.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<ProviderEvent, ProviderError>> + Send>>;

/// A model the provider lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelInfo {
    pub id: String,
    /// The provider's display name, when it gives one.
    pub name: Option<String>,
}

/// A boxed future of the provider's answer.
pub type ProviderFuture<'a, T> =
    Pin<Box<dyn Future<Output = Result<T, ProviderError>> + Send + 'a>>;

/// A model API. Object-safe; used as `Arc<dyn Provider>`.
pub trait Provider: Send + Sync {
    /// Starts a call; resolves once the response headers arrived (after any retries).
    fn stream(&self, req: ChatRequest) -> ProviderFuture<'_, EventStream>;

    /// The models the API offers (`GET <base_url>/models`), within the request timeout.
    fn list_models(&self) -> ProviderFuture<'_, Vec<ModelInfo>>;
}

/// The provider named `provider_name` in `config`.
///
/// A missing API key is not an error here: it is reported by the first
/// [`Provider::stream`] call, with the variable or key to set.
pub fn build(config: &Config, provider_name: &str) -> Result<Arc<dyn Provider>, ProviderError> {
    let cfg = config
        .providers
        .get(provider_name)
        .ok_or_else(|| ProviderError::UnknownProvider(provider_name.to_owned()))?;
    let key = config
        .resolve_api_key(provider_name)
        .map_err(|e| e.to_string());
    match cfg.kind {
        ProviderKind::OpenAi => Ok(Arc::new(openai::OpenAiProvider::new(
            provider_name,
            cfg,
            key,
        )?)),
        ProviderKind::Anthropic => Ok(Arc::new(anthropic::AnthropicProvider::new(
            provider_name,
            cfg,
            key,
        )?)),
    }
}
