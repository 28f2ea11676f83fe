//! `network = proxy` through the sandbox crate alone, on each rung that serves it (namespaces,
//! bubblewrap: `egress::<backend>::…`): the caller gets the two listeners the helper bound in
//! the call's network namespace, and what the command writes to 127.0.0.1:3128 and :1080
//! arrives on them; the command has the proxy variables and no descriptor of the hand-over.
//! The rest of the proxy (policy, refusals, real clients) is the root crate's `tests/sandbox`
//! and `tests/net`.

use std::time::Duration;

use tokio::io::AsyncReadExt;
use zeroclaw_sandbox::{BackendChoice, ExitInfo, Network, Profile, Sandbox, Stream};

use crate::support;

const HELPER: &str = env!("CARGO_BIN_EXE_zeroclaw-sandbox-helper");

/// `on_proxy_rungs!(name, ...)`: `name::namespaces` and `name::bubblewrap`, each running
/// `name(sandbox)` on that backend.
macro_rules! on_proxy_rungs {
    ($($name:ident),* $(,)?) => {
        $(mod $name {
            #[tokio::test(flavor = "current_thread")]
            async fn namespaces() {
                super::on(super::BackendChoice::Namespaces, super::$name).await;
            }

            #[tokio::test(flavor = "current_thread")]
            async fn bubblewrap() {
                super::on(super::BackendChoice::Bubblewrap, super::$name).await;
            }
        })*
    };
}

on_proxy_rungs!(the_listeners_reach_the_caller_and_the_command_reaches_them);

/// Runs `body` on `choice` with the stand-alone helper, if that backend (and bash, whose
/// `/dev/tcp` the command connects with) is here.
async fn on<F: Future<Output = ()>>(choice: BackendChoice, body: fn(Sandbox) -> F) {
    if !std::path::Path::new("/bin/bash").exists() {
        support::require_feature("bash (for /dev/tcp) missing");
        return;
    }
    match Sandbox::new(choice, false) {
        Ok(s) => body(s.with_helper(HELPER)).await,
        Err(e) => support::require_feature(&format!("backend {choice}: {e}")),
    }
}

/// What the client on `listener`'s first connection wrote before it closed.
async fn first_message(listener: std::net::TcpListener) -> String {
    let listener = tokio::net::TcpListener::from_std(listener).unwrap();
    let read = async {
        let (mut conn, _) = listener.accept().await.unwrap();
        let mut got = String::new();
        conn.read_to_string(&mut got).await.unwrap();
        got
    };
    tokio::time::timeout(Duration::from_secs(20), read)
        .await
        .expect("the command's connection")
}

async fn the_listeners_reach_the_caller_and_the_command_reaches_them(s: Sandbox) {
    let ws = tempfile::Builder::new()
        .prefix("zc-egress-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let p = Profile::for_workspace(ws.path()).network(Network::Proxy);
    // The descriptors first (ls reads its own on 3), then one connection to each listener.
    let script = "echo fds=$(ls /proc/self/fd); echo \"$HTTPS_PROXY $ALL_PROXY\"; \
                  exec 3<>/dev/tcp/127.0.0.1/3128; echo via-http >&3; exec 3>&-; \
                  exec 4<>/dev/tcp/127.0.0.1/1080; echo via-socks >&4; exec 4>&-";
    let mut confined = s
        .spawn(&p, ["/bin/bash", "-c", script])
        .await
        .unwrap_or_else(|e| panic!("{}: {e}", s.backend()));
    let listeners = confined.take_egress().expect("a proxy call's listeners");
    assert_eq!(listeners.ports, zeroclaw_sandbox::plan::egress::PORTS);
    let http = first_message(listeners.http).await;
    let socks = first_message(listeners.socks).await;
    let mut stdout = Vec::new();
    let outcome = confined
        .wait(
            |stream, bytes| {
                if stream == Stream::Stdout {
                    stdout.extend_from_slice(bytes)
                }
            },
            std::future::pending(),
        )
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&stdout);
    let all = format!(
        "{}: {outcome:?}\n{stdout}\n{}",
        s.backend(),
        String::from_utf8_lossy(&outcome.stderr)
    );
    assert_eq!(outcome.exit, ExitInfo::Code(0), "{all}");
    assert_eq!(
        (http.as_str(), socks.as_str()),
        ("via-http\n", "via-socks\n")
    );
    assert!(stdout.contains("fds=0 1 2 3\n"), "{all}");
    assert!(
        stdout.contains("http://127.0.0.1:3128 socks5h://127.0.0.1:1080"),
        "{all}"
    );
}
