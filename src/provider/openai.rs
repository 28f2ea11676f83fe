//! The OpenAI-compatible chat-completions provider (OpenAI, OpenRouter, Ollama, vLLM, ...).
//!
//! One POST to `<base_url>/chat/completions` with `stream: true`; the response body is decoded
//! by [`super::sse`] and mapped by [`super::chunk`], over the shared [`super::http`] plumbing.

use std::time::Duration;

use bytes::Bytes;

use super::chunk::{self, ChunkMapper};
use super::{
    ChatRequest, EventStream, ModelInfo, Provider, ProviderError, ProviderFuture, http, request,
    retry,
};
use crate::config::ProviderConfig;

/// The largest non-streamed completion accepted.
const COMPLETION_BODY_MAX: usize = 16 * 1024 * 1024;

/// A configured OpenAI-compatible endpoint.
pub struct OpenAiProvider {
    name: String,
    url: String,
    models_url: String,
    /// The key, or the message saying how to set it.
    key: Result<String, String>,
    timeout: Duration,
    client: reqwest::Client,
    body_size: http::BodySize,
}

impl OpenAiProvider {
    pub fn new(
        name: &str,
        cfg: &ProviderConfig,
        key: Result<String, String>,
    ) -> Result<OpenAiProvider, ProviderError> {
        let timeout = Duration::from_secs(cfg.request_timeout_secs);
        Ok(OpenAiProvider {
            name: name.to_owned(),
            url: format!("{}/chat/completions", cfg.base_url.trim_end_matches('/')),
            models_url: format!("{}/models", cfg.base_url.trim_end_matches('/')),
            key,
            timeout,
            client: http::client(name, timeout)?,
            body_size: http::BodySize::default(),
        })
    }

    async fn open(&self, body: &Bytes, key: &str) -> Result<reqwest::Response, ProviderError> {
        let mut request = self
            .client
            .post(&self.url)
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header("x-title", "zeroclaw")
            .body(body.clone());
        if !key.is_empty() {
            request = request.bearer_auth(key);
        }
        http::send(&self.name, request, key, self.timeout).await
    }

    /// A server that ignored `stream: true` and sent one JSON completion.
    async fn whole_completion(
        &self,
        response: reqwest::Response,
    ) -> Result<EventStream, ProviderError> {
        let body = http::read_prefix(response, COMPLETION_BODY_MAX, self.timeout).await;
        let events = chunk::map_completion(&body).map_err(|e| http::map_error(&self.name, e))?;
        Ok(Box::pin(futures::stream::iter(events.into_iter().map(Ok))))
    }
}

impl Provider for OpenAiProvider {
    fn list_models(&self) -> ProviderFuture<'_, Vec<ModelInfo>> {
        Box::pin(async move {
            let key = self.key.clone().map_err(ProviderError::MissingApiKey)?;
            let mut request = self.client.get(&self.models_url);
            if !key.is_empty() {
                request = request.bearer_auth(&key);
            }
            http::model_list(&self.name, request, &key, self.timeout).await
        })
    }

    fn stream(&self, req: ChatRequest) -> ProviderFuture<'_, EventStream> {
        Box::pin(async move {
            let key = self.key.clone().map_err(ProviderError::MissingApiKey)?;
            let body = Bytes::from(request::body(&req, &self.body_size));
            let response = retry::with_backoff(|| self.open(&body, &key)).await?;
            if http::is_json(&response) {
                return self.whole_completion(response).await;
            }
            let mapper = ChunkMapper::new();
            Ok(http::event_stream(
                &self.name,
                self.timeout,
                response,
                mapper,
            ))
        })
    }
}
