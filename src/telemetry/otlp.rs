//! The OTLP exporter of the `otel` feature: a batch span processor sending OTLP/HTTP
//! (protobuf) to the endpoint of the standard `OTEL_EXPORTER_OTLP_*` variables (the
//! exporter reads them: endpoint, headers, timeout), through the process's HTTP client
//! (`reqwest`, blocking, on the processor's own thread), and the W3C Trace Context parent
//! of a prompt's `_meta.traceparent`. [`Guard`] flushes what is left at exit.

use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::Duration;

use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{TraceContextExt, TracerProvider as _};
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{Protocol, SpanExporter, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::registry::LookupSpan;

const ENDPOINT_VARS: [&str; 2] = [
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
];

/// Flushes and stops the exporter when dropped (at the end of `main`).
pub struct Guard(SdkTracerProvider);

impl Drop for Guard {
    fn drop(&mut self) {
        if let Err(error) = self.0.shutdown() {
            eprintln!("zeroclaw: exporting the last traces failed: {error}");
        }
    }
}

/// The layer that exports [`super::TARGET`] spans, when an OTLP endpoint is configured;
/// `None` (nothing exported, nothing started) when none is.
pub fn layer<S>() -> anyhow::Result<Option<(impl Layer<S>, Guard)>>
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
{
    let configured = ENDPOINT_VARS
        .iter()
        .any(|var| std::env::var_os(var).is_some_and(|v| !v.is_empty()));
    if !configured {
        return Ok(None);
    }
    let exporter = SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_http_client(BlockingClient::default())
        .build()?;
    let mut resource = Resource::builder();
    if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
        resource = resource.with_service_name("zeroclaw");
    }
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource.build())
        .build();
    let tracer = provider.tracer("zeroclaw");
    let layer = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_filter(Targets::new().with_target(super::TARGET, tracing::Level::INFO));
    Ok(Some((layer, Guard(provider))))
}

/// Makes `span` a child of the W3C `traceparent` (`00-<trace id>-<span id>-<flags>`); an
/// invalid one is ignored (logged) and the span starts a trace of its own.
pub fn continue_trace(span: &Span, traceparent: &str) {
    let carrier = HashMap::from([("traceparent".to_owned(), traceparent.to_owned())]);
    let parent = TraceContextPropagator::new().extract(&carrier);
    if !parent.span().span_context().is_valid() {
        tracing::warn!("ignoring an invalid _meta.traceparent");
        return;
    }
    if let Err(error) = span.set_parent(parent) {
        tracing::debug!(%error, "cannot continue the client's trace");
    }
}

/// OTLP over the `reqwest` the process already has, blocking: the batch processor calls it
/// from its own thread, outside the async runtime. Built on first use, on that thread.
#[derive(Debug, Default)]
struct BlockingClient(OnceLock<reqwest::blocking::Client>);

const TIMEOUT: Duration = Duration::from_secs(10);

#[async_trait::async_trait]
impl HttpClient for BlockingClient {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let client = match self.0.get() {
            Some(client) => client,
            None => {
                let built = reqwest::blocking::Client::builder()
                    .timeout(TIMEOUT)
                    .build()?;
                self.0.get_or_init(|| built)
            }
        };
        let (parts, body) = request.into_parts();
        let response = client
            .request(parts.method, parts.uri.to_string())
            .headers(parts.headers)
            .body(body.to_vec())
            .send()?;
        let mut answer = Response::builder().status(response.status());
        for (name, value) in response.headers() {
            answer = answer.header(name, value);
        }
        Ok(answer.body(response.bytes()?)?)
    }
}
