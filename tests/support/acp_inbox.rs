//! The receiving side of the test ACP client: a reader thread that collects every line the
//! server writes to stdout, checks it (JSON-RPC, valid against the ACP v1 schema via
//! `acp_schema`), answers `session/request_permission` by policy and `fs/*` from its editor
//! buffers (`acp_fs`), and wakes waiters; and a
//! collector for the server's stderr.
#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

use serde_json::{Value, json};

use super::acp_fs::{self, Buffers};
use super::acp_schema::{SentRequest, check_message};

/// How the client answers `session/request_permission` requests from the server.
#[derive(Clone, Debug, PartialEq)]
pub enum Permission {
    /// Select the option with this id.
    Select(String),
    /// Answer `{"outcome": {"outcome": "cancelled"}}`.
    Cancel,
    /// Never answer.
    Ignore,
}

/// Everything received so far and what is needed to check it.
#[derive(Default)]
pub struct Inbox {
    pub messages: Vec<Value>,
    /// Method of every request we sent, keyed by the id's JSON text.
    pub sent: HashMap<String, String>,
    pub violations: Vec<String>,
    pub eof: bool,
    pub permission: Option<Permission>,
    /// The editor buffers `fs/*` requests are served from (`None`: not answered).
    pub files: Option<Buffers>,
}

/// Where the client writes: the server's stdin, or a WebSocket frame sink (`ws_conn`).
pub type Outgoing = Box<dyn Write + Send>;

/// State shared by the client and its reader thread.
pub struct Shared {
    pub inbox: Mutex<Inbox>,
    pub changed: Condvar,
    pub stdin: Mutex<Option<Outgoing>>,
}

impl Shared {
    /// Permission requests are allowed once by default.
    pub fn new(stdin: Option<Outgoing>) -> Shared {
        Shared {
            inbox: Mutex::new(Inbox {
                permission: Some(Permission::Select("allow-once".into())),
                ..Inbox::default()
            }),
            changed: Condvar::new(),
            stdin: Mutex::new(stdin),
        }
    }

    pub fn lock(&self) -> MutexGuard<'_, Inbox> {
        self.inbox.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn write_line(&self, bytes: &[u8]) -> std::io::Result<()> {
        let mut stdin = self.stdin.lock().unwrap_or_else(|e| e.into_inner());
        let pipe = stdin.as_mut().ok_or(std::io::ErrorKind::BrokenPipe)?;
        pipe.write_all(bytes)?;
        pipe.flush()
    }
}

pub fn spawn_reader(stdout: impl Read + Send + 'static, shared: Arc<Shared>) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        let mut line = Vec::new();
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => handle_line(&shared, &line),
            }
        }
        shared.lock().eof = true;
        shared.changed.notify_all();
    })
}

/// Checks and records one received message (a stdout line or a WebSocket frame).
pub fn handle_line(shared: &Shared, line: &[u8]) {
    let text = line.strip_suffix(b"\n").unwrap_or(line);
    let parsed = std::str::from_utf8(text)
        .map_err(|e| format!("stdout line is not UTF-8: {e}"))
        .and_then(|s| serde_json::from_str::<Value>(s).map_err(|e| format!("not JSON: {e}")));
    let mut inbox = shared.lock();
    match parsed {
        Err(e) => {
            let shown = String::from_utf8_lossy(&text[..text.len().min(300)]).into_owned();
            inbox
                .violations
                .push(format!("stdout carries only JSON-RPC: {e}: {shown:?}"));
        }
        Ok(msg) => {
            let checked = check_message(&msg, |id| match inbox.sent.get(&id.to_string()) {
                Some(method) => SentRequest::Method(method.clone()),
                None => SentRequest::Unknown,
            });
            if let Err(e) = checked {
                inbox.violations.push(format!("{e}\n  message: {msg}"));
            }
            let answer = permission_answer(&msg, inbox.permission.as_ref())
                .or_else(|| acp_fs::answer(&msg, inbox.files.as_mut()?));
            inbox.messages.push(msg);
            drop(inbox);
            if let Some(answer) = answer {
                let mut bytes = serde_json::to_vec(&answer).expect("serialize");
                bytes.push(b'\n');
                let _ = shared.write_line(&bytes);
            }
        }
    }
    shared.changed.notify_all();
}

fn permission_answer(msg: &Value, policy: Option<&Permission>) -> Option<Value> {
    if msg["method"] != "session/request_permission" {
        return None;
    }
    let id = msg.get("id")?;
    let outcome = match policy? {
        Permission::Select(option) => json!({"outcome": "selected", "optionId": option}),
        Permission::Cancel => json!({"outcome": "cancelled"}),
        Permission::Ignore => return None,
    };
    Some(json!({"jsonrpc": "2.0", "id": id, "result": {"outcome": outcome}}))
}

pub fn spawn_stderr_collector(
    mut pipe: impl Read + Send + 'static,
    sink: Arc<Mutex<Vec<u8>>>,
) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        while let Ok(n) = pipe.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock()
                .unwrap_or_else(|e| e.into_inner())
                .extend_from_slice(&buf[..n]);
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shared() -> Shared {
        Shared {
            inbox: Mutex::new(Inbox::default()),
            changed: Condvar::new(),
            stdin: Mutex::new(None),
        }
    }

    #[test]
    fn stray_stdout_text_and_schema_violations_are_recorded() {
        let shared = shared();
        handle_line(&shared, b"Starting zeroclaw...\n");
        handle_line(
            &shared,
            b"{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{}}\n",
        );
        handle_line(&shared, b"{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"Parse error\"}}\n");
        let inbox = shared.lock();
        assert_eq!(inbox.violations.len(), 2, "{:?}", inbox.violations);
        assert_eq!(inbox.messages.len(), 2);
    }

    #[test]
    fn permission_requests_are_answered_by_policy() {
        let request = json!({"jsonrpc": "2.0", "id": "zc-out-0", "method": "session/request_permission", "params": {}});
        let allow = permission_answer(&request, Some(&Permission::Select("allow-once".into())));
        assert_eq!(
            allow.unwrap()["result"]["outcome"],
            json!({"outcome": "selected", "optionId": "allow-once"})
        );
        let cancel = permission_answer(&request, Some(&Permission::Cancel)).unwrap();
        assert_eq!(cancel["id"], "zc-out-0");
        assert_eq!(cancel["result"]["outcome"]["outcome"], "cancelled");
        assert!(permission_answer(&request, Some(&Permission::Ignore)).is_none());
        let update = json!({"jsonrpc": "2.0", "method": "session/update", "params": {}});
        assert!(permission_answer(&update, Some(&Permission::Cancel)).is_none());
    }
}
