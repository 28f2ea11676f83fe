//! The JSON-RPC transport: NDJSON framing with its length cap ([`LineReader`]), then each
//! frame classified ([`classify`]). Properties: a frame is never longer than the cap nor holds
//! a newline, an oversize line reports its true length, an accepted request's `id` is one that
//! can be echoed exactly, and a classified message written back out classifies the same.

use serde_json::{Value, json};
use zeroclaw::rpc::codec::{FrameError, LineReader};
use zeroclaw::rpc::message::{Incoming, classify};

pub fn run(data: &[u8]) {
    let [max, cap, rest @ ..] = data else {
        return;
    };
    let max = usize::from(*max) + 1;
    let reader = tokio::io::BufReader::with_capacity(usize::from(*cap % 16) + 1, rest);
    let mut lines = LineReader::new(reader, max);
    crate::block_on(async {
        while let Some(frame) = lines
            .next_frame()
            .await
            .expect("in-memory reads do not fail")
        {
            match frame {
                Ok(text) => {
                    assert!(
                        text.len() <= max,
                        "frame of {} bytes over {max}",
                        text.len()
                    );
                    assert!(!text.contains('\n'));
                    assert!(!text.trim().is_empty());
                    message(&text);
                }
                Err(FrameError::TooLong { len, max: m }) => assert!(len > m && m == max),
                Err(FrameError::InvalidUtf8) => {}
            }
        }
    });
    if let Ok(text) = std::str::from_utf8(rest) {
        message(text);
    }
}

fn message(text: &str) {
    let Ok(incoming) = classify(text) else {
        return;
    };
    let again = match &incoming {
        Incoming::Request { id, method, params } => {
            assert!(
                id.is_string() || id.is_i64() || id.is_u64(),
                "request id {id}"
            );
            super::acp_params::params(params);
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        }
        Incoming::Notification { method, params } => {
            super::acp_params::params(params);
            json!({"jsonrpc": "2.0", "method": method, "params": params})
        }
        Incoming::Response { id, result } => match result {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err(_) => return,
        },
    };
    let mut again = again;
    if again.get("params") == Some(&Value::Null) {
        again.as_object_mut().expect("object").remove("params");
    }
    assert_eq!(classify(&again.to_string()).ok(), Some(incoming));
}
