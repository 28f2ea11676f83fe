//! `[sandbox.network] mode = "proxy"` for the agent's own tool calls, through the real
//! `zeroclaw acp` binary on the namespaces rung: a full-autonomy turn whose shell fetches from
//! an allowed and a denied host gets the allowed body, and its tool result ends with one line
//! naming the refused host and the rule, which the model reads too; the upstream saw only the
//! allowed request. Two agents of one daemon with different allowlists, their sessions'
//! shells running at once, each get only their own allowance. The upstream is a loopback
//! server started here, the names resolve through the policy's `hosts`.

mod support;
mod tools_support;

#[path = "egress_support/mod.rs"]
mod egress_support;

use serde_json::json;

use support::acp_client::Permission;
use tools_support::{Scene, Setup, backend_available};

/// `[sandbox.network]` admitting `allow` (and loopback, and the upstream's port).
fn network(allow: &str, port: u16) -> String {
    format!(
        "[sandbox.network]\nmode = \"proxy\"\nallow_domains = [\"{allow}\"]\n\
         allow_ports = [{port}]\nallow_cidrs = [\"127.0.0.0/8\"]\n\
         hosts = {{ \"files.example\" = \"127.0.0.1\", \"other.example\" = \"127.0.0.1\" }}\n"
    )
}

fn have_curl() -> bool {
    let found = std::process::Command::new("sh")
        .args(["-c", "command -v curl"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var("CI").map_or(true, |v| v != "true"),
            "CI=true requires curl"
        );
        eprintln!("SKIP: curl is not installed");
    }
    found
}

#[test]
fn a_full_turn_fetches_the_allowed_host_and_is_told_why_the_other_was_refused() {
    if !backend_available("namespaces") || !have_curl() {
        return;
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let up = runtime.block_on(egress_support::http_upstream());
    let port = up.port();
    let setup = Setup::level("full")
        .backend("namespaces")
        .permission(Permission::Select("allow-always".into()))
        .extra(&network("files.example", port));
    let s = Scene::start(setup);
    let command = format!(
        "curl -sS http://files.example:{port}/pkg; \
         curl -sS -o /dev/null -w 'status %{{http_code}}\\n' http://other.example:{port}/leak"
    );
    let out = s.call("shell", json!({ "command": command }));
    out.assert_completed()
        .assert_result_contains("hello from upstream")
        .assert_result_contains("status 403")
        .assert_result_contains(&format!(
            "network: refused other.example:{port} — not in allow_domains"
        ));
    assert!(out.permission_requests.is_empty(), "full never asks");
    assert_eq!(
        up.seen(),
        [format!("GET /pkg host=files.example:{port}")],
        "{}",
        out.describe()
    );
}
