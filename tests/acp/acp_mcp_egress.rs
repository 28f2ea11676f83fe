//! The client's http MCP servers in a session whose network mode is `proxy`, through
//! `zeroclaw acp`: zeroclaw connects to a server only when the egress policy admits its URL's
//! host and port. A loopback server admitted by `allow_cidrs` (by IP literal, or by a name the
//! policy's `hosts` maps to it) serves its tool; one the policy does not admit is refused by
//! `session/new` naming the host and the rule, or — a name whose address is refused, known
//! only once it is resolved — its tools fail with that reason; a supervised session is not
//! asked about an unlisted host. A refused server never sees a connection (judged from
//! outside: its listener has nothing to accept).

use crate::acp_mcp::{HttpServer, with_servers};
use crate::tools_support;

use std::net::TcpListener;

use serde_json::json;

use tools_support::{Scene, Setup};

/// A `[sandbox.network]` in `proxy` mode admitting port `port`.
fn proxy(port: u16, domains: &str, cidrs: &str) -> String {
    format!(
        "[sandbox.network]\nmode = \"proxy\"\nallow_domains = [{domains}]\n\
         allow_ports = [{port}]\nallow_cidrs = [{cidrs}]\n\
         hosts = {{ \"mcp.example\" = \"127.0.0.1\" }}\n"
    )
}

fn http_entry(name: &str, url: &str) -> serde_json::Value {
    json!({"type": "http", "name": name, "url": url, "headers": []})
}

/// A loopback listener nobody serves; `untouched` says whether nothing connected to it.
struct Silent(TcpListener);

impl Silent {
    fn bind() -> Silent {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback listener");
        listener.set_nonblocking(true).expect("nonblocking");
        Silent(listener)
    }

    fn port(&self) -> u16 {
        self.0.local_addr().unwrap().port()
    }

    fn untouched(&self) -> bool {
        matches!(self.0.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
    }
}

#[test]
fn an_http_server_admitted_by_the_egress_policy_serves_its_tools_in_proxy_mode() {
    let http = HttpServer::start();
    let port = http.port;
    let setup = Setup::level("full").extra(&proxy(port, "\"mcp.example\"", "\"127.0.0.1/32\""));
    let mut s = Scene::start(setup);
    with_servers(
        &mut s,
        json!([
            http_entry("web", &format!("http://127.0.0.1:{port}/mcp")),
            http_entry("named", &format!("http://mcp.example:{port}/mcp")),
        ]),
    );
    let out = s.call("mcp__web__hello", json!({}));
    out.assert_completed()
        .assert_result_contains("hello over http")
        .assert_result_contains("session=zc-session-1");
    let out = s.call("mcp__named__hello", json!({}));
    out.assert_completed()
        .assert_result_contains("hello over http");
}

#[test]
fn an_http_server_the_policy_does_not_admit_is_refused_naming_the_rule_and_sees_nothing() {
    let silent = Silent::bind();
    let port = silent.port();
    // No allow_cidrs: the IP literal is refused by session/new.
    let s = Scene::start(Setup::level("full").extra(&proxy(port, "\"mcp.example\"", "")));
    let url = format!("http://127.0.0.1:{port}/mcp");
    let error = s.client.call_err(
        "session/new",
        json!({"cwd": s.ws(), "mcpServers": [http_entry("web", &url)]}),
    );
    assert_eq!(error["code"], -32602, "{error}");
    let message = error["message"].as_str().unwrap_or_default();
    let want = format!("network: refused 127.0.0.1:{port} — IP address not in allow_cidrs");
    assert!(message.contains(&want), "{error}");
    assert!(message.contains("\"web\""), "{error}");

    // An admitted name whose address is loopback: refused when the server starts, and its
    // tools say why.
    let mut s = s;
    let named = format!("http://mcp.example:{port}/mcp");
    with_servers(&mut s, json!([http_entry("named", &named)]));
    let out = s.call("mcp__named__hello", json!({}));
    out.assert_failed()
        .assert_result_contains("not available")
        .assert_result_contains(&format!(
            "network: refused mcp.example:{port} — resolves to 127.0.0.1 (loopback), \
             refused unless allow_cidrs names it"
        ));
    assert!(silent.untouched(), "the refused server saw a connection");
}

#[test]
fn a_supervised_session_is_not_asked_about_an_unlisted_mcp_host_and_deny_mode_refuses() {
    let silent = Silent::bind();
    let port = silent.port();
    let setup = Setup::level("supervised").extra(&proxy(port, "", "\"127.0.0.1/32\""));
    let s = Scene::start(setup);
    let url = format!("http://mcp.example:{port}/mcp");
    let error = s.client.call_err(
        "session/new",
        json!({"cwd": s.ws(), "mcpServers": [http_entry("web", &url)]}),
    );
    assert_eq!(error["code"], -32602, "{error}");
    let want = format!("network: refused mcp.example:{port} — not in allow_domains");
    assert!(
        error["message"]
            .as_str()
            .unwrap_or_default()
            .contains(&want),
        "{error}"
    );
    assert!(s.client.permission_requests().is_empty(), "asked");
    drop(s);

    let s = Scene::start(Setup::level("full"));
    let url = format!("http://127.0.0.1:{port}/mcp");
    let error = s.client.call_err(
        "session/new",
        json!({"cwd": s.ws(), "mcpServers": [http_entry("web", &url)]}),
    );
    assert_eq!(error["code"], -32602, "{error}");
    assert!(
        error["message"]
            .as_str()
            .unwrap_or_default()
            .contains("denied"),
        "{error}"
    );
    assert!(silent.untouched(), "the refused server saw a connection");
}
