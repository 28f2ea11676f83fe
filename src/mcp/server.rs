//! One stdio MCP server, confined: started through [`Sandbox::spawn`] with the session's
//! profile (no wall-time deadline: it lives as long as the session), its stdin and stdout
//! handed to `rmcp` as the transport, its stderr kept as a short tail for error messages.
//! Dropping the [`Server`] kills the whole confined tree; if the daemon dies, the sandbox's
//! lifeline kills it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Map, Value};
use tokio::io::AsyncReadExt;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use zeroclaw_sandbox::{End, ExitInfo, Profile, Sandbox};

use super::spec::ServerSpec;

/// A confined server's "wall time": the session's life (the deadline only guards overflow).
const LIFETIME: Duration = Duration::from_secs(100 * 365 * 24 * 3600);
/// How much of the server's stderr is kept for error messages.
const STDERR_TAIL: usize = 2048;

/// A running, initialized server and the tools it listed.
pub struct Server {
    pub name: String,
    /// The helper's pid: the root of the server's confined tree (none for http).
    pub pid: Option<u32>,
    /// `tools/list`, each tool as the MCP JSON object (`name`, `inputSchema`, ...).
    pub tools: Vec<Value>,
    client: RunningService<RoleClient, ()>,
    ended: watch::Receiver<Option<String>>,
    stderr: Tail,
    stop: CancellationToken,
    /// An http server's end signal, kept so that it never fires.
    _ended: Option<watch::Sender<Option<String>>>,
}

/// The end of the server's stderr, and whether it was read to its end.
#[derive(Clone)]
struct Tail {
    kept: Arc<Mutex<Vec<u8>>>,
    closed: watch::Receiver<bool>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Starts `spec` confined by `profile` and completes the MCP handshake and `tools/list`
/// within `timeout`; the error is written for the model and the user.
pub async fn start(
    sandbox: &Sandbox,
    profile: Profile,
    spec: &ServerSpec,
    timeout: Duration,
) -> Result<Server, String> {
    let mut profile = profile;
    profile.limits.wall_time = LIFETIME;
    for (name, value) in &spec.env {
        profile = profile.set_env(name, value);
    }
    let argv = std::iter::once(spec.command.as_str()).chain(spec.args.iter().map(String::as_str));
    let mut confined = sandbox
        .spawn(&profile, argv)
        .await
        .map_err(|e| format!("it could not be started in the sandbox: {e}"))?;
    let pid = confined.id();
    let stdin = confined.take_stdin();
    let (stdout, stderr) = confined.take_output();
    let (Some(stdin), Some(stdout), Some(stderr)) = (stdin, stdout, stderr) else {
        return Err("the sandbox gave no stdio pipes for it".to_owned());
    };
    let (closed_tx, closed) = watch::channel(false);
    let tail = Tail {
        kept: Arc::default(),
        closed,
    };
    let (kept, name) = (tail.kept.clone(), spec.name.clone());
    tokio::spawn(async move {
        keep_tail(stderr, kept, name).await;
        let _ = closed_tx.send(true);
    });
    let stop = CancellationToken::new();
    let (ended_tx, ended) = watch::channel(None);
    let until = stop.clone().cancelled_owned();
    tokio::spawn(async move {
        let reason = match confined.wait(|_, _| {}, until).await {
            Ok(outcome) => match outcome.end {
                End::Cancelled => "was stopped".to_owned(),
                _ => match outcome.exit {
                    ExitInfo::Code(code) => format!("exited with code {code}"),
                    ExitInfo::Signal(signal) => format!("was killed by signal {signal}"),
                },
            },
            Err(error) => format!("failed in the sandbox: {error}"),
        };
        let _ = ended_tx.send(Some(reason));
    });
    let mut server = Server {
        name: spec.name.clone(),
        pid: Some(pid),
        tools: Vec::new(),
        // Filled in below; `client` is needed first.
        client: match handshake(stdout, stdin, timeout, ended.clone(), &tail).await {
            Ok(client) => client,
            Err(error) => {
                stop.cancel();
                return Err(error);
            }
        },
        ended,
        stderr: tail,
        stop,
        _ended: None,
    };
    server.list_tools(timeout).await?;
    Ok(server)
}

/// Connects to an http server over `http` (zeroclaw's own connection, as
/// [`super::route::client`] built it for the session's network policy) and completes the
/// handshake and `tools/list` within `timeout`.
pub async fn start_http(
    spec: &ServerSpec,
    endpoint: &super::spec::HttpEndpoint,
    http: reqwest::Client,
    timeout: Duration,
) -> Result<Server, String> {
    let stop = CancellationToken::new();
    let transport = super::http::transport(endpoint.clone(), http, stop.clone());
    let client = match tokio::time::timeout(timeout, ().serve(transport)).await {
        Ok(Ok(client)) => client,
        Ok(Err(error)) => {
            stop.cancel();
            return Err(format!("initialize failed: {error}"));
        }
        Err(_) => {
            stop.cancel();
            return Err(format!(
                "it did not answer initialize within {}s",
                timeout.as_secs()
            ));
        }
    };
    let (ended_tx, ended) = watch::channel(None);
    let (_, closed) = watch::channel(true);
    let mut server = Server {
        name: spec.name.clone(),
        pid: None,
        tools: Vec::new(),
        client,
        ended,
        stderr: Tail {
            kept: Arc::default(),
            closed,
        },
        stop,
        _ended: Some(ended_tx),
    };
    server.list_tools(timeout).await?;
    Ok(server)
}

async fn handshake(
    stdout: tokio::net::unix::pipe::Receiver,
    stdin: tokio::net::unix::pipe::Sender,
    timeout: Duration,
    mut ended: watch::Receiver<Option<String>>,
    tail: &Tail,
) -> Result<RunningService<RoleClient, ()>, String> {
    tokio::select! {
        started = tokio::time::timeout(timeout, ().serve((stdout, stdin))) => match started {
            Ok(Ok(client)) => Ok(client),
            Ok(Err(error)) => {
                let reason = settle(&mut ended).await;
                Err(with_tail(format!("initialize failed ({error}); the server {reason}"), tail).await)
            }
            Err(_) => Err(format!(
                "it did not answer initialize within {}s", timeout.as_secs()
            )),
        },
        reason = ended_reason(&mut ended) => {
            Err(with_tail(format!("it {reason} before answering initialize"), tail).await)
        }
    }
}

impl Server {
    async fn list_tools(&mut self, timeout: Duration) -> Result<(), String> {
        let listed = self.guard(timeout, self.client.list_all_tools()).await;
        let tools = listed.map_err(|e| format!("tools/list failed: {e}"))?;
        self.tools = tools
            .iter()
            .filter_map(|t| serde_json::to_value(t).ok())
            .collect();
        Ok(())
    }

    /// Calls `tool`; the `CallToolResult` as JSON, or why there is none (the server ended,
    /// `timeout` passed, `cancel` fired).
    pub async fn call(
        &self,
        tool: &str,
        arguments: Map<String, Value>,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<Value, String> {
        let ended = self.ended.borrow().clone();
        if let Some(reason) = ended {
            return Err(with_tail(
                format!("MCP server {} is not running: it {reason}", self.name),
                &self.stderr,
            )
            .await);
        }
        let mut params = CallToolRequestParams::new(tool.to_owned());
        params.arguments = Some(arguments);
        tokio::select! {
            result = self.guard(timeout, self.client.call_tool(params)) => {
                let result = result?;
                serde_json::to_value(result).map_err(|e| format!("unreadable result: {e}"))
            }
            () = cancel.cancelled() => Err("cancelled".to_owned()),
        }
    }

    /// `work` within `timeout`, failing at once with the reason when the server ends first.
    async fn guard<T>(
        &self,
        timeout: Duration,
        work: impl Future<Output = Result<T, rmcp::ServiceError>>,
    ) -> Result<T, String> {
        let mut ended = self.ended.clone();
        let name = &self.name;
        tokio::select! {
            done = tokio::time::timeout(timeout, work) => match done {
                Ok(Ok(value)) => Ok(value),
                Ok(Err(error)) => {
                    let reason = settle(&mut ended).await;
                    Err(with_tail(
                        format!("MCP server {name} failed the request ({error}); it {reason}"),
                        &self.stderr,
                    )
                    .await)
                }
                Err(_) => Err(format!(
                    "timed out: MCP server {name} did not answer within {}s",
                    timeout.as_secs()
                )),
            },
            reason = ended_reason(&mut ended) => Err(with_tail(
                format!("MCP server {name} {reason} during the call"),
                &self.stderr,
            )
            .await),
        }
    }
}

/// Waits until the server has ended and says how.
async fn ended_reason(ended: &mut watch::Receiver<Option<String>>) -> String {
    match ended.wait_for(Option::is_some).await {
        Ok(reason) => reason.clone().unwrap_or_default(),
        Err(_) => "ended".to_owned(),
    }
}

/// How the server ended if it does so shortly after a transport error, else "is still running".
async fn settle(ended: &mut watch::Receiver<Option<String>>) -> String {
    let wait = ended_reason(ended);
    tokio::time::timeout(Duration::from_secs(2), wait)
        .await
        .unwrap_or_else(|_| "is still running".to_owned())
}

/// `message` with the end of the server's stderr (read to its end first, briefly, when the
/// server has ended: its last words explain why).
async fn with_tail(message: String, tail: &Tail) -> String {
    let mut closed = tail.closed.clone();
    let _ = tokio::time::timeout(Duration::from_secs(1), closed.wait_for(|c| *c)).await;
    let kept = tail.kept.lock().unwrap_or_else(|e| e.into_inner());
    let text = String::from_utf8_lossy(&kept);
    let text = text.trim();
    if text.is_empty() {
        message
    } else {
        format!("{message}; its stderr ends with: {text}")
    }
}

/// Reads the server's stderr to its end, logging it and keeping the last bytes.
async fn keep_tail(
    mut stderr: tokio::net::unix::pipe::Receiver,
    tail: Arc<Mutex<Vec<u8>>>,
    name: String,
) {
    let mut buf = vec![0u8; 4096];
    while let Ok(n) = stderr.read(&mut buf).await {
        if n == 0 {
            break;
        }
        tracing::debug!(server = %name, stderr = %String::from_utf8_lossy(&buf[..n]), "mcp server");
        let mut kept = tail.lock().unwrap_or_else(|e| e.into_inner());
        kept.extend_from_slice(&buf[..n]);
        let excess = kept.len().saturating_sub(STDERR_TAIL);
        kept.drain(..excess);
    }
}
