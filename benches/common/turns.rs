//! Timed `zeroclaw acp` turns whose model step calls one tool (or none), for the benches that
//! measure a tool call through the whole path (`tools`, `git_status`). Included by path next
//! to `model_server` (`tests/support/model_server.rs`), which it scripts.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::Acp;
use crate::model_server::{ModelServer, Reply, text_reply, tool_reply};

/// What the model does in the measured turn.
pub enum Kind {
    NoTool,
    Tool(&'static str, Value),
}

/// `zeroclaw acp` with autonomy `full` (no prompts), at most `sessions` sessions.
pub fn spawn_full(config_dir: &Path, base_url: &str, sessions: usize) -> Acp {
    std::fs::write(
        config_dir.join("config.toml"),
        "[autonomy]\nlevel = \"full\"\n",
    )
    .expect("config.toml");
    let max = sessions.to_string();
    let mut acp = Acp::spawn(
        config_dir,
        base_url,
        &[("ZEROCLAW_acp__max_sessions", &max)],
    );
    acp.call("initialize", json!({"protocolVersion": 1}));
    acp
}

impl Acp {
    /// A new session in `cwd`; its id.
    pub fn new_session(&mut self, cwd: &Path) -> String {
        let created = self.call("session/new", json!({"cwd": cwd, "mcpServers": []}));
        created["sessionId"]
            .as_str()
            .expect("sessionId")
            .to_string()
    }

    /// One timed turn; panics unless a scripted tool call completed.
    pub fn turn(&mut self, model: &ModelServer, session: &str, kind: &Kind) -> Duration {
        let call_id = format!("bench-{}", self.next_id());
        for reply in script(kind, &call_id) {
            model.push(reply);
        }
        let params = json!({"sessionId": session, "prompt": [{"type": "text", "text": "go"}]});
        let start = Instant::now();
        let id = self.send("session/prompt", params);
        let mut statuses = Vec::new();
        let result = self.response(id, |m| {
            if let Some(s) = m["params"]["update"]["status"].as_str() {
                statuses.push(s.to_string());
            }
        });
        let took = start.elapsed();
        assert_eq!(result["stopReason"], "end_turn", "{result}");
        if let Kind::Tool(name, _) = kind {
            let last = statuses.last().map(String::as_str);
            assert_eq!(last, Some("completed"), "{name} ran: {statuses:?}");
        }
        took
    }
}

/// The model's replies for one turn of this kind.
fn script(kind: &Kind, call_id: &str) -> Vec<Reply> {
    match kind {
        Kind::NoTool => vec![text_reply("done")],
        Kind::Tool(name, args) => vec![tool_reply(call_id, name, args), text_reply("done")],
    }
}
