//! The OpenAI-compatible chat-completions provider (OpenAI, OpenRouter, Ollama, vLLM, ...).
//!
//! One POST to `<base_url>/chat/completions` with `stream: true`; the response body is decoded
//! by [`super::sse`] and mapped by [`super::chunk`]. The request timeout bounds connecting and
//! the wait for the response headers, and the silence between two pieces of the body; a long
//! stream that keeps talking is never cut.

use std::collections::VecDeque;
use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use futures::{Stream, StreamExt};

use super::chunk::{self, ChunkError, ChunkMapper};
use super::error::excerpt;
use super::sse::SseDecoder;
use super::{ChatRequest, EventStream, Provider, ProviderError, ProviderEvent, request, retry};
use crate::config::ProviderConfig;

/// How much of an error body is read, and how much of it is shown.
const ERROR_BODY_READ: usize = 64 * 1024;
const ERROR_BODY_SHOWN: usize = 300;
/// The largest non-streamed completion accepted.
const COMPLETION_BODY_MAX: usize = 16 * 1024 * 1024;

/// A configured OpenAI-compatible endpoint.
pub struct OpenAiProvider {
    name: String,
    url: String,
    /// The key, or the message saying how to set it.
    key: Result<String, String>,
    timeout: Duration,
    client: reqwest::Client,
}

impl OpenAiProvider {
    pub fn new(
        name: &str,
        cfg: &ProviderConfig,
        key: Result<String, String>,
    ) -> Result<OpenAiProvider, ProviderError> {
        let timeout = Duration::from_secs(cfg.request_timeout_secs);
        let client = reqwest::Client::builder()
            .connect_timeout(timeout)
            .user_agent(concat!("zeroclaw/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ProviderError::Client {
                provider: name.to_owned(),
                message: e.to_string(),
            })?;
        Ok(OpenAiProvider {
            name: name.to_owned(),
            url: format!("{}/chat/completions", cfg.base_url.trim_end_matches('/')),
            key,
            timeout,
            client,
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
        let response = tokio::time::timeout(self.timeout, request.send())
            .await
            .map_err(|_| self.timed_out())?
            .map_err(|e| self.connect_error(&e))?;
        if response.status().is_success() {
            return Ok(response);
        }
        Err(self.http_error(response, key).await)
    }

    async fn http_error(&self, response: reqwest::Response, key: &str) -> ProviderError {
        let status = response.status().as_u16();
        let retry_after_secs = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse().ok());
        let body = read_prefix(response, ERROR_BODY_READ, self.timeout).await;
        ProviderError::Http {
            provider: self.name.clone(),
            status,
            excerpt: excerpt(&body, key, ERROR_BODY_SHOWN),
            retry_after_secs,
        }
    }

    fn connect_error(&self, e: &reqwest::Error) -> ProviderError {
        ProviderError::Connect {
            provider: self.name.clone(),
            message: error_chain(e),
        }
    }

    /// A server that ignored `stream: true` and sent one JSON completion.
    async fn whole_completion(
        &self,
        response: reqwest::Response,
    ) -> Result<EventStream, ProviderError> {
        let body = read_prefix(response, COMPLETION_BODY_MAX, self.timeout).await;
        let events = chunk::map_completion(&body).map_err(|e| chunk_error(&self.name, e))?;
        Ok(Box::pin(futures::stream::iter(events.into_iter().map(Ok))))
    }

    fn timed_out(&self) -> ProviderError {
        ProviderError::Timeout {
            provider: self.name.clone(),
            secs: self.timeout.as_secs(),
        }
    }
}

impl Provider for OpenAiProvider {
    fn stream(
        &self,
        req: ChatRequest,
    ) -> Pin<Box<dyn Future<Output = Result<EventStream, ProviderError>> + Send + '_>> {
        Box::pin(async move {
            let key = self.key.clone().map_err(ProviderError::MissingApiKey)?;
            let body = Bytes::from(request::body(&req));
            let response = retry::with_backoff(|| self.open(&body, &key)).await?;
            if is_json(&response) {
                return self.whole_completion(response).await;
            }
            let state = BodyState {
                provider: self.name.clone(),
                idle_timeout: self.timeout,
                body: Box::pin(response.bytes_stream()),
                decoder: SseDecoder::new(),
                mapper: ChunkMapper::new(),
                queue: VecDeque::new(),
                ended: false,
            };
            Ok(Box::pin(futures::stream::unfold(state, BodyState::next)) as EventStream)
        })
    }
}

fn is_json(response: &reqwest::Response) -> bool {
    let content_type = response.headers().get(reqwest::header::CONTENT_TYPE);
    content_type
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("application/json"))
}

fn chunk_error(provider: &str, e: ChunkError) -> ProviderError {
    let provider = provider.to_owned();
    match e {
        ChunkError::Invalid(message) => ProviderError::Protocol { provider, message },
        ChunkError::Model(message) => ProviderError::Model { provider, message },
    }
}

type ByteStream = Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>;

/// The response body being turned into events; dropping it closes the connection.
struct BodyState {
    provider: String,
    idle_timeout: Duration,
    body: ByteStream,
    decoder: SseDecoder,
    mapper: ChunkMapper,
    queue: VecDeque<Result<ProviderEvent, ProviderError>>,
    ended: bool,
}

impl BodyState {
    /// The next event, reading more of the body as needed; `None` after the last one.
    async fn next(mut self) -> Option<(Result<ProviderEvent, ProviderError>, BodyState)> {
        loop {
            if let Some(item) = self.queue.pop_front() {
                if item.is_err() {
                    self.end();
                }
                return Some((item, self));
            }
            if self.ended {
                return None;
            }
            self.read_more().await;
        }
    }

    async fn read_more(&mut self) {
        match tokio::time::timeout(self.idle_timeout, self.body.next()).await {
            Err(_) => self.fail(format!("no data for {} s", self.idle_timeout.as_secs())),
            Ok(Some(Err(e))) => self.fail(error_chain(&e)),
            Ok(Some(Ok(bytes))) => match self.decoder.feed(&bytes) {
                Ok(events) => events.iter().for_each(|data| self.map(data)),
                Err(e) => self.fail(e.to_string()),
            },
            Ok(None) => self.end_of_body(),
        }
        if self.mapper.is_done() && !self.ended {
            self.finish();
        }
    }

    fn map(&mut self, data: &str) {
        if self.ended || self.mapper.is_done() {
            return;
        }
        match self.mapper.map(data) {
            Ok(events) => self.queue.extend(events.into_iter().map(Ok)),
            Err(e) => self.push_err(chunk_error(&self.provider, e)),
        }
    }

    fn end_of_body(&mut self) {
        match self.decoder.finish() {
            Ok(Some(data)) => self.map(&data),
            Ok(None) => {}
            Err(e) => return self.fail(e.to_string()),
        }
        if !self.ended {
            self.finish();
        }
    }

    /// Queues the final `Stop`, or an error when the model never said it was done.
    fn finish(&mut self) {
        match self.mapper.finish() {
            Some(stop) => self.queue.push_back(Ok(stop)),
            None => self.push_err(ProviderError::Stream {
                provider: self.provider.clone(),
                message: "the response ended before the model finished".to_owned(),
            }),
        }
        self.end();
    }

    fn fail(&mut self, message: String) {
        let provider = self.provider.clone();
        self.push_err(ProviderError::Stream { provider, message });
    }

    fn push_err(&mut self, err: ProviderError) {
        self.queue.push_back(Err(err));
        self.end();
    }

    /// Stops reading and drops the connection.
    fn end(&mut self) {
        self.ended = true;
        self.body = Box::pin(futures::stream::empty());
    }
}

/// Up to `limit` bytes of the body as text, within `timeout`.
async fn read_prefix(response: reqwest::Response, limit: usize, timeout: Duration) -> String {
    let mut body = Box::pin(response.bytes_stream());
    let mut out = Vec::new();
    let read = async {
        while let Some(Ok(bytes)) = body.next().await {
            out.extend_from_slice(&bytes);
            if out.len() >= limit {
                out.truncate(limit);
                break;
            }
        }
    };
    let _ = tokio::time::timeout(timeout, read).await;
    String::from_utf8_lossy(&out).into_owned()
}

/// The error and its causes on one line (reqwest hides the useful part in the sources).
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
