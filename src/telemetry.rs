//! Traces (the optional `otel` cargo feature): spans named and attributed after the
//! OpenTelemetry GenAI semantic conventions: `invoke_agent` for a prompt turn, `chat` for each
//! model request, `execute_tool` for each tool call. [`otlp`] exports them over OTLP/HTTP
//! (protobuf) when `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is
//! set, and continues a client's trace from a prompt's `_meta.traceparent` (W3C Trace
//! Context). Without the feature these functions return disabled spans and no OpenTelemetry
//! code is compiled. Attributes name agents, models, tools and ids, never prompts, arguments,
//! output or secrets.

use tracing::Span;

#[cfg(feature = "otel")]
pub mod otlp;

/// The target of every span made here: the exporter takes only these, the log never.
pub const TARGET: &str = "zeroclaw::otel";

/// The span of one prompt turn of `session` by `agent`; `traceparent` (the prompt's
/// `_meta.traceparent`) makes it a child of the client's span.
pub fn invoke_agent(session: &str, agent: &str, model: &str, traceparent: Option<&str>) -> Span {
    #[cfg(feature = "otel")]
    {
        let name = format!("invoke_agent {agent}");
        let span = tracing::info_span!(
            target: TARGET,
            "invoke_agent",
            otel.name = name.as_str(),
            otel.kind = "internal",
            gen_ai.operation.name = "invoke_agent",
            gen_ai.agent.name = agent,
            gen_ai.conversation.id = session,
            gen_ai.request.model = model,
        );
        if let Some(traceparent) = traceparent {
            otlp::continue_trace(&span, traceparent);
        }
        span
    }
    #[cfg(not(feature = "otel"))]
    {
        let _ = (session, agent, model, traceparent);
        Span::none()
    }
}

/// The span of one model request (a step of the turn); [`usage`] fills in its tokens.
pub fn chat(model: &str) -> Span {
    #[cfg(feature = "otel")]
    {
        let name = format!("chat {model}");
        tracing::info_span!(
            target: TARGET,
            "chat",
            otel.name = name.as_str(),
            otel.kind = "client",
            gen_ai.operation.name = "chat",
            gen_ai.request.model = model,
            gen_ai.usage.input_tokens = tracing::field::Empty,
            gen_ai.usage.output_tokens = tracing::field::Empty,
        )
    }
    #[cfg(not(feature = "otel"))]
    {
        let _ = model;
        Span::none()
    }
}

/// Records a model request's usage report on the current [`chat`] span.
pub fn usage(input_tokens: u64, output_tokens: u64) {
    #[cfg(feature = "otel")]
    {
        let span = Span::current();
        span.record("gen_ai.usage.input_tokens", input_tokens);
        span.record("gen_ai.usage.output_tokens", output_tokens);
    }
    #[cfg(not(feature = "otel"))]
    let _ = (input_tokens, output_tokens);
}

/// The span of one tool call; [`failed`] marks it when the call fails.
pub fn execute_tool(tool: &str, call_id: &str) -> Span {
    #[cfg(feature = "otel")]
    {
        let name = format!("execute_tool {tool}");
        tracing::info_span!(
            target: TARGET,
            "execute_tool",
            otel.name = name.as_str(),
            otel.kind = "internal",
            otel.status_code = tracing::field::Empty,
            gen_ai.operation.name = "execute_tool",
            gen_ai.tool.name = tool,
            gen_ai.tool.call.id = call_id,
            gen_ai.tool.type = "function",
        )
    }
    #[cfg(not(feature = "otel"))]
    {
        let _ = (tool, call_id);
        Span::none()
    }
}

/// Sets a span's status to error.
pub fn failed(span: &Span) {
    #[cfg(feature = "otel")]
    span.record("otel.status_code", "ERROR");
    #[cfg(not(feature = "otel"))]
    let _ = span;
}
