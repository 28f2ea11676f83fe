//! Traces (`--features otel`), through the real binary: `zeroclaw acp` with
//! `OTEL_EXPORTER_OTLP_ENDPOINT` pointing at a loopback OTLP/HTTP collector started here sends
//! the GenAI spans of a turn (`invoke_agent`, one `chat` per model request with its token
//! usage, `execute_tool`) in the client's trace: the prompt's `_meta.traceparent` is the parent
//! of `invoke_agent`, which is the parent of the others. Nothing of the prompt is in them.
#![cfg(feature = "otel")]

mod support;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use support::acp_client::{AcpClient, model_env};
use support::model_server::{
    ModelServer, Reply, finish, text, tool_call_args, tool_call_start, usage,
};
use support::ws_daemon::scrubbed;

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_ID: &str = "00f067aa0ba902b7";
const PROMPT_CANARY: &str = "zc-canary-prompt-51d0";

/// A span as the collector decoded it.
#[derive(Debug, Clone, Default)]
struct Span {
    trace_id: String,
    span_id: String,
    parent_span_id: String,
    name: String,
    attributes: BTreeMap<String, String>,
}

/// The OTLP/HTTP trace receiver: POST /v1/traces, protobuf bodies, answered 200.
struct Collector {
    port: u16,
    spans: Arc<Mutex<Vec<Span>>>,
    bodies: Arc<Mutex<Vec<Vec<u8>>>>,
}

impl Collector {
    fn start() -> Collector {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let spans = Arc::new(Mutex::new(Vec::new()));
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let (s, b) = (spans.clone(), bodies.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let (s, b) = (s.clone(), b.clone());
                std::thread::spawn(move || serve(stream, &s, &b));
            }
        });
        Collector {
            port,
            spans,
            bodies,
        }
    }

    fn wait_for(&self, count: usize) -> Vec<Span> {
        let start = Instant::now();
        loop {
            let spans = self.spans.lock().unwrap().clone();
            if spans.len() >= count {
                return spans;
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "the collector got {} spans: {spans:#?}",
                spans.len()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// HTTP/1.1 requests on one connection (keep-alive), each answered 200 with an empty
/// `ExportTraceServiceResponse`.
fn serve(stream: std::net::TcpStream, spans: &Mutex<Vec<Span>>, bodies: &Mutex<Vec<Vec<u8>>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let mut length = 0usize;
        let mut content_type = String::new();
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            let (key, value) = line.split_once(':').unwrap();
            match key.to_ascii_lowercase().as_str() {
                "content-length" => length = value.trim().parse().unwrap(),
                "content-type" => content_type = value.trim().to_owned(),
                _ => {}
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        assert!(
            request_line.starts_with("POST /v1/traces "),
            "{request_line}"
        );
        assert_eq!(content_type, "application/x-protobuf");
        spans.lock().unwrap().extend(decode_request(&body));
        bodies.lock().unwrap().push(body);
        writer
            .write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\n\r\n",
            )
            .unwrap();
    }
}

// A minimal protobuf reader for the few OTLP fields the test looks at.

fn varint(buf: &[u8], at: &mut usize) -> u64 {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = buf[*at];
        *at += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            break;
        }
    }
    value
}

/// The fields of one message: (number, wire type 0 value or wire type 2 bytes).
fn fields(buf: &[u8]) -> Vec<(u64, Result<u64, &[u8]>)> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < buf.len() {
        let key = varint(buf, &mut at);
        let field = match key & 7 {
            0 => Ok(varint(buf, &mut at)),
            1 => {
                at += 8;
                Ok(0)
            }
            2 => {
                let len = varint(buf, &mut at) as usize;
                at += len;
                Err(&buf[at - len..at])
            }
            5 => {
                at += 4;
                Ok(0)
            }
            other => panic!("wire type {other}"),
        };
        out.push((key >> 3, field));
    }
    out
}

fn bytes_of(buf: &[u8], number: u64) -> Vec<&[u8]> {
    fields(buf)
        .into_iter()
        .filter(|(n, _)| *n == number)
        .filter_map(|(_, f)| f.err())
        .collect()
}

/// ExportTraceServiceRequest.resource_spans(1).scope_spans(2).spans(2).
fn decode_request(body: &[u8]) -> Vec<Span> {
    let mut spans = Vec::new();
    for resource in bytes_of(body, 1) {
        for scope in bytes_of(resource, 2) {
            for span in bytes_of(scope, 2) {
                spans.push(decode_span(span));
            }
        }
    }
    spans
}

/// Span: trace_id 1, span_id 2, parent_span_id 4, name 5, attributes 9 (KeyValue: key 1,
/// value 2 = AnyValue: string 1, bool 2, int 3).
fn decode_span(buf: &[u8]) -> Span {
    let mut span = Span::default();
    for (number, field) in fields(buf) {
        let Err(bytes) = field else { continue };
        match number {
            1 => span.trace_id = hex(bytes),
            2 => span.span_id = hex(bytes),
            4 => span.parent_span_id = hex(bytes),
            5 => span.name = String::from_utf8(bytes.to_vec()).unwrap(),
            9 => {
                let key = String::from_utf8(bytes_of(bytes, 1)[0].to_vec()).unwrap();
                let value = bytes_of(bytes, 2).first().map_or(String::new(), |any| {
                    match fields(any).first() {
                        Some((1, Err(s))) => String::from_utf8(s.to_vec()).unwrap(),
                        Some((_, Ok(n))) => n.to_string(),
                        other => format!("{other:?}"),
                    }
                });
                span.attributes.insert(key, value);
            }
            _ => {}
        }
    }
    span
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn a_turn_exports_genai_spans_in_the_clients_trace() {
    let collector = Collector::start();
    let model = ModelServer::start_blocking(vec![
        Reply::Sse(vec![
            tool_call_start(0, "call-1", "shell"),
            tool_call_args(0, &json!({"command": "echo hi"}).to_string()),
            finish("tool_calls"),
            usage(30, 3),
        ]),
        Reply::Sse(vec![text("ran"), finish("stop"), usage(50, 4)]),
    ]);
    let config = tempfile::tempdir().unwrap();
    let mut cmd = scrubbed(env!("CARGO_BIN_EXE_zeroclaw"), config.path());
    cmd.arg("acp")
        .envs(model_env(&model.base_url()))
        .env(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            format!("http://127.0.0.1:{}", collector.port),
        )
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .env_remove("OTEL_SERVICE_NAME")
        .current_dir(config.path());
    let mut client = AcpClient::spawn_command(cmd, config.path());
    client.initialize();
    let work = tempfile::tempdir().unwrap();
    let session = client.new_session(work.path());
    let answer = client.call(
        "session/prompt",
        json!({
            "sessionId": session,
            "prompt": [{"type": "text", "text": format!("run it {PROMPT_CANARY}")}],
            "_meta": {"traceparent": format!("00-{TRACE_ID}-{PARENT_ID}-01")},
        }),
    );
    assert_eq!(answer["stopReason"], "end_turn", "{answer}");
    // End of input: the exporter flushes before the process exits.
    assert!(client.shutdown().success(), "{}", client.stderr());

    let spans = collector.wait_for(4);
    let named = |name: &str| -> Vec<&Span> { spans.iter().filter(|s| s.name == name).collect() };
    let agent = named("invoke_agent coder");
    assert_eq!(agent.len(), 1, "{spans:#?}");
    let agent = agent[0];
    assert_eq!(agent.trace_id, TRACE_ID);
    assert_eq!(agent.parent_span_id, PARENT_ID);
    assert_eq!(agent.attributes["gen_ai.operation.name"], "invoke_agent");
    assert_eq!(agent.attributes["gen_ai.agent.name"], "coder");
    assert_eq!(agent.attributes["gen_ai.conversation.id"], session);
    assert_eq!(agent.attributes["gen_ai.request.model"], "m");

    let chats = named("chat m");
    assert_eq!(chats.len(), 2, "{spans:#?}");
    let mut usage: Vec<(String, String)> = chats
        .iter()
        .map(|c| {
            assert_eq!(c.attributes["gen_ai.operation.name"], "chat");
            assert_eq!(c.attributes["gen_ai.request.model"], "m");
            (
                c.attributes["gen_ai.usage.input_tokens"].clone(),
                c.attributes["gen_ai.usage.output_tokens"].clone(),
            )
        })
        .collect();
    usage.sort();
    assert_eq!(
        usage,
        [("30".into(), "3".into()), ("50".into(), "4".into())],
        "{chats:#?}"
    );

    let tools = named("execute_tool shell");
    assert_eq!(tools.len(), 1, "{spans:#?}");
    assert_eq!(tools[0].attributes["gen_ai.operation.name"], "execute_tool");
    assert_eq!(tools[0].attributes["gen_ai.tool.name"], "shell");
    assert_eq!(tools[0].attributes["gen_ai.tool.call.id"], "call-1");

    for child in chats.iter().chain(&tools) {
        assert_eq!(child.trace_id, TRACE_ID, "{child:#?}");
        assert_eq!(child.parent_span_id, agent.span_id, "{child:#?}");
    }
    for body in collector.bodies.lock().unwrap().iter() {
        let found = body
            .windows(PROMPT_CANARY.len())
            .any(|w| w == PROMPT_CANARY.as_bytes());
        assert!(!found, "the prompt is in an exported span");
    }
}
