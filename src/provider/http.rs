//! The HTTP side shared by the providers: the client, one streaming POST with its timeout and
//! error mapping (status, `Retry-After`, an excerpt of the body without the key), and the
//! response body turned into [`ProviderEvent`]s by a provider's [`EventMapper`].
//!
//! The request timeout bounds connecting and the wait for the response headers, and the
//! silence between two pieces of the body; a long stream that keeps talking is never cut.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use futures::{Stream, StreamExt};

use super::error::excerpt;
use super::sse::SseDecoder;
use super::{EventStream, ProviderError, ProviderEvent};

/// How much of an error body is read, and how much of it is shown.
const ERROR_BODY_READ: usize = 64 * 1024;
const ERROR_BODY_SHOWN: usize = 300;

/// Why one SSE event's data could not be mapped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MapError {
    /// Not JSON, or not shaped like an event of this API.
    Invalid(String),
    /// The server reported an error inside the stream.
    Model(String),
}

/// Turns the data of each SSE event of one response into events.
pub trait EventMapper: Send + 'static {
    /// The events carried by one SSE event's data.
    fn map(&mut self, data: &str) -> Result<Vec<ProviderEvent>, MapError>;
    /// Whether the stream's end marker was seen (nothing after it is read).
    fn is_done(&self) -> bool;
    /// The final `Stop` (and what comes with it), or `None` when the model never said why
    /// it stopped.
    fn finish(&mut self) -> Option<Vec<ProviderEvent>>;
}

/// The client every provider uses: connect timeout and user agent.
pub fn client(provider: &str, timeout: Duration) -> Result<reqwest::Client, ProviderError> {
    reqwest::Client::builder()
        .connect_timeout(timeout)
        .user_agent(concat!("zeroclaw/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| ProviderError::Client {
            provider: provider.to_owned(),
            message: e.to_string(),
        })
}

/// The size of the request bodies one provider sends, so the next body is serialized into a
/// buffer of about its size: a body carries the whole history again, and growing its buffer
/// from empty copied it about once more and churned the allocator at every call.
#[derive(Debug, Default)]
pub struct BodySize(AtomicUsize);

/// The largest buffer reserved ahead (a body with many images grows its own).
const BODY_SIZE_HINT_MAX: usize = 8 * 1024 * 1024;

impl BodySize {
    /// `body` as JSON, in a buffer sized from the previous body (plus room for what the
    /// history gained since).
    pub fn serialize(&self, body: &impl serde::Serialize) -> Vec<u8> {
        let last = self.0.load(Ordering::Relaxed).min(BODY_SIZE_HINT_MAX);
        let mut out = Vec::with_capacity(last + last / 8 + 1024);
        serde_json::to_writer(&mut out, body).expect("a request body always serializes");
        self.0.store(out.len(), Ordering::Relaxed);
        out
    }
}

/// Sends `request` within `timeout`; a non-2xx answer is an [`ProviderError::Http`] whose
/// excerpt never contains `key`.
pub async fn send(
    provider: &str,
    request: reqwest::RequestBuilder,
    key: &str,
    timeout: Duration,
) -> Result<reqwest::Response, ProviderError> {
    let response = tokio::time::timeout(timeout, request.send())
        .await
        .map_err(|_| ProviderError::Timeout {
            provider: provider.to_owned(),
            secs: timeout.as_secs(),
        })?
        .map_err(|e| ProviderError::Connect {
            provider: provider.to_owned(),
            message: excerpt(&error_chain(&e), key, ERROR_BODY_SHOWN),
        })?;
    if response.status().is_success() {
        return Ok(response);
    }
    let status = response.status().as_u16();
    let retry_after_secs = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse().ok());
    let body = read_prefix(response, ERROR_BODY_READ, timeout).await;
    Err(ProviderError::Http {
        provider: provider.to_owned(),
        status,
        excerpt: excerpt(&body, key, ERROR_BODY_SHOWN),
        retry_after_secs,
    })
}

/// The largest model list read.
const MODEL_LIST_MAX: usize = 4 * 1024 * 1024;

/// The `data` list of a `GET <base_url>/models` answer (the shape both APIs share).
pub async fn model_list(
    provider: &str,
    request: reqwest::RequestBuilder,
    key: &str,
    timeout: Duration,
) -> Result<Vec<super::ModelInfo>, ProviderError> {
    let response = send(provider, request, key, timeout).await?;
    let body = read_prefix(response, MODEL_LIST_MAX, timeout).await;
    let invalid = |message: String| ProviderError::Protocol {
        provider: provider.to_owned(),
        message,
    };
    let list: serde_json::Value =
        serde_json::from_str(&body).map_err(|e| invalid(format!("model list: {e}")))?;
    let data = list["data"]
        .as_array()
        .ok_or_else(|| invalid("model list without `data`".to_owned()))?;
    Ok(data
        .iter()
        .filter_map(|m| {
            let id = m["id"].as_str().filter(|id| !id.is_empty())?;
            let name = m["display_name"].as_str().or(m["name"].as_str());
            Some(super::ModelInfo {
                id: id.to_owned(),
                name: name.map(str::to_owned),
            })
        })
        .collect())
}

/// Whether the response is one JSON document rather than an event stream.
pub fn is_json(response: &reqwest::Response) -> bool {
    let content_type = response.headers().get(reqwest::header::CONTENT_TYPE);
    content_type
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("application/json"))
}

/// The error of a provider named `provider` for a mapping failure.
pub fn map_error(provider: &str, e: MapError) -> ProviderError {
    let provider = provider.to_owned();
    match e {
        MapError::Invalid(message) => ProviderError::Protocol { provider, message },
        MapError::Model(message) => ProviderError::Model { provider, message },
    }
}

/// The response's SSE body as events; dropping the stream closes the connection.
pub fn event_stream(
    provider: &str,
    idle_timeout: Duration,
    response: reqwest::Response,
    mapper: impl EventMapper,
) -> EventStream {
    let state = BodyState {
        provider: provider.to_owned(),
        idle_timeout,
        body: Box::pin(response.bytes_stream()),
        decoder: SseDecoder::new(),
        mapper,
        queue: VecDeque::new(),
        ended: false,
    };
    Box::pin(futures::stream::unfold(state, BodyState::next))
}

type ByteStream = Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>;

/// The response body being turned into events; dropping it closes the connection.
struct BodyState<M> {
    provider: String,
    idle_timeout: Duration,
    body: ByteStream,
    decoder: SseDecoder,
    mapper: M,
    queue: VecDeque<Result<ProviderEvent, ProviderError>>,
    ended: bool,
}

impl<M: EventMapper> BodyState<M> {
    /// The next event, reading more of the body as needed; `None` after the last one.
    async fn next(mut self) -> Option<(Result<ProviderEvent, ProviderError>, BodyState<M>)> {
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
            Err(e) => self.push_err(map_error(&self.provider, e)),
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
            Some(events) => self.queue.extend(events.into_iter().map(Ok)),
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
pub async fn read_prefix(response: reqwest::Response, limit: usize, timeout: Duration) -> String {
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
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
