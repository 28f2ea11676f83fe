//! `[sandbox.network] mode = "proxy"` for the agent's own tool calls, through the real
//! `zeroclaw acp` binary on every rung that serves it (`a_full_turn_...::{namespaces,
//! bubblewrap, landlock}`): a full-autonomy turn whose shell fetches from
//! an allowed and a denied host gets the allowed body, and its tool result ends with one line
//! naming the refused host and the rule, which the model reads too (and a failed command
//! no line saying the network is off); the upstream saw only the
//! allowed request, and the daemon holds no descriptor of a finished call's proxy. Two agents of one daemon with different allowlists, their sessions'
//! shells running at once, each get only their own allowance. The upstream is a loopback
//! server started here, the names resolve through the policy's `hosts`.

use crate::support;
use crate::tools_support;

use crate::egress_support;

use serde_json::json;

use support::acp_client::{AcpClient, Permission, prompt_params};
use support::model_server::{ModelServer, text_reply, tool_reply};
use tools_support::{Scene, Setup, backend_available};

/// `[sandbox.network]` admitting `allow` (and loopback, and the upstream's port).
fn network(allow: &str, port: u16) -> String {
    format!(
        "[sandbox.network]\nmode = \"proxy\"\nallow_domains = [\"{allow}\"]\n\
         allow_ports = [{port}]\nallow_cidrs = [\"127.0.0.0/8\"]\n\
         hosts = {{ \"files.example\" = \"127.0.0.1\", \"other.example\" = \"127.0.0.1\", \
         \"a.example\" = \"127.0.0.1\", \"b.example\" = \"127.0.0.1\" }}\n"
    )
}

/// Whether `backend` serves proxy calls here, printing why not (failing when `CI=true`):
/// the Landlock-only rung needs Landlock's TCP rules; any other failure of a trivial proxy
/// call fails the test.
pub(crate) fn serves_proxy(backend: &str) -> bool {
    if !backend_available(backend) || !support::have_program("curl") {
        return false;
    }
    let dir = tempfile::tempdir().expect("probe dir");
    // Apart from the workspace: `sandbox run` refuses a workspace inside its config dir.
    let config_dir = tempfile::tempdir().expect("probe config dir");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_zeroclaw"))
        .args(["sandbox", "run", "--network", "proxy", "--backend", backend])
        .arg("--workspace")
        .arg(dir.path())
        .args(["--", "/bin/true"])
        .env("ZEROCLAW_CONFIG_DIR", config_dir.path())
        .output()
        .expect("run zeroclaw sandbox run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("needs Landlock ABI 4") {
        support::require_feature(&format!("proxy mode on {backend}: {}", stderr.trim()));
        return false;
    }
    assert!(
        out.status.success(),
        "a trivial proxy call on {backend}: {stderr}"
    );
    true
}

mod a_full_turn_fetches_the_allowed_host_and_is_told_why_the_other_was_refused {
    #[test]
    fn namespaces() {
        super::a_full_turn_fetches_the_allowed_host_on("namespaces");
    }

    #[test]
    fn bubblewrap() {
        super::a_full_turn_fetches_the_allowed_host_on("bubblewrap");
    }

    /// The daemon binds the call's listeners on the host's loopback, and closes them when
    /// the call ends.
    #[test]
    fn landlock() {
        super::a_full_turn_fetches_the_allowed_host_on("landlock");
    }
}

fn a_full_turn_fetches_the_allowed_host_on(backend: &'static str) {
    if !serves_proxy(backend) {
        return;
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let up = runtime.block_on(egress_support::http_upstream());
    let port = up.port();
    let setup = Setup::level("full")
        .backend(backend)
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
    // A failed command in proxy mode is not told the network is off (it is not).
    let failed = s.call("shell", json!({"command": "echo failing; exit 1"}));
    failed.assert_completed().assert_result_contains("failing");
    assert!(
        !failed.model_saw.contains("the network is off"),
        "{}",
        failed.describe()
    );
    assert_eq!(
        up.seen(),
        [format!("GET /pkg host=files.example:{port}")],
        "{}",
        out.describe()
    );
    // Each call's proxy ends with it: the daemon holds no listener or connection after.
    // Judged on the sockets a proxy uses — listeners, connections to the upstream, and
    // sockets of another network namespace (a namespaced call's listeners) — not on the
    // daemon's pooled connections to the model, whose number may change between turns.
    // Measured once the daemon is idle (a warm helper may still be being prepared).
    let pid = s.client.pid();
    let before = settled(|| proxy_sockets(pid, port));
    for _ in 0..3 {
        s.call("shell", json!({ "command": command }))
            .assert_result_contains("hello from upstream");
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut after = proxy_sockets(pid, port);
    while after.len() > before.len() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
        after = proxy_sockets(pid, port);
    }
    let new: Vec<_> = after.iter().filter(|s| !before.contains(s)).collect();
    assert!(
        after.len() <= before.len(),
        "proxy sockets leaked: {} before, {} after three proxied calls; new: {new:?}",
        before.len(),
        after.len()
    );
}

/// `measure()` once its number has held still for half a second (at most ten seconds).
fn settled(measure: impl Fn() -> Vec<String>) -> Vec<String> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut last = measure();
    let mut still_since = std::time::Instant::now();
    while std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
        let now = measure();
        if now.len() != last.len() {
            still_since = std::time::Instant::now();
        } else if still_since.elapsed() >= std::time::Duration::from_millis(500) {
            return now;
        }
        last = now;
    }
    last
}

/// The sockets of process `pid` a proxy would hold (by inode, with what they are): TCP
/// listeners, TCP connections from or to `upstream_port`, and sockets of no table of the
/// process's network namespace (another namespace's: a namespaced call's listeners).
fn proxy_sockets(pid: u32, upstream_port: u16) -> Vec<String> {
    let mut known = std::collections::HashMap::new();
    for table in ["tcp", "tcp6"] {
        let text = std::fs::read_to_string(format!("/proc/{pid}/net/{table}")).unwrap_or_default();
        for row in text.lines().skip(1) {
            let cols: Vec<&str> = row.split_whitespace().collect();
            let port = |addr: &str| {
                addr.rsplit(':')
                    .next()
                    .and_then(|p| u16::from_str_radix(p, 16).ok())
            };
            if let [_, local, remote, state, _, _, _, _, _, inode, ..] = cols[..] {
                let ours = state == "0A"
                    || port(local) == Some(upstream_port)
                    || port(remote) == Some(upstream_port);
                known.insert(inode.to_string(), ours.then(|| format!("{table} {row}")));
            }
        }
    }
    for table in ["udp", "udp6", "raw", "raw6", "unix", "netlink", "packet"] {
        let text = std::fs::read_to_string(format!("/proc/{pid}/net/{table}")).unwrap_or_default();
        let column = match table {
            "unix" => 6,
            "packet" => 8,
            _ => 9,
        };
        for row in text.lines().skip(1) {
            if let Some(inode) = row.split_whitespace().nth(column) {
                known.entry(inode.to_string()).or_insert(None);
            }
        }
    }
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return Vec::new();
    };
    dir.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter_map(|target| {
            let target = target.to_string_lossy();
            let inode = target
                .strip_prefix("socket:[")?
                .strip_suffix(']')?
                .to_string();
            match known.get(&inode) {
                Some(Some(what)) => Some(what.clone()),
                Some(None) => None,
                None => Some(format!("socket {inode} of another network namespace")),
            }
        })
        .collect()
}

#[test]
fn two_agents_with_different_allowlists_running_at_once_keep_their_own() {
    if !backend_available("namespaces") || !support::have_program("curl") {
        return;
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let up = runtime.block_on(egress_support::http_upstream());
    let port = up.port();
    // Both shells start before either ends (the sleep), so the two proxies serve at once.
    let command = format!(
        "sleep 1; for h in a.example b.example; do \
         echo $h=$(curl -sS -o /dev/null -w '%{{http_code}}' http://$h:{port}/); done"
    );
    let args = json!({ "command": command });
    let model = ModelServer::start_blocking(vec![
        tool_reply("call-1", "shell", &args),
        tool_reply("call-2", "shell", &args),
        text_reply("done"),
        text_reply("done"),
    ]);
    let toml = format!(
        "[autonomy]\nlevel = \"full\"\n[sandbox]\nbackend = \"namespaces\"\n{}\
         [agents.coder.network]\nallow_domains = [\"a.example\"]\n\
         [agents.other]\nprovider = \"local\"\nmodel = \"m\"\n\
         [agents.other.network]\nallow_domains = [\"b.example\"]\n",
        network("none.example", port)
    );
    let work = tempfile::tempdir().unwrap();
    let client = AcpClient::builder()
        .model(model.base_url())
        .config_toml(toml)
        .current_dir(work.path())
        .spawn();
    client.set_permission(Permission::Select("allow-always".into()));
    client.initialize();
    let open = |alias: &str| {
        let result = client.call(
            "session/new",
            json!({"cwd": work.path(), "mcpServers": [], "agentAlias": alias}),
        );
        result["sessionId"].as_str().unwrap().to_owned()
    };
    let sessions = [open("coder"), open("other")];
    let ids: Vec<_> = sessions
        .iter()
        .map(|s| client.send_request("session/prompt", prompt_params(s, "go")))
        .collect();
    for id in &ids {
        let response = client.wait_response(id);
        assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    }
    client.assert_valid();
    let seen = |session: &str| {
        client
            .updates_for(session)
            .iter()
            .map(tools_support::update_text)
            .collect::<Vec<_>>()
            .join("\n")
    };
    let (coder, other) = (seen(&sessions[0]), seen(&sessions[1]));
    assert!(
        coder.contains("a.example=200") && coder.contains("b.example=403"),
        "coder: {coder}"
    );
    assert!(
        coder.contains(&format!(
            "network: refused b.example:{port} — not in allow_domains"
        )),
        "coder: {coder}"
    );
    assert!(
        other.contains("a.example=403") && other.contains("b.example=200"),
        "other: {other}"
    );
    assert_eq!(
        up.seen().len(),
        2,
        "one allowed request each: {:?}",
        up.seen()
    );
}

/// Every connection of a call is in the audit log (issue 35 item 3): a turn whose shell
/// fetches from an allowed host, a name outside `allow_domains` and an allowed name resolving
/// to a private address leaves one `network.connection` record each, before the call's
/// `tool.exec`, with the name, port, address, rule, bytes each way and duration;
/// `audit list --kind` shows them, the OCSF export carries them as Network Activity (4001),
/// and the chain verifies.
#[test]
fn a_calls_connections_are_in_the_audit_log_and_its_ocsf_export() {
    if !serves_proxy("namespaces") {
        return;
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let up = runtime.block_on(egress_support::http_upstream());
    let port = up.port();
    let network = format!(
        "[sandbox.network]\nmode = \"proxy\"\n\
         allow_domains = [\"files.example\", \"private.example\"]\n\
         allow_ports = [{port}]\nallow_cidrs = [\"127.0.0.0/8\"]\n\
         hosts = {{ \"files.example\" = \"127.0.0.1\", \"other.example\" = \"127.0.0.1\", \
         \"private.example\" = \"10.0.0.1\" }}\n"
    );
    let setup = Setup::level("full").backend("namespaces").extra(&network);
    let s = Scene::start(setup);
    let command = format!(
        "curl -sS http://files.example:{port}/pkg; \
         for h in other.example private.example; do \
         curl -sS -o /dev/null -w \"$h %{{http_code}}\\n\" http://$h:{port}/leak; done"
    );
    s.call("shell", json!({ "command": command }))
        .assert_completed()
        .assert_result_contains("hello from upstream")
        .assert_result_contains("other.example 403")
        .assert_result_contains("private.example 403");
    let config = s.config_dir();
    let audit = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_zeroclaw"))
            .arg("audit")
            .arg("--config-dir")
            .arg(&config)
            .args(args)
            .env_remove("ZEROCLAW_CONFIG_DIR")
            .output()
            .expect("run zeroclaw audit");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "audit {args:?}: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    };

    let records: Vec<serde_json::Value> = audit(&["export", "--format", "jsonl"])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let of_kind = |kind: &str| -> Vec<&serde_json::Value> {
        records
            .iter()
            .filter(|r| r["record"]["kind"] == kind)
            .collect()
    };
    let network = of_kind("network.connection");
    assert_eq!(network.len(), 3, "{network:#?}");
    let by_name = |name: &str| {
        let found = network.iter().find(|r| r["record"]["name"] == name);
        &found.unwrap_or_else(|| panic!("no record of {name}: {network:#?}"))["record"]
    };
    let allowed = by_name("files.example");
    assert_eq!(allowed["session"], s.session.as_str());
    assert_eq!(allowed["via"], "http");
    assert_eq!(allowed["port"], port);
    assert_eq!(allowed["address"], "127.0.0.1");
    assert_eq!(allowed["decision"], "allow");
    assert_eq!(allowed["rule"], "allow_domains");
    assert!(allowed["bytes_sent"].as_u64().unwrap() > 0, "{allowed}");
    assert!(
        allowed["bytes_received"].as_u64().unwrap() > "hello from upstream\n".len() as u64,
        "{allowed}"
    );
    assert!(allowed["duration_us"].as_u64().is_some(), "{allowed}");
    let unlisted = by_name("other.example");
    assert_eq!(unlisted["decision"], "deny");
    assert_eq!(unlisted["rule"], "not_in_allow_domains");
    assert_eq!(unlisted["reason"], "not in allow_domains");
    assert_eq!(unlisted["bytes_sent"], 0);
    let private = by_name("private.example");
    assert_eq!(private["decision"], "deny");
    assert_eq!(private["rule"], "refused_address");
    assert_eq!(private["address"], "10.0.0.1");
    // Written before the call's own record: the call waits for its connections' records.
    let exec_seq = of_kind("tool.exec")[0]["seq"].as_i64().unwrap();
    assert!(
        network
            .iter()
            .all(|r| r["seq"].as_i64().unwrap() < exec_seq)
    );

    let listed = audit(&["list", "--kind", "network.connection"]);
    assert_eq!(listed.lines().count(), 3, "{listed}");
    let line = listed
        .lines()
        .find(|l| l.contains("files.example"))
        .unwrap_or_else(|| panic!("{listed}"));
    for part in [
        "decision=allow",
        "rule=allow_domains",
        &format!("http files.example:{port}"),
        "address=127.0.0.1",
        &format!("sent={}", allowed["bytes_sent"]),
        &format!("received={}", allowed["bytes_received"]),
        &format!("duration_us={}", allowed["duration_us"]),
    ] {
        assert!(line.contains(part), "{part} in {line}");
    }
    assert!(
        listed.contains(&format!(
            "decision=deny rule=not_in_allow_domains http other.example:{port} address=-"
        )),
        "{listed}"
    );

    let ocsf: Vec<serde_json::Value> = audit(&["export", "--format", "ocsf"])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|e: &serde_json::Value| e["class_uid"] == 4001)
        .collect();
    assert_eq!(ocsf.len(), 3, "{ocsf:#?}");
    let event = ocsf
        .iter()
        .find(|e| e["dst_endpoint"]["hostname"] == "files.example")
        .unwrap();
    assert_eq!(event["category_uid"], 4);
    assert_eq!(event["activity_id"], 2);
    assert_eq!(event["type_uid"], 400102);
    assert_eq!(event["dst_endpoint"]["ip"], "127.0.0.1");
    assert_eq!(event["dst_endpoint"]["port"], port);
    assert_eq!(event["traffic"]["bytes_out"], allowed["bytes_sent"]);
    assert_eq!(event["traffic"]["bytes_in"], allowed["bytes_received"]);
    let refused = ocsf
        .iter()
        .find(|e| e["dst_endpoint"]["hostname"] == "other.example")
        .unwrap();
    assert_eq!(refused["activity_id"], 5);
    assert_eq!(refused["status_id"], 2);
    assert_eq!(refused["status_detail"], "not in allow_domains");

    assert!(audit(&["verify"]).starts_with("ok:"));
}
