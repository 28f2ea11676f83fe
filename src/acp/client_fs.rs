//! The client's file capabilities (`clientCapabilities.fs` of `initialize`) and the
//! `fs/read_text_file` / `fs/write_text_file` requests the file tools send through the
//! connection that sent the prompt (see [`crate::tools::buffers`] for when and with what
//! checks). A request unanswered within `session_timeout_secs` fails the call.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use crate::rpc::Peer;
use crate::tools::BoxFuture;
use crate::tools::buffers::ClientFiles;

/// What a client offered in `initialize` (`clientCapabilities.fs`).
#[derive(Debug, Default)]
pub struct FsCapabilities {
    read: AtomicBool,
    write: AtomicBool,
}

impl FsCapabilities {
    /// Records the `clientCapabilities` of an `initialize` request (absent: none).
    pub fn record(&self, params: &Value) {
        let fs = params.pointer("/clientCapabilities/fs");
        let flag = |key: &str| fs.and_then(|f| f.get(key)).and_then(Value::as_bool) == Some(true);
        self.read.store(flag("readTextFile"), Ordering::SeqCst);
        self.write.store(flag("writeTextFile"), Ordering::SeqCst);
    }

    pub fn reads(&self) -> bool {
        self.read.load(Ordering::SeqCst)
    }

    pub fn writes(&self) -> bool {
        self.write.load(Ordering::SeqCst)
    }
}

/// The files of one session's client, over its connection.
pub struct PeerFiles {
    pub peer: Peer,
    pub session_id: String,
    pub timeout: Duration,
    pub read: bool,
    pub write: bool,
}

impl ClientFiles for PeerFiles {
    fn reads(&self) -> bool {
        self.read
    }

    fn writes(&self) -> bool {
        self.write
    }

    fn read<'a>(&'a self, path: &'a Path) -> BoxFuture<'a, Result<String, String>> {
        Box::pin(async move {
            let params = json!({"sessionId": self.session_id, "path": path});
            let answer = self
                .peer
                .request("fs/read_text_file", params, self.timeout)
                .await
                .map_err(|e| e.message)?;
            match answer.get("content").and_then(Value::as_str) {
                Some(text) => Ok(text.to_owned()),
                None => Err("its fs/read_text_file answer has no text `content`".to_owned()),
            }
        })
    }

    fn write<'a>(&'a self, path: &'a Path, content: &'a str) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            let params = json!({"sessionId": self.session_id, "path": path, "content": content});
            self.peer
                .request("fs/write_text_file", params, self.timeout)
                .await
                .map(|_| ())
                .map_err(|e| e.message)
        })
    }
}
