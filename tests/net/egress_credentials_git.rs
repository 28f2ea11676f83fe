//! The workflow credentials exist for: a full-autonomy session's shell runs `git push` over
//! HTTPS to a loopback smart-HTTP server (git http-backend behind TLS, with its own test CA in
//! `extra_ca_files`) that answers 401 without the token. The credential is `inject = "basic"`
//! with its secret in the daemon's environment (`value_env`): the push lands, the server saw
//! the real token in every request, and the command's output, the client, the model and the
//! config directory never hold it.

use std::path::Path;
use std::process::Command;

use base64::Engine;
use serde_json::json;

use crate::egress_support;
use crate::egress_tools::serves_proxy;
use crate::tools_support::{Scene, Setup};

const CANARY: &str = "zc-canary-git-token-41c0de";

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

#[test]
fn git_push_over_https_gets_the_token_the_agent_never_sees() {
    if !serves_proxy("namespaces") || !crate::support::have_program("git") {
        return;
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let repos = tempfile::tempdir().unwrap();
    git(repos.path(), &["init", "-q", "--bare", "repo.git"]);
    let expected = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("x-access-token:{CANARY}"))
    );
    let (server, ca) = runtime.block_on(egress_support::git_http::git_https(
        "git.example",
        repos.path().to_path_buf(),
        expected.clone(),
    ));
    let cas = tempfile::tempdir().unwrap();
    let ca_file = cas.path().join("git-ca.pem");
    std::fs::write(&ca_file, &ca).unwrap();
    let port = server.port();
    let network = format!(
        "[sandbox.network]\nmode = \"proxy\"\nallow_domains = [\"git.example\"]\n\
         allow_ports = [{port}]\nallow_cidrs = [\"127.0.0.0/8\"]\n\
         hosts = {{ \"git.example\" = \"127.0.0.1\" }}\n\
         extra_ca_files = [\"{}\"]\n\
         [[sandbox.network.credentials]]\nname = \"git\"\nhosts = [\"git.example\"]\n\
         env = \"GIT_TOKEN\"\ninject = \"basic\"\nusername = \"x-access-token\"\n\
         value_env = \"ZC_TEST_GIT_TOKEN\"\n",
        ca_file.display()
    );
    let setup = Setup::level("full")
        .backend("namespaces")
        .env("ZC_TEST_GIT_TOKEN", CANARY)
        .extra(&network);
    let s = Scene::start(setup);
    let project = s.ws().join("proj");
    std::fs::create_dir(&project).unwrap();
    git(&project, &["init", "-q", "-b", "main"]);
    std::fs::write(project.join("README"), "hello\n").unwrap();
    git(&project, &["add", "README"]);
    git(&project, &["commit", "-q", "-m", "first"]);
    let head = git(&project, &["rev-parse", "HEAD"]);

    let command = format!(
        "cd proj && GIT_TERMINAL_PROMPT=0 git -c safe.directory='*' push \
         https://git.example:{port}/repo.git main 2>&1; echo \"token=$GIT_TOKEN\"; \
         env | grep -c {} || true",
        "ZC_TEST_GIT_TOKEN"
    );
    let out = s.call("shell", json!({ "command": command }));
    out.assert_completed()
        .assert_result_contains("main -> main")
        .assert_result_contains("token=zeroclaw-placeholder-git-");
    // The push landed, and every request the server got carried the real token.
    assert_eq!(
        git(
            repos.path(),
            &["--git-dir", "repo.git", "rev-parse", "main"]
        ),
        head
    );
    let seen = server.seen();
    assert!(seen.len() >= 2, "{seen:?}");
    for request in &seen {
        assert!(request.ends_with(&format!("auth={expected}")), "{seen:?}");
    }
    assert!(
        seen.iter()
            .any(|r| r.starts_with("POST /repo.git/git-receive-pack"))
    );
    // The canary: not in the child's environment or output, the client, the model, the store.
    assert!(!out.describe().contains(CANARY));
    assert!(!s.everything_seen().contains(CANARY));
    assert!(!s.everything_seen().contains(&expected));
    let stored = crate::egress_credentials::files_holding(&s.config_dir(), CANARY);
    assert!(stored.is_empty(), "{stored:?}");
}
