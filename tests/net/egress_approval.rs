//! Supervised network approvals through the real `zeroclaw acp` binary on the namespaces rung:
//! a shell fetch of a name outside `allow_domains` asks the client ("Allow network access to
//! HOST:PORT?") while the connection waits. Allow once admits that fetch and the next one asks
//! again; allow always admits later fetches without asking, also after the daemon restarts on
//! the same store — in every session of that agent, never in another agent's (on SQLite and
//! PostgreSQL); reject refuses with a line naming the rejection, and the upstream sees
//! nothing; concurrent connections to one host ask once; a question still open when the call
//! ends is dropped and its connection refused, and a denied name never asks. (`full` refusing without asking is
//! `egress_tools::a_full_turn_…`.) The upstream is a loopback server started here; the names
//! resolve through the policy's `hosts`, admitted by `allow_cidrs = ["127.0.0.0/8"]`.

use crate::egress_support;
use crate::support;
use crate::tools_support;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use zeroclaw::egress::proxy::{Approval, Approver, Limits, Proxy};

use support::acp_client::{Permission, prompt_params};
use support::model_server::{text_reply, tool_reply};
use tools_support::{Scene, Setup, backend_available};

/// A supervised setup whose shell calls never ask (only the network does), answering `answer`.
fn setup(port: u16, answer: &str) -> Setup {
    Setup::level("supervised")
        .autonomy("auto_approve = [\"shell\"]")
        .backend("namespaces")
        .permission(Permission::Select(answer.into()))
        .extra(&format!(
            "[sandbox.network]\nmode = \"proxy\"\nallow_domains = [\"files.example\"]\n\
             allow_ports = [{port}]\nallow_cidrs = [\"127.0.0.0/8\"]\n\
             hosts = {{ \"files.example\" = \"127.0.0.1\", \"pkg.example\" = \"127.0.0.1\" }}\n"
        ))
}

fn fetch(s: &Scene, port: u16, path: &str) -> tools_support::Outcome {
    let command = format!(
        "curl -sS -o /dev/null -w 'status %{{http_code}}\\n' http://pkg.example:{port}/{path}"
    );
    s.call("shell", json!({ "command": command }))
}

/// The titles of the network questions among `requests`.
fn asked(requests: &[Value]) -> Vec<String> {
    requests
        .iter()
        .map(|r| {
            r["params"]["toolCall"]["title"]
                .as_str()
                .unwrap_or("")
                .to_owned()
        })
        .collect()
}

#[test]
fn an_unlisted_host_is_asked_allowed_once_asked_again_then_allowed_always_across_a_restart() {
    if !backend_available("namespaces") || !support::have_program("curl") {
        return;
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let up = runtime.block_on(egress_support::http_upstream());
    let port = up.port();
    let question = format!("Allow network access to pkg.example:{port}?");
    let mut s = Scene::start(setup(port, "allow-once"));

    let once = fetch(&s, port, "once");
    once.assert_completed().assert_result_contains("status 200");
    assert_eq!(asked(&once.permission_requests), [question.as_str()]);
    let seen_once = format!("GET /once host=pkg.example:{port}");
    assert_eq!(up.seen(), [seen_once.as_str()], "{}", once.describe());

    let again = fetch(&s, port, "again");
    again
        .assert_completed()
        .assert_result_contains("status 200");
    assert_eq!(
        asked(&again.permission_requests),
        [question.as_str()],
        "asked again"
    );

    s.client
        .set_permission(Permission::Select("allow-always".into()));
    let always = fetch(&s, port, "always");
    always
        .assert_completed()
        .assert_result_contains("status 200");
    assert_eq!(asked(&always.permission_requests), [question.as_str()]);

    // From now on a question would be rejected: only the remembered answer admits.
    s.client
        .set_permission(Permission::Select("reject-once".into()));
    let after = fetch(&s, port, "after");
    after
        .assert_completed()
        .assert_result_contains("status 200");
    assert!(after.permission_requests.is_empty(), "{}", after.describe());

    s.respawn(&setup(port, "reject-once"));
    let restart = fetch(&s, port, "restart");
    restart
        .assert_completed()
        .assert_result_contains("status 200");
    assert!(
        restart.permission_requests.is_empty(),
        "{}",
        restart.describe()
    );
    assert_eq!(
        up.seen().len(),
        5,
        "every fetch reached the upstream: {:?}",
        up.seen()
    );
}

/// The scene's setup with a second agent, `other`; `coder` stays the default.
fn two_agents(port: u16, answer: &str) -> Setup {
    setup(port, answer).extra(
        "[agents.other]\nprovider = \"local\"\nmodel = \"m\"\n\n[acp]\ndefault_agent = \"coder\"\n",
    )
}

/// A new session of agent `alias`, made the scene's session.
fn switch_to(s: &mut Scene, alias: &str) {
    let from = s.client.message_count();
    let result = s.client.call(
        "session/new",
        json!({"cwd": s.ws(), "mcpServers": [], "agentAlias": alias}),
    );
    let id = result["sessionId"].as_str().expect("sessionId").to_owned();
    s.client.wait_for_from(from, |m| {
        support::acp_client::is_update_for(m, &id)
            && m["params"]["update"]["sessionUpdate"] == "available_commands_update"
    });
    s.session = id;
}

#[test]
fn allow_always_holds_for_every_session_of_the_agent_also_after_a_restart_not_for_another() {
    if !backend_available("namespaces") || !support::have_program("curl") {
        return;
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let up = runtime.block_on(egress_support::http_upstream());
    let port = up.port();
    let question = format!("Allow network access to pkg.example:{port}?");
    let mut s = Scene::start(two_agents(port, "allow-always"));
    let first = fetch(&s, port, "first");
    first
        .assert_completed()
        .assert_result_contains("status 200");
    assert_eq!(asked(&first.permission_requests), [question.as_str()]);

    // From now on a question would be rejected: only the remembered answer admits.
    s.client
        .set_permission(Permission::Select("reject-once".into()));
    switch_to(&mut s, "coder");
    let second = fetch(&s, port, "second");
    second
        .assert_completed()
        .assert_result_contains("status 200");
    assert!(
        second.permission_requests.is_empty(),
        "{}",
        second.describe()
    );

    switch_to(&mut s, "other");
    let other = fetch(&s, port, "other");
    other
        .assert_completed()
        .assert_result_contains("status 403");
    assert_eq!(asked(&other.permission_requests), [question.as_str()]);

    s.respawn(&two_agents(port, "reject-once"));
    let other_again = fetch(&s, port, "other-again");
    other_again.assert_result_contains("status 403");
    assert_eq!(asked(&other_again.permission_requests), [question.as_str()]);
    switch_to(&mut s, "coder");
    let restarted = fetch(&s, port, "restarted");
    restarted
        .assert_completed()
        .assert_result_contains("status 200");
    assert!(
        restarted.permission_requests.is_empty(),
        "{}",
        restarted.describe()
    );
    let mut seen = up.seen();
    seen.sort();
    let expect: Vec<_> = ["first", "restarted", "second"]
        .iter()
        .map(|p| format!("GET /{p} host=pkg.example:{port}"))
        .collect();
    assert_eq!(seen, expect, "only agent coder's fetches went through");
}

crate::on_postgres!(
    allow_always_holds_for_every_session_of_the_agent_also_after_a_restart_not_for_another
);

#[test]
fn a_rejected_host_is_refused_with_the_rejection_and_the_upstream_sees_nothing() {
    if !backend_available("namespaces") || !support::have_program("curl") {
        return;
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let up = runtime.block_on(egress_support::http_upstream());
    let port = up.port();
    let s = Scene::start(setup(port, "reject-once"));
    let out = fetch(&s, port, "leak");
    out.assert_completed()
        .assert_result_contains("status 403")
        .assert_result_contains(&format!(
            "network: refused pkg.example:{port} — not in allow_domains and not approved: \
             the user rejected it"
        ));
    assert_eq!(out.permission_requests.len(), 1, "{}", out.describe());
    assert!(
        out.model_saw.contains("the user rejected it"),
        "{}",
        out.model_saw
    );
    assert!(up.seen().is_empty(), "upstream saw {:?}", up.seen());
}

#[test]
fn concurrent_connections_to_one_unlisted_host_ask_once() {
    if !backend_available("namespaces") || !support::have_program("curl") {
        return;
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let up = runtime.block_on(egress_support::http_upstream());
    let port = up.port();
    // The test answers by hand, late enough for all three connections to be waiting.
    let s = Scene::start(setup(port, "allow-once").permission(Permission::Ignore));
    let one =
        format!("curl -sS -o /dev/null -w 'status %{{http_code}}\\n' http://pkg.example:{port}");
    let command = format!("{one}/a & {one}/b & {one}/c & wait");
    s.model.push(tool_reply(
        "call-1",
        "shell",
        &json!({ "command": command }),
    ));
    s.model.push(text_reply("done"));
    let id = s
        .client
        .send_request("session/prompt", prompt_params(&s.session, "go"));
    let question = s
        .client
        .wait_for(|m| m["method"] == "session/request_permission");
    std::thread::sleep(std::time::Duration::from_millis(1500));
    assert_eq!(s.client.permission_requests().len(), 1, "asked once");
    s.client.send_json(&json!({
        "jsonrpc": "2.0",
        "id": question["id"],
        "result": {"outcome": {"outcome": "selected", "optionId": "allow-once"}},
    }));
    let response = s.client.wait_response(&id);
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    s.client.assert_valid();
    assert_eq!(s.client.permission_requests().len(), 1, "asked once");
    let mut seen = up.seen();
    seen.sort();
    let expect: Vec<_> = ["a", "b", "c"]
        .iter()
        .map(|p| format!("GET /{p} host=pkg.example:{port}"))
        .collect();
    assert_eq!(seen, expect, "the one answer admitted all three");
}

#[test]
fn an_unanswered_question_refuses_after_the_approval_timeout() {
    if !backend_available("namespaces") || !support::have_program("curl") {
        return;
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let up = runtime.block_on(egress_support::http_upstream());
    let port = up.port();
    let s = Scene::start(
        setup(port, "allow-once")
            .permission(Permission::Ignore)
            .extra("[acp]\nsession_timeout_secs = 2\n"),
    );
    let out = fetch(&s, port, "late");
    out.assert_completed().assert_result_contains("status 403");
    out.assert_result_contains(&format!(
        "network: refused pkg.example:{port} — not in allow_domains and not approved: \
         the permission request got no answer"
    ));
    assert!(up.seen().is_empty(), "upstream saw {:?}", up.seen());
}

/// An approver that never answers, counting the questions.
struct NeverAnswers(Arc<AtomicUsize>);

impl Approver for NeverAnswers {
    fn approve<'a>(
        &'a self,
        _name: &'a str,
        _port: u16,
    ) -> Pin<Box<dyn Future<Output = Approval> + Send + 'a>> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Box::pin(std::future::pending())
    }
}

#[tokio::test]
async fn a_question_still_open_when_the_call_ends_refuses_and_a_denied_name_never_asks() {
    let up = egress_support::http_upstream().await;
    let port = up.port();
    let hosts = [
        ("pkg.example", "127.0.0.1"),
        ("upload.example", "127.0.0.1"),
    ];
    let policy = egress_support::policy(
        &["files.example"],
        &["upload.example"],
        &["127.0.0.1/32"],
        &[port],
        &hosts,
    );
    let asked = Arc::new(AtomicUsize::new(0));
    let approver: Arc<dyn Approver> = Arc::new(NeverAnswers(asked.clone()));
    let proxy = Proxy::with_approver(policy, Limits::default(), Some(approver));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let _serving = proxy.serve_http(listener);
    let client = egress_support::client(addr, None);

    let denied = client
        .get(format!("http://upload.example:{port}/"))
        .send()
        .await
        .unwrap();
    assert_eq!(denied.status(), 403);
    assert!(denied.text().await.unwrap().contains("deny_domains"));
    assert_eq!(asked.load(Ordering::SeqCst), 0, "a denied name never asks");

    let waiting = tokio::spawn({
        let client = client.clone();
        async move {
            client
                .get(format!("http://pkg.example:{port}/"))
                .send()
                .await
        }
    });
    while asked.load(Ordering::SeqCst) == 0 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    proxy.close();
    let resp = waiting.await.unwrap().unwrap();
    assert_eq!(resp.status(), 403);
    let body = resp.text().await.unwrap();
    assert!(
        body.contains("not in allow_domains and not approved: the call ended"),
        "{body}"
    );
    assert!(up.seen().is_empty(), "upstream saw {:?}", up.seen());
}

/// The supervised answers reach the audit log with the connections they decided: the
/// question's `approval` record (tool `network`), then the connection's `network.connection`
/// record naming the approval as its rule, or the rejection.
#[test]
fn an_approved_and_a_rejected_connection_are_audited_with_the_answer() {
    if !backend_available("namespaces") || !support::have_program("curl") {
        return;
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let up = runtime.block_on(egress_support::http_upstream());
    let port = up.port();
    let s = Scene::start(setup(port, "allow-once"));
    fetch(&s, port, "once").assert_result_contains("status 200");
    s.client
        .set_permission(Permission::Select("reject-once".into()));
    fetch(&s, port, "leak").assert_result_contains("status 403");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_zeroclaw"))
        .args(["audit", "--config-dir"])
        .arg(s.config_dir())
        .args(["export", "--format", "jsonl"])
        .env_remove("ZEROCLAW_CONFIG_DIR")
        .output()
        .unwrap();
    assert!(out.status.success());
    let records: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["record"].clone())
        .filter(|r| r["tool"] == "network")
        .collect();
    let summary: Vec<String> = records
        .iter()
        .map(|r| match r["kind"].as_str().unwrap() {
            "approval" => format!("approval {} {}", r["target"], r["option_kind"]),
            kind => format!(
                "{kind} {}:{} {} {}",
                r["name"], r["port"], r["rule"], r["reason"]
            ),
        })
        .collect();
    let target = format!("\"pkg.example:{port}\"");
    assert_eq!(
        summary,
        [
            format!("approval {target} \"allow_once\""),
            format!(
                "network.connection \"pkg.example\":{port} \"approved\" \
                 \"approved by the client (allowed once)\""
            ),
            format!("approval {target} \"reject_once\""),
            format!(
                "network.connection \"pkg.example\":{port} \"not_approved\" \
                 \"not in allow_domains and not approved: the user rejected it\""
            ),
        ],
        "{records:#?}"
    );
}
