//! The OpenAI-compatible provider end to end against the loopback model server: request shape,
//! streamed events, retries, errors, timeouts and cancellation by dropping the stream.

use crate::support::model_server;

use std::sync::Arc;

use futures::StreamExt;
use model_server::*;
use serde_json::json;
use zeroclaw::config::Config;
use zeroclaw::provider::{
    self, ChatMessage, ChatRequest, EventStream, Provider, ProviderError, ProviderEvent,
    StopReason, TokenUsage, ToolSpec,
};

/// A provider named `local` pointing at `base_url`, configured only through the env overlay.
fn local_provider(base_url: &str, extra: &[(&str, &str)]) -> Arc<dyn Provider> {
    let dir = tempfile::tempdir().unwrap();
    let mut env = vec![
        (
            "ZEROCLAW_providers__local__base_url".to_owned(),
            base_url.to_owned(),
        ),
        (
            "ZEROCLAW_providers__local__api_key".to_owned(),
            "sk-loopback-secret".to_owned(),
        ),
        (
            "ZEROCLAW_agents__coder__provider".to_owned(),
            "local".to_owned(),
        ),
        (
            "ZEROCLAW_agents__coder__model".to_owned(),
            "loopback-model".to_owned(),
        ),
    ];
    env.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let config = Config::load_with_env(dir.path(), env).unwrap();
    provider::build(&config, "local").unwrap()
}

fn request() -> ChatRequest {
    ChatRequest {
        model: "loopback-model".into(),
        messages: vec![
            ChatMessage::System {
                content: "be brief".into(),
            },
            ChatMessage::User {
                content: "hi".into(),
            },
        ],
        tools: vec![ToolSpec {
            name: "todo_write".into(),
            description: "update the plan".into(),
            parameters: json!({"type": "object", "properties": {"todos": {"type": "array"}}}),
        }]
        .into(),
        thought_level: Default::default(),
    }
}

async fn collect(mut stream: EventStream) -> Result<Vec<ProviderEvent>, ProviderError> {
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(event?);
    }
    Ok(events)
}

async fn run(provider: &dyn Provider) -> Result<Vec<ProviderEvent>, ProviderError> {
    collect(provider.stream(request()).await?).await
}

#[tokio::test]
async fn streams_reasoning_text_usage_and_stop_and_sends_an_openai_request() {
    let server = ModelServer::start(vec![Reply::Sse(vec![
        reasoning("let me think"),
        text("Hello"),
        text(", world"),
        finish("stop"),
        usage(11, 3),
    ])])
    .await;
    let events = run(&*local_provider(&server.base_url(), &[]))
        .await
        .unwrap();
    assert_eq!(
        events,
        vec![
            ProviderEvent::ThinkingDelta("let me think".into()),
            ProviderEvent::TextDelta("Hello".into()),
            ProviderEvent::TextDelta(", world".into()),
            ProviderEvent::Usage(TokenUsage {
                input_tokens: 11,
                output_tokens: 3,
                ..Default::default()
            }),
            ProviderEvent::Stop(StopReason::EndTurn),
        ]
    );
    let body = &server.requests()[0];
    assert_eq!(body["model"], "loopback-model");
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(
        body["messages"][1],
        json!({"role": "user", "content": "hi"})
    );
    assert_eq!(body["tools"][0]["type"], "function");
    assert_eq!(body["tools"][0]["function"]["name"], "todo_write");
    assert_eq!(
        server.authorizations(),
        vec![Some("Bearer sk-loopback-secret".to_owned())]
    );
}

#[tokio::test]
async fn interleaved_tool_calls_arrive_in_pieces() {
    let server = ModelServer::start(vec![Reply::Sse(vec![
        tool_call_start(0, "call_1", "todo_write"),
        tool_call_start(1, "call_2", "todo_write"),
        tool_call_args(0, "{\"todos\":"),
        tool_call_args(1, "{\"todos\":[]}"),
        tool_call_args(0, "[]}"),
        finish("tool_calls"),
    ])])
    .await;
    let events = run(&*local_provider(&server.base_url(), &[]))
        .await
        .unwrap();
    let args = |i: usize| -> String {
        events
            .iter()
            .filter_map(|e| match e {
                ProviderEvent::ToolCallArgsDelta { index, delta } if *index == i => {
                    Some(delta.as_str())
                }
                _ => None,
            })
            .collect()
    };
    assert_eq!(args(0), "{\"todos\":[]}");
    assert_eq!(args(1), "{\"todos\":[]}");
    assert!(events.contains(&ProviderEvent::ToolCallStart {
        index: 1,
        id: "call_2".into(),
        name: "todo_write".into()
    }));
    let tail = &events[events.len() - 3..];
    assert_eq!(
        tail,
        [
            ProviderEvent::ToolCallEnd { index: 0 },
            ProviderEvent::ToolCallEnd { index: 1 },
            ProviderEvent::Stop(StopReason::ToolUse),
        ]
    );
}

#[tokio::test]
async fn length_and_content_filter_map_to_max_tokens_and_refusal() {
    let server = ModelServer::start(vec![
        Reply::Sse(vec![text("trunc"), finish("length")]),
        Reply::Sse(vec![finish("content_filter")]),
    ])
    .await;
    let provider = local_provider(&server.base_url(), &[]);
    let first = run(&*provider).await.unwrap();
    assert_eq!(
        first.last(),
        Some(&ProviderEvent::Stop(StopReason::MaxTokens))
    );
    let second = run(&*provider).await.unwrap();
    assert_eq!(second, vec![ProviderEvent::Stop(StopReason::Refusal)]);
}

#[tokio::test]
async fn sse_framing_is_robust_over_the_wire() {
    let pieces = [
        ": keep-alive comment\r\n\r\nda",
        "ta: {\"choices\":[{\"delta\":{\"content\":\"a\\u00e9\"}}]}\r",
        "\n\r\ndata: {\"choices\":[{\"delta\":{},",
        "\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
    ];
    let raw = pieces.iter().map(|p| (1, p.as_bytes().to_vec())).collect();
    let server = ModelServer::start(vec![Reply::Raw(raw)]).await;
    let events = run(&*local_provider(&server.base_url(), &[]))
        .await
        .unwrap();
    assert_eq!(
        events,
        vec![
            ProviderEvent::TextDelta("aé".into()),
            ProviderEvent::Stop(StopReason::EndTurn)
        ]
    );
}

#[tokio::test]
async fn retries_429_and_5xx_before_the_first_token() {
    let server = ModelServer::start(vec![
        Reply::Status(503, "overloaded".into()),
        Reply::Status(429, "slow down".into()),
        text_reply("finally"),
    ])
    .await;
    let events = run(&*local_provider(&server.base_url(), &[]))
        .await
        .unwrap();
    assert_eq!(events[0], ProviderEvent::TextDelta("finally".into()));
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn gives_up_after_three_tries_with_the_status_in_the_message() {
    let server = ModelServer::start(vec![
        Reply::Status(500, "boom 1".into()),
        Reply::Status(502, "boom 2".into()),
        Reply::Status(500, "boom 3".into()),
        text_reply("never reached"),
    ])
    .await;
    let err = run(&*local_provider(&server.base_url(), &[]))
        .await
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("`local`") && msg.contains("500") && msg.contains("boom 3"),
        "{msg}"
    );
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn client_errors_are_not_retried_and_never_show_the_key() {
    let body = r#"{"error":{"message":"Incorrect API key provided: sk-loopback-secret"}}"#;
    let server = ModelServer::start(vec![Reply::Status(401, body.into())]).await;
    let err = run(&*local_provider(&server.base_url(), &[]))
        .await
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        matches!(err, ProviderError::Http { status: 401, .. }),
        "{msg}"
    );
    assert!(
        msg.contains("local") && msg.contains("401") && msg.contains("Incorrect API key"),
        "{msg}"
    );
    assert!(!msg.contains("sk-loopback-secret"), "{msg}");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn an_exhausted_script_is_a_clear_500() {
    let server = ModelServer::start(vec![]).await;
    let msg = run(&*local_provider(&server.base_url(), &[]))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("500") && msg.contains("script exhausted"),
        "{msg}"
    );
}

#[tokio::test]
async fn an_unreachable_server_is_a_connect_error_naming_the_provider() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let provider = local_provider(&format!("http://127.0.0.1:{port}/v1"), &[]);
    let err = run(&*provider).await.unwrap_err();
    assert!(matches!(err, ProviderError::Connect { .. }), "{err}");
    assert!(err.to_string().contains("`local`"), "{err}");
}

#[tokio::test]
async fn a_server_that_never_answers_times_out() {
    let server = ModelServer::start(vec![Reply::Hang]).await;
    let timeout = [("ZEROCLAW_providers__local__request_timeout_secs", "1")];
    let err = run(&*local_provider(&server.base_url(), &timeout))
        .await
        .unwrap_err();
    assert!(
        matches!(err, ProviderError::Timeout { secs: 1, .. }),
        "{err}"
    );
    assert_eq!(server.requests().len(), 1, "timeouts are not retried");
}

#[tokio::test]
async fn a_long_stream_that_keeps_talking_outlives_the_request_timeout() {
    let chunks = (0..5).map(|i| text(&i.to_string()).delayed(400));
    let script = chunks.chain([finish("stop")]).collect();
    let server = ModelServer::start(vec![Reply::Sse(script)]).await;
    let timeout = [("ZEROCLAW_providers__local__request_timeout_secs", "1")];
    let events = run(&*local_provider(&server.base_url(), &timeout))
        .await
        .unwrap();
    assert_eq!(events.len(), 6);
    assert_eq!(server.completed(), 1);
}

#[tokio::test]
async fn a_stream_that_ends_before_the_finish_reason_is_an_error() {
    let server = ModelServer::start(vec![Reply::Raw(vec![(
        0,
        b"data: {\"choices\":[{\"delta\":{\"content\":\"par\"}}]}\n\n".to_vec(),
    )])])
    .await;
    let mut stream = local_provider(&server.base_url(), &[])
        .stream(request())
        .await
        .unwrap();
    assert_eq!(
        stream.next().await.unwrap().unwrap(),
        ProviderEvent::TextDelta("par".into())
    );
    let err = stream.next().await.unwrap().unwrap_err();
    assert!(matches!(err, ProviderError::Stream { .. }), "{err}");
    assert!(stream.next().await.is_none());
}

#[tokio::test]
async fn an_error_object_inside_the_stream_is_reported() {
    let server = ModelServer::start(vec![Reply::Raw(vec![(
        0,
        b"data: {\"error\":{\"message\":\"upstream provider failed\"}}\n\n".to_vec(),
    )])])
    .await;
    let err = run(&*local_provider(&server.base_url(), &[]))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("upstream provider failed"),
        "{err}"
    );
}

#[tokio::test]
async fn dropping_the_stream_aborts_the_request() {
    let slow = (0..50).map(|i| text(&format!("t{i}")).delayed(100));
    let script = [text("first")]
        .into_iter()
        .chain(slow)
        .chain([finish("stop")]);
    let server = ModelServer::start(vec![Reply::Sse(script.collect())]).await;
    let mut stream = local_provider(&server.base_url(), &[])
        .stream(request())
        .await
        .unwrap();
    assert_eq!(
        stream.next().await.unwrap().unwrap(),
        ProviderEvent::TextDelta("first".into())
    );
    drop(stream);
    assert!(
        server.wait_aborted_async(1).await,
        "the server saw the hang-up"
    );
    assert_eq!(server.completed(), 0);
}

#[tokio::test]
async fn a_missing_key_fails_the_call_naming_the_variable_without_any_request() {
    let server = ModelServer::start(vec![text_reply("unused")]).await;
    let dir = tempfile::tempdir().unwrap();
    let env = [
        ("ZEROCLAW_providers__local__base_url", server.base_url()),
        (
            "ZEROCLAW_providers__local__api_key_env",
            "ZEROCLAW_TEST_UNSET_KEY_5E1".to_owned(),
        ),
        ("ZEROCLAW_agents__a__provider", "local".to_owned()),
        ("ZEROCLAW_agents__a__model", "m".to_owned()),
    ];
    let env = env.into_iter().map(|(k, v)| (k.to_owned(), v));
    let config = Config::load_with_env(dir.path(), env).unwrap();
    let provider = provider::build(&config, "local").unwrap();
    let err = run(&*provider).await.unwrap_err();
    assert!(
        err.to_string().contains("ZEROCLAW_TEST_UNSET_KEY_5E1"),
        "{err}"
    );
    assert!(server.requests().is_empty());
}

#[test]
fn the_blocking_server_serves_plain_tests() {
    let server = ModelServer::start_blocking(vec![text_reply("sync")]);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let events = runtime
        .block_on(run(&*local_provider(&server.base_url(), &[])))
        .unwrap();
    assert_eq!(events[0], ProviderEvent::TextDelta("sync".into()));
    server.push(text_reply("pushed"));
    let events = runtime
        .block_on(run(&*local_provider(&server.base_url(), &[])))
        .unwrap();
    assert_eq!(events[0], ProviderEvent::TextDelta("pushed".into()));
}

#[tokio::test]
async fn a_server_that_ignores_stream_true_is_read_as_one_completion() {
    let completion = json!({
        "id": "x", "object": "chat.completion",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": "whole answer"}}],
        "usage": {"prompt_tokens": 2, "completion_tokens": 2},
    });
    let server = ModelServer::start(vec![Reply::Status(200, completion.to_string())]).await;
    let events = run(&*local_provider(&server.base_url(), &[]))
        .await
        .unwrap();
    assert_eq!(
        events,
        vec![
            ProviderEvent::TextDelta("whole answer".into()),
            ProviderEvent::Usage(TokenUsage {
                input_tokens: 2,
                output_tokens: 2,
                ..Default::default()
            }),
            ProviderEvent::Stop(StopReason::EndTurn),
        ]
    );
}

fn too_many_requests(retry_after: &str) -> Reply {
    Reply::Http {
        status: 429,
        headers: vec![("retry-after".into(), retry_after.into())],
        body: "rate limited".into(),
    }
}

#[tokio::test]
async fn a_short_retry_after_is_honoured_and_retried() {
    let server =
        ModelServer::start(vec![too_many_requests("1"), text_reply("after the pause")]).await;
    let events = run(&*local_provider(&server.base_url(), &[]))
        .await
        .unwrap();
    assert_eq!(
        events[0],
        ProviderEvent::TextDelta("after the pause".into())
    );
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_retry_after_longer_than_the_cap_fails_at_once() {
    let long = (provider::MAX_RETRY_AFTER_SECS + 1).to_string();
    let server = ModelServer::start(vec![too_many_requests(&long), text_reply("unused")]).await;
    let err = run(&*local_provider(&server.base_url(), &[]))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            ProviderError::Http {
                status: 429,
                retry_after_secs: Some(_),
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("rate limited"), "{err}");
    assert_eq!(server.requests().len(), 1);
}
