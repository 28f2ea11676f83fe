//! The Anthropic Messages API provider (`kind = "anthropic"`).
//!
//! One POST to `<base_url>/messages` with `stream: true`, the key in `x-api-key` and the
//! configured `anthropic-version`; the body is built by [`request`] and the event stream
//! mapped by [`events`], over the shared [`super::http`] plumbing (timeouts, retries before
//! the first token on 429/529/5xx honouring `retry-after`, errors without the key).

pub mod events;
pub mod request;

use std::time::Duration;

use bytes::Bytes;

use super::{
    ChatRequest, EventStream, ModelInfo, Provider, ProviderError, ProviderFuture, ThoughtLevel,
    http, retry,
};
use crate::config::{ANTHROPIC_VERSION, DEFAULT_MAX_TOKENS, ProviderConfig};

/// The largest non-streamed message accepted.
const MESSAGE_BODY_MAX: usize = 16 * 1024 * 1024;

/// A configured Messages API endpoint.
pub struct AnthropicProvider {
    name: String,
    url: String,
    models_url: String,
    /// The key, or the message saying how to set it.
    key: Result<String, String>,
    version: String,
    max_tokens: u32,
    timeout: Duration,
    client: reqwest::Client,
    body_size: http::BodySize,
}

impl AnthropicProvider {
    pub fn new(
        name: &str,
        cfg: &ProviderConfig,
        key: Result<String, String>,
    ) -> Result<AnthropicProvider, ProviderError> {
        let timeout = Duration::from_secs(cfg.request_timeout_secs);
        Ok(AnthropicProvider {
            name: name.to_owned(),
            url: format!("{}/messages", cfg.base_url.trim_end_matches('/')),
            models_url: format!("{}/models", cfg.base_url.trim_end_matches('/')),
            // The API refuses every request without a key: say so before sending any.
            key: key.and_then(|key| match key.is_empty() {
                true => Err(format!(
                    "provider `{name}` has no API key: set api_key or api_key_env"
                )),
                false => Ok(key),
            }),
            version: cfg
                .anthropic_version
                .clone()
                .unwrap_or_else(|| ANTHROPIC_VERSION.to_owned()),
            max_tokens: cfg.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
            timeout,
            client: http::client(name, timeout)?,
            body_size: http::BodySize::default(),
        })
    }

    async fn open(&self, body: &Bytes, key: &str) -> Result<reqwest::Response, ProviderError> {
        let request = self
            .client
            .post(&self.url)
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header("x-api-key", key)
            .header("anthropic-version", &self.version)
            .body(body.clone());
        http::send(&self.name, request, key, self.timeout).await
    }

    /// A server that ignored `stream: true` and sent the whole message.
    async fn whole_message(
        &self,
        response: reqwest::Response,
    ) -> Result<EventStream, ProviderError> {
        let body = http::read_prefix(response, MESSAGE_BODY_MAX, self.timeout).await;
        let events = events::map_message(&body).map_err(|e| http::map_error(&self.name, e))?;
        Ok(Box::pin(futures::stream::iter(events.into_iter().map(Ok))))
    }
}

/// The extended-thinking budget of a thought level: a share of `max_tokens` (which it must stay
/// below), at least the API's minimum of 1024.
fn thinking_budget(level: ThoughtLevel, max_tokens: u32) -> Option<u32> {
    let share = match level {
        ThoughtLevel::Off => return None,
        ThoughtLevel::Low => 8,
        ThoughtLevel::Medium => 4,
        ThoughtLevel::High => 2,
    };
    let budget = (max_tokens / share).max(MIN_THINKING_BUDGET);
    (budget < max_tokens).then_some(budget)
}

/// The smallest `budget_tokens` the API accepts.
const MIN_THINKING_BUDGET: u32 = 1024;

impl Provider for AnthropicProvider {
    fn list_models(&self) -> ProviderFuture<'_, Vec<ModelInfo>> {
        Box::pin(async move {
            let key = self.key.clone().map_err(ProviderError::MissingApiKey)?;
            let request = self
                .client
                .get(&self.models_url)
                .header("x-api-key", &key)
                .header("anthropic-version", &self.version);
            http::model_list(&self.name, request, &key, self.timeout).await
        })
    }

    fn stream(&self, req: ChatRequest) -> ProviderFuture<'_, EventStream> {
        Box::pin(async move {
            let key = self.key.clone().map_err(ProviderError::MissingApiKey)?;
            let options = request::Options {
                max_tokens: self.max_tokens,
                thinking_budget: thinking_budget(req.thought_level, self.max_tokens),
            };
            let body = Bytes::from(request::body(&req, &options, &self.body_size));
            let response = retry::with_backoff(|| self.open(&body, &key)).await?;
            if http::is_json(&response) {
                return self.whole_message(response).await;
            }
            let mapper = events::MessageMapper::new();
            Ok(http::event_stream(
                &self.name,
                self.timeout,
                response,
                mapper,
            ))
        })
    }
}
