//! The editor side of ACP `fs/*` for the test client: buffers by path, as an editor holds
//! files open with unsaved edits. `fs/read_text_file` answers the buffer (a path with no
//! buffer is read from the disk, as an editor does; `line`/`limit` are honoured);
//! `fs/write_text_file` replaces the buffer and never touches the disk. With `error` set,
//! every request is answered with that message (-32603); with `silent`, none is answered.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::{Value, json};

/// What the test editor has open.
#[derive(Clone, Debug, Default)]
pub struct Buffers {
    pub open: BTreeMap<PathBuf, String>,
    /// Answers every `fs/*` request with this error message.
    pub error: Option<String>,
    /// Never answers `fs/*` requests.
    pub silent: bool,
}

impl Buffers {
    /// One open buffer.
    pub fn with(mut self, path: impl Into<PathBuf>, text: &str) -> Buffers {
        self.open.insert(path.into(), text.to_owned());
        self
    }

    pub fn failing(message: &str) -> Buffers {
        Buffers {
            error: Some(message.to_owned()),
            ..Buffers::default()
        }
    }
}

/// The answer to `msg` if it is an `fs/*` request.
pub fn answer(msg: &Value, buffers: &mut Buffers) -> Option<Value> {
    let method = msg["method"].as_str()?;
    if !method.starts_with("fs/") || buffers.silent {
        return None;
    }
    let id = msg.get("id")?.clone();
    let params = &msg["params"];
    let outcome = match &buffers.error {
        Some(message) => Err(message.clone()),
        None => serve(method, params, buffers),
    };
    Some(match outcome {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err(message) => json!({"jsonrpc": "2.0", "id": id,
                               "error": {"code": -32603, "message": message}}),
    })
}

fn serve(method: &str, params: &Value, buffers: &mut Buffers) -> Result<Value, String> {
    let path = PathBuf::from(params["path"].as_str().ok_or("no path")?);
    match method {
        "fs/read_text_file" => {
            let text = match buffers.open.get(&path) {
                Some(text) => text.clone(),
                None => std::fs::read_to_string(&path)
                    .map_err(|e| format!("{}: {e}", path.display()))?,
            };
            let skip = params["line"].as_u64().map_or(0, |l| l.saturating_sub(1)) as usize;
            let take = params["limit"].as_u64().map_or(usize::MAX, |l| l as usize);
            let lines: Vec<&str> = text.split_inclusive('\n').skip(skip).take(take).collect();
            Ok(json!({"content": lines.concat()}))
        }
        "fs/write_text_file" => {
            let content = params["content"].as_str().ok_or("no content")?;
            buffers.open.insert(path, content.to_owned());
            Ok(json!({}))
        }
        other => Err(format!("unknown method {other}")),
    }
}
