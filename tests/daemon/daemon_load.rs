//! Load: 200 concurrent WebSocket connections to one daemon (loopback TCP, one token), each
//! running `initialize`, `session/new` and a streamed `session/prompt` against the loopback
//! model server; every one must complete with the whole streamed text and no error.

use crate::support;

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use support::model_server::{ModelServer, Reply, finish, text};
use support::ws_conn::{Endpoint, TokenAt, Upgrade};
use support::ws_daemon::{Daemon, HANG_GUARD};
use tokio_tungstenite::tungstenite::Message;

const CONNECTIONS: usize = 200;

fn streamed_reply() -> Reply {
    Reply::Sse(vec![
        text("one "),
        text("two ").delayed(5),
        text("three").delayed(5),
        finish("stop"),
    ])
}

/// One connection's whole conversation; returns the streamed text and the prompt's result.
async fn converse(upgrade: Upgrade, work: std::path::PathBuf) -> Result<(String, Value), String> {
    let Endpoint::Tcp(addr) = upgrade.endpoint else {
        unreachable!("TCP only")
    };
    let stream = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| e.to_string())?;
    let (mut ws, _) = tokio_tungstenite::client_async(upgrade.request(), stream)
        .await
        .map_err(|e| format!("upgrade: {e}"))?;
    let mut streamed = String::new();
    let init = json!({"protocolVersion": 1, "clientCapabilities": {}});
    call(&mut ws, 1, "initialize", init, &mut streamed).await?;
    let new = json!({"cwd": work, "mcpServers": []});
    let session = call(&mut ws, 2, "session/new", new, &mut streamed).await?;
    let session = session["sessionId"]
        .as_str()
        .ok_or("no sessionId")?
        .to_string();
    let prompt = json!({"sessionId": session, "prompt": [{"type": "text", "text": "count"}]});
    let result = call(&mut ws, 3, "session/prompt", prompt, &mut streamed).await?;
    let _ = ws.close(None).await;
    Ok((streamed, result))
}

type Ws = tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>;

/// Sends a request and reads frames until its response; agent text chunks are collected.
async fn call(
    ws: &mut Ws,
    id: u64,
    method: &str,
    params: Value,
    streamed: &mut String,
) -> Result<Value, String> {
    let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    ws.send(Message::text(msg.to_string()))
        .await
        .map_err(|e| e.to_string())?;
    loop {
        let frame = ws
            .next()
            .await
            .ok_or("closed")?
            .map_err(|e| e.to_string())?;
        let Message::Text(t) = frame else { continue };
        let msg: Value = serde_json::from_str(t.as_str()).map_err(|e| e.to_string())?;
        if msg["id"] == id && msg.get("method").is_none() {
            return match msg.get("result") {
                Some(r) => Ok(r.clone()),
                None => Err(format!("{method}: {msg}")),
            };
        }
        let update = &msg["params"]["update"];
        if update["sessionUpdate"] == "agent_message_chunk" {
            streamed.push_str(update["content"]["text"].as_str().unwrap_or_default());
        }
    }
}

#[test]
fn two_hundred_concurrent_connections_each_stream_a_turn_without_error() {
    let model = ModelServer::start_blocking((0..CONNECTIONS).map(|_| streamed_reply()).collect());
    let daemon = Daemon::builder()
        .model(model.base_url())
        .env("ZEROCLAW_acp__max_sessions", (CONNECTIONS + 50).to_string())
        .spawn();
    let upgrade = Upgrade::new(Endpoint::Tcp(daemon.tcp())).token(TokenAt::Header, daemon.token());
    let work = tempfile::tempdir().unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let outcomes = runtime.block_on(async {
        let tasks: Vec<_> = (0..CONNECTIONS)
            .map(|_| tokio::spawn(converse(upgrade.clone(), work.path().to_path_buf())))
            .collect();
        let all = futures::future::join_all(tasks);
        // A hang guard, not a timing assertion.
        tokio::time::timeout(HANG_GUARD * 3, all)
            .await
            .unwrap_or_else(|_| panic!("hang guard: the load did not finish\n{}", daemon.log()))
    });
    let mut failures = Vec::new();
    for outcome in outcomes {
        match outcome.expect("task") {
            Ok((streamed, result)) => {
                if streamed != "one two three" || result["stopReason"] != "end_turn" {
                    failures.push(format!("{streamed:?} {result}"));
                }
            }
            Err(e) => failures.push(e),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {CONNECTIONS} failed, first: {:?}",
        failures.len(),
        failures.first()
    );
    assert_eq!(
        model.completed(),
        CONNECTIONS,
        "every stream ran to its end"
    );
}
