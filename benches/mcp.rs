//! A stdio MCP server's cost (run: `cargo bench --bench mcp`): the first call of a tool of the
//! test server `tests/mcp_support/server.py` — start inside the sandbox (the session profile
//! of a default policy), `initialize`, `tools/list`, one `tools/call` — and the steady-state
//! cost of one more call, against the same server started as a plain child process and
//! spoken to by the same MCP client, in the same run (interleaved). Medians; nothing asserted.

#[allow(dead_code)]
mod common;

use std::time::{Duration, Instant};

use common::{median, ms};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use serde_json::Map;
use tokio_util::sync::CancellationToken;
use zeroclaw::mcp::server;
use zeroclaw::mcp::spec::ServerSpec;
use zeroclaw::policy::Policy;
use zeroclaw_sandbox::{BackendChoice, Sandbox};

const SERVER: &str = include_str!("../tests/mcp_support/server.py");
const STARTS: usize = 20;
const CALLS: usize = 300;
const TIMEOUT: Duration = Duration::from_secs(30);

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(run());
}

async fn run() {
    let work = tempfile::tempdir().expect("workspace");
    let sandbox = Sandbox::new(BackendChoice::Auto, false)
        .expect("a sandbox backend")
        .with_helper(env!("CARGO_BIN_EXE_zeroclaw"));
    let profile = Policy::default().profile(work.path(), &[]);
    let spec = ServerSpec {
        name: "bench".into(),
        command: "/usr/bin/python3".into(),
        args: vec![
            "-c".into(),
            SERVER.into(),
            "zc-mcp-bench".into(),
            "ok".into(),
        ],
        env: Vec::new(),
        trusted: false,
        http: None,
    };
    let cancel = CancellationToken::new();
    println!(
        "stdio MCP server, backend {:?}: medians of {STARTS} starts and {CALLS} calls",
        sandbox.backend()
    );
    let (mut confined_first, mut plain_first) = (Vec::new(), Vec::new());
    for _ in 0..STARTS {
        let started = Instant::now();
        let server = server::start(&sandbox, profile.clone(), &spec, TIMEOUT)
            .await
            .expect("confined start");
        server
            .call("media", Map::new(), TIMEOUT, &cancel)
            .await
            .expect("confined call");
        confined_first.push(started.elapsed());
        drop(server);
        let started = Instant::now();
        let plain = Plain::start(&spec).await;
        plain.call().await;
        plain_first.push(started.elapsed());
        plain.stop().await;
    }
    let confined = server::start(&sandbox, profile.clone(), &spec, TIMEOUT)
        .await
        .expect("confined start");
    let plain = Plain::start(&spec).await;
    let (mut confined_call, mut plain_call) = (Vec::new(), Vec::new());
    for _ in 0..CALLS {
        let started = Instant::now();
        confined
            .call("media", Map::new(), TIMEOUT, &cancel)
            .await
            .expect("confined call");
        confined_call.push(started.elapsed());
        let started = Instant::now();
        plain.call().await;
        plain_call.push(started.elapsed());
    }
    plain.stop().await;
    let report = |what: &str, confined: &mut [Duration], plain: &mut [Duration]| {
        let (c, p) = (median(confined), median(plain));
        println!(
            "{what:<44} confined {:>8.2} ms   plain {:>8.2} ms   overhead {:>+8.2} ms",
            ms(c),
            ms(p),
            ms(c) - ms(p)
        );
    };
    report(
        "first call (start, initialize, list, call)",
        &mut confined_first,
        &mut plain_first,
    );
    report("one more call", &mut confined_call, &mut plain_call);
}

/// The same server as a plain child process, with the same MCP client.
struct Plain {
    client: rmcp::service::RunningService<rmcp::RoleClient, ()>,
    child: tokio::process::Child,
}

impl Plain {
    async fn start(spec: &ServerSpec) -> Plain {
        let mut child = tokio::process::Command::new(&spec.command)
            .args(&spec.args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("plain server");
        let (stdin, stdout) = (child.stdin.take().unwrap(), child.stdout.take().unwrap());
        let client = ().serve((stdout, stdin)).await.expect("plain initialize");
        client.list_all_tools().await.expect("plain tools/list");
        Plain { client, child }
    }

    async fn call(&self) {
        let params = CallToolRequestParams::new("media");
        self.client.call_tool(params).await.expect("plain call");
    }

    async fn stop(mut self) {
        let _ = self.client.cancel().await;
        let _ = self.child.kill().await;
    }
}
