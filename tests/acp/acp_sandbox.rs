//! The sandbox declared over ACP: `initialize` carries `_meta.zeroclaw.sandbox`, the same
//! report `zeroclaw doctor --json` prints for the same configuration (rung, guarantees,
//! what is missing, the policy's lines), on each rung the configuration can ask for; the
//! `session/new` and `session/load` results declare the session's; and a `session/new` whose
//! `_meta.zeroclaw.requireSandbox` this host cannot meet is refused with -32602 and
//! `data.reason = "sandbox_policy_unsatisfiable"`, creating no session.

use std::process::Command;

use serde_json::{Value, json};

use crate::support::acp_client::{AcpClient, model_env};
use crate::support::model_server::ModelServer;

fn config(backend: &str, network: &str) -> String {
    format!("[sandbox]\nbackend = \"{backend}\"\n\n[sandbox.network]\nmode = \"{network}\"\n")
}

fn spawn(model: &ModelServer, config_dir: &std::path::Path, toml: &str) -> AcpClient {
    AcpClient::builder()
        .model(model.base_url())
        .config_dir(config_dir)
        .config_toml(toml)
        .spawn()
}

/// `zeroclaw doctor --json` for the configuration in `config_dir`, with the same agent env.
fn doctor(model: &ModelServer, config_dir: &std::path::Path) -> Value {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_zeroclaw"));
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("ZEROCLAW_") {
            cmd.env_remove(key);
        }
    }
    let out = cmd
        .args(["doctor", "--json"])
        .env("ZEROCLAW_CONFIG_DIR", config_dir)
        .envs(model_env(&model.base_url()))
        .output()
        .expect("run zeroclaw doctor");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "doctor --json ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

fn declared(result: &Value) -> &Value {
    let sandbox = &result["_meta"]["zeroclaw"]["sandbox"];
    assert!(sandbox.is_object(), "no _meta.zeroclaw.sandbox in {result}");
    sandbox
}

#[test]
fn initialize_declares_what_doctor_reports_on_each_rung() {
    let model = ModelServer::start_blocking(vec![]);
    for backend in ["auto", "namespaces", "bubblewrap", "landlock", "none"] {
        let dir = tempfile::tempdir().unwrap();
        let client = spawn(&model, dir.path(), &config(backend, "deny"));
        let init = client.initialize();
        let sandbox = declared(&init);
        let doctor = doctor(&model, dir.path());
        let what = format!("backend {backend}: {sandbox:#}\ndoctor: {doctor:#}");
        assert_eq!(sandbox["rung"], doctor["chosen"], "{what}");
        assert_eq!(sandbox["requested"], doctor["requested"], "{what}");
        assert_eq!(sandbox["enforced"], doctor["guarantees"], "{what}");
        assert_eq!(sandbox["missing"], doctor["missing"], "{what}");
        assert_eq!(sandbox["lines"], doctor["policy"]["lines"], "{what}");
        assert_eq!(sandbox["network"], "deny", "{what}");
        let not_enforced = sandbox["notEnforced"].as_array().expect("notEnforced");
        let line = doctor["policy"]["lines"]
            .as_array()
            .and_then(|l| {
                l.iter()
                    .find_map(|l| l.as_str()?.strip_prefix("not enforced: "))
            })
            .expect("doctor's not enforced line");
        let joined: Vec<&str> = not_enforced.iter().filter_map(Value::as_str).collect();
        assert_eq!(joined.join("; "), line, "{what}");
        let confined = matches!(
            doctor["chosen"].as_str(),
            Some("namespaces" | "bubblewrap" | "landlock")
        );
        assert_eq!(sandbox["insideCheck"], confined, "{what}");
        if backend == "none" {
            assert_eq!(sandbox["guarantees"]["fsIsolation"], "none", "{what}");
            assert_eq!(sandbox["guarantees"]["processCaps"], false, "{what}");
        }
    }
}

#[test]
fn session_new_and_load_declare_the_sessions_sandbox() {
    let model = ModelServer::start_blocking(vec![]);
    let dir = tempfile::tempdir().unwrap();
    let client = spawn(&model, dir.path(), &config("auto", "allow"));
    let init = client.initialize();
    let work = tempfile::tempdir().unwrap();
    let cwd = work.path().canonicalize().unwrap();
    let result = client.call("session/new", json!({"cwd": cwd, "mcpServers": []}));
    let sandbox = declared(&result);
    assert_eq!(sandbox["rung"], declared(&init)["rung"]);
    assert_eq!(sandbox["network"], "allow");
    assert_eq!(sandbox["guarantees"]["netIsolation"], "none");
    let reads = sandbox["lines"][0].as_str().unwrap();
    assert!(reads.contains(&cwd.display().to_string()), "{reads}");
    let id = result["sessionId"].as_str().unwrap();
    client.call("session/close", json!({"sessionId": id}));
    let loaded = client.call(
        "session/load",
        json!({"sessionId": id, "cwd": cwd, "mcpServers": []}),
    );
    assert_eq!(declared(&loaded), sandbox);
}

#[test]
fn a_sandbox_this_host_cannot_give_is_refused_at_session_new() {
    let model = ModelServer::start_blocking(vec![]);
    let dir = tempfile::tempdir().unwrap();
    let client = spawn(&model, dir.path(), &config("landlock", "allow"));
    client.initialize();
    let work = tempfile::tempdir().unwrap();
    let new = |require: Value| {
        json!({"cwd": work.path(), "mcpServers": [],
               "_meta": {"zeroclaw": {"requireSandbox": require}}})
    };
    for (require, names) in [
        (json!({"rung": "namespaces"}), "rung namespaces or stronger"),
        (json!({"network": "deny"}), "network deny at most"),
        (
            json!({"rung": "bubblewrap", "network": "proxy"}),
            "rung bubblewrap",
        ),
    ] {
        let error = client.call_err("session/new", new(require.clone()));
        assert_eq!(error["code"], -32602, "{require}: {error}");
        let message = error["message"].as_str().unwrap();
        assert!(message.contains(names), "{require}: {message}");
        assert_eq!(
            error["data"]["reason"], "sandbox_policy_unsatisfiable",
            "{error}"
        );
        assert_eq!(error["data"]["sandbox"]["network"], "allow", "{error}");
    }
    // A requirement zeroclaw cannot evaluate is refused, never ignored.
    let error = client.call_err("session/new", new(json!({"gpu": "none"})));
    assert_eq!(error["code"], -32602, "{error}");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("requireSandbox.gpu"),
        "{error}"
    );
    // No session was made by the refusals; one this host can give is made.
    let listed = client.call("session/list", json!({}));
    assert_eq!(
        listed["sessions"].as_array().map(Vec::len),
        Some(0),
        "{listed}"
    );
    let result = client.call(
        "session/new",
        new(json!({"rung": "none", "network": "allow"})),
    );
    assert!(result["sessionId"].is_string(), "{result}");
}

/// `zeroclaw acp` keeps the sandbox probes in `<workspace_dir>/state/sandbox-probes.json` with
/// the host facts they depend on: the next process declares the same from the file; a file
/// whose facts are not this host's is not believed (the declaration is doctor's again, and
/// the file is rewritten); and one whose facts match is what the declaration is made from.
#[test]
fn the_probes_one_process_kept_serve_the_next_only_for_the_same_host_facts() {
    use std::os::unix::fs::PermissionsExt;
    let model = ModelServer::start_blocking(vec![]);
    let dir = tempfile::tempdir().unwrap();
    let toml = config("auto", "deny");
    let initialize = || spawn(&model, dir.path(), &toml).initialize();
    let first = declared(&initialize()).clone();
    let file = dir.path().join("workspace/state/sandbox-probes.json");
    let mode = std::fs::metadata(&file)
        .expect("the probes are kept")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "{}", file.display());
    assert_eq!(
        declared(&initialize()),
        &first,
        "the next process declares the same"
    );

    let kept: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let unusable = |mut kept: Value| {
        for probe in ["user_namespaces", "bubblewrap"] {
            kept["probes"][probe]["ok"] = false.into();
            kept["probes"][probe]["detail"] = "planted by the test".into();
        }
        std::fs::write(&file, serde_json::to_vec(&kept).unwrap()).unwrap();
    };

    let mut other_host = kept.clone();
    other_host["facts"] = "boot=another boot\n".into();
    unusable(other_host);
    let doctor = doctor(&model, dir.path());
    assert_eq!(declared(&initialize())["rung"], doctor["chosen"]);
    let rewritten: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(rewritten["facts"], kept["facts"], "the file is made anew");

    if first["rung"] == "namespaces" {
        unusable(kept);
        let planted = initialize();
        let missing = declared(&planted)["missing"].to_string();
        assert!(
            missing.contains("namespaces: planted by the test"),
            "same facts: the kept probes are read, not run again: {planted}"
        );
    } else {
        println!(
            "skipped the planted-probes half: this host's rung is {}",
            first["rung"]
        );
    }
}
