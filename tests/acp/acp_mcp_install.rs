//! Where a client's stdio MCP server is installed, through `zeroclaw acp` on every rung the
//! machine has: a server whose script lies in a directory outside the session's cwd (and
//! outside every default root) starts, its directory readable; one that cannot start — a
//! missing executable, or one that exits at once — fails its tool calls with the reason, and
//! the user is told as an agent message naming the server and why: at `session/new` for a
//! missing executable, at the first prompt (which starts the servers) for one that exits.

use crate::acp_mcp::with_servers;
use crate::tools_support::{Scene, Setup, backend_available};

use serde_json::json;

const SERVER: &str = include_str!("../mcp_support/server.py");
const RUNGS: [&str; 3] = ["namespaces", "bubblewrap", "landlock"];

#[test]
fn a_server_installed_outside_the_cwd_starts_and_a_broken_one_is_told() {
    for backend in RUNGS {
        if !backend_available(backend) {
            continue;
        }
        // In the system temp dir, which the sandbox replaces with its own: only the
        // server's own directory is made readable.
        let install = tempfile::tempdir().expect("install dir");
        let script = install.path().join("server.py");
        std::fs::write(&script, SERVER).expect("server copy");
        let missing = install.path().join("no-such-server");
        let mut s = Scene::start(Setup::level("full").backend(backend));
        with_servers(
            &mut s,
            json!([
                {"name": "outside", "command": "/usr/bin/python3",
                 "args": [script, "zc-mcp-outside", "ok"]},
                {"name": "gone", "command": missing},
                {"name": "dies", "command": "/usr/bin/python3",
                 "args": [script, "zc-mcp-dies", "die"]},
            ]),
        );
        let session = s.session.clone();
        let told = s.client.wait_for(|m| {
            m["params"]["sessionId"] == session.as_str()
                && m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
        });
        let text = told["params"]["update"]["content"]["text"]
            .as_str()
            .unwrap_or_default();
        assert!(
            text.contains("MCP server gone cannot start")
                && text.contains("no-such-server")
                && text.contains("No such file"),
            "{backend}: {told}"
        );
        assert!(
            !text.contains("outside"),
            "{backend}: a server that can start is not told: {text}"
        );
        let out = s.call("mcp__outside__probe", json!({}));
        out.assert_completed();
        // The first prompt starts the servers: one that exits at once is told there.
        let said: Vec<String> = s
            .client
            .updates_for(&session)
            .iter()
            .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
            .filter_map(|u| u["content"]["text"].as_str().map(str::to_owned))
            .collect();
        assert!(
            said.iter()
                .any(|t| t.contains("MCP server dies did not start") && t.contains("boom")),
            "{backend}: {said:?}"
        );
        out.assert_result_contains("cwd:");
        let gone = s.call("mcp__gone__anything", json!({}));
        gone.assert_failed()
            .assert_result_contains("not available")
            .assert_result_contains("no-such-server");
        let dies = s.call("mcp__dies__anything", json!({}));
        dies.assert_failed()
            .assert_result_contains("not available")
            .assert_result_contains("boom");
        s.client.assert_valid();
    }
}
