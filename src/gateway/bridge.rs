//! `zeroclaw-acp-bridge`: an editor speaks ACP on the bridge's stdin/stdout and the bridge
//! relays every line as one WebSocket text frame to a running daemon's `/acp` (and back).
//! The daemon is found in the same config as the daemon's (its Unix socket when present, else
//! its TCP address) unless `--url` says otherwise (a `ws://` URL, or an address as
//! `[gateway] listen` writes it: `unix:PATH`, `tcp:HOST:PORT`). Over TCP the token comes from
//! `ZEROCLAW_ACP_BRIDGE_TOKEN`, else `<config_dir>/acp-bridge-token`; over the Unix socket no
//! token is sent: the daemon takes the peer's credentials as the principal (`uid:<n>`), so the
//! user's stdio sessions stay theirs through the bridge. At end of input the
//! bridge waits for the answers to the requests it relayed, then closes; a daemon closing the
//! connection with nothing unanswered is a normal end too. Normal ends print nothing; when the
//! daemon goes away or refuses, the bridge says so on stderr and exits 1.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use futures::{SinkExt, StreamExt};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::{Message, http};
use tokio_tungstenite::{WebSocketStream, client_async, connect_async_with_config};

use super::auth::SUBPROTOCOL;
use crate::config::Config;
use crate::config::listen::Address;

pub const TOKEN_ENV: &str = "ZEROCLAW_ACP_BRIDGE_TOKEN";
pub const TOKEN_FILE: &str = "acp-bridge-token";
const NAME: &str = "zeroclaw-acp-bridge";

/// Flags of `zeroclaw-acp-bridge`.
#[derive(Debug, Clone, clap::Parser)]
#[command(name = NAME, version, about = "Bridge ACP on stdio to a running zeroclaw daemon")]
pub struct BridgeArgs {
    /// Configuration directory (default: $ZEROCLAW_CONFIG_DIR, else ~/.zeroclaw).
    #[arg(long)]
    pub config_dir: Option<PathBuf>,
    /// The daemon: `ws://HOST:PORT/acp`, `tcp:HOST:PORT` or `unix:/path/to/zeroclaw.sock`
    /// (default: from the config's [gateway].listen, the Unix socket when it exists, else the
    /// TCP address).
    #[arg(long)]
    pub url: Option<String>,
}

/// Where the daemon is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Unix(PathBuf),
    Url(String),
}

impl From<Address> for Target {
    fn from(address: Address) -> Target {
        match address {
            Address::Unix(path) => Target::Unix(path),
            Address::Tcp(host_port) => Target::Url(format!("ws://{host_port}/acp")),
        }
    }
}

/// As a user writes it: `unix:PATH` or the URL.
impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Unix(path) => write!(f, "unix:{}", path.display()),
            Target::Url(url) => f.write_str(url),
        }
    }
}

pub fn run(args: BridgeArgs) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => return fail(&format!("cannot start: {error}")),
    };
    let result = runtime.block_on(bridge(args));
    // The stdin reader is a blocking read that never returns while the editor stays quiet:
    // do not wait for it.
    runtime.shutdown_background();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => fail(&format!("{error:#}")),
    }
}

fn fail(message: &str) -> ExitCode {
    eprintln!("{NAME}: {message}");
    ExitCode::FAILURE
}

async fn bridge(args: BridgeArgs) -> anyhow::Result<()> {
    let config = Config::load(args.config_dir.as_deref())?;
    let target = match args.url {
        Some(url) => parse_url(&url).map_err(|e| anyhow::anyhow!("--url: {e}"))?,
        None => target_from_config(&config.gateway.listen)?,
    };
    let token_file = config.config_dir.join(TOKEN_FILE);
    match &target {
        Target::Unix(path) => {
            let stream = tokio::net::UnixStream::connect(path)
                .await
                .with_context(|| format!("cannot reach the daemon at unix:{}", path.display()))?;
            // No token here: the daemon ignores one on its Unix socket (peer credentials are
            // the principal), and sending it would only spread the secret.
            let request = request("ws://localhost/acp", None)?;
            let (ws, _) = client_async(request, stream)
                .await
                .map_err(|e| handshake_error(&target, &token_file, e))?;
            relay(ws).await
        }
        Target::Url(url) => {
            let token = token(&token_file)?;
            // TCP_NODELAY: every relayed line is one small frame.
            let (ws, _) = connect_async_with_config(request(url, token.as_deref())?, None, true)
                .await
                .map_err(|e| handshake_error(&target, &token_file, e))?;
            relay(ws).await
        }
    }
}

/// `unix:PATH` and `tcp:HOST:PORT` as `[gateway] listen` parses them; anything else is a URL.
fn parse_url(url: &str) -> Result<Target, String> {
    if url.starts_with("unix:") || url.starts_with("tcp:") {
        return Address::parse(url).map(Target::from);
    }
    Ok(Target::Url(url.to_owned()))
}

/// The first configured Unix socket that exists, else the first TCP address.
pub fn target_from_config(listen: &[String]) -> anyhow::Result<Target> {
    let addresses: Vec<Address> = listen
        .iter()
        .filter_map(|a| Address::parse(a).ok())
        .collect();
    let unix = addresses.iter().find_map(|a| match a {
        Address::Unix(path) if path.exists() => Some(Target::from(a.clone())),
        _ => None,
    });
    let tcp = addresses.iter().find_map(|a| match a {
        Address::Tcp(_) => Some(Target::from(a.clone())),
        _ => None,
    });
    unix.or(tcp)
        .context("no daemon address: [gateway].listen has no existing Unix socket and no TCP address; pass --url")
}

/// `ZEROCLAW_ACP_BRIDGE_TOKEN`, else the token file, else none (peer credentials may do).
fn token(path: &Path) -> anyhow::Result<Option<String>> {
    if let Some(token) = std::env::var(TOKEN_ENV)
        .ok()
        .filter(|t| !t.trim().is_empty())
    {
        return Ok(Some(token.trim().to_owned()));
    }
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text.trim().to_owned()).filter(|t| !t.is_empty())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

fn request(url: &str, token: Option<&str>) -> anyhow::Result<http::Request<()>> {
    let mut request = url
        .into_client_request()
        .with_context(|| format!("`{url}` is not a ws:// URL"))?;
    let headers = request.headers_mut();
    headers.insert(
        "Sec-WebSocket-Protocol",
        HeaderValue::from_static(SUBPROTOCOL),
    );
    if let Some(token) = token {
        let value = HeaderValue::from_str(&format!("Bearer {token}"))
            .context("the token contains characters not allowed in a header")?;
        headers.insert("Authorization", value);
    }
    Ok(request)
}

fn handshake_error(
    target: &Target,
    token_file: &Path,
    error: tokio_tungstenite::tungstenite::Error,
) -> anyhow::Error {
    use tokio_tungstenite::tungstenite::Error;
    match error {
        Error::Http(response)
            if response.status() == http::StatusCode::UNAUTHORIZED
                && matches!(target, Target::Unix(_)) =>
        {
            anyhow::anyhow!(
                "the daemon at {target} refused the connection (401): its Unix socket admits the daemon's own uid, root and [gateway] allowed_uids/allowed_gids; add this uid there, or use --url tcp:HOST:PORT with a token"
            )
        }
        Error::Http(response) if response.status() == http::StatusCode::UNAUTHORIZED => {
            anyhow::anyhow!(
                "the daemon at {target} refused the connection (401): set {TOKEN_ENV}, or run `zeroclaw token create --output {}`",
                token_file.display()
            )
        }
        error => anyhow::anyhow!("cannot reach the daemon at {target}: {error}"),
    }
}

/// Relays until end of input (once every relayed request is answered) or the daemon leaves.
async fn relay<S>(ws: WebSocketStream<S>) -> anyhow::Result<()>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let (mut to_daemon, mut from_daemon) = ws.split();
    let mut stdin = BufReader::new(tokio::io::stdin()).lines();
    let mut stdout = tokio::io::stdout();
    let mut pending: HashSet<String> = HashSet::new();
    let mut input_open = true;
    loop {
        if !input_open && pending.is_empty() {
            let _ = to_daemon.send(Message::Close(None)).await;
            return Ok(());
        }
        tokio::select! {
            line = stdin.next_line(), if input_open => match line? {
                Some(line) if line.trim().is_empty() => {}
                Some(line) => {
                    if let Some(id) = request_id(&line) {
                        pending.insert(id);
                    }
                    to_daemon.send(Message::Text(line.into())).await
                        .context("the daemon went away")?;
                }
                None => input_open = false,
            },
            message = from_daemon.next() => {
                let text = match message {
                    Some(Ok(Message::Text(text))) => text.as_str().to_owned(),
                    Some(Ok(Message::Binary(bytes))) => String::from_utf8_lossy(&bytes).into_owned(),
                    Some(Ok(Message::Close(_))) if pending.is_empty() => return Ok(()),
                    Some(Ok(Message::Close(_))) => anyhow::bail!(
                        "the daemon closed the connection with {} request(s) unanswered",
                        pending.len()
                    ),
                    None => anyhow::bail!("the daemon went away"),
                    Some(Ok(_)) => continue,
                    Some(Err(error)) => anyhow::bail!("the daemon went away: {error}"),
                };
                if let Some(id) = response_id(&text) {
                    pending.remove(&id);
                }
                stdout.write_all(text.as_bytes()).await?;
                stdout.write_all(b"\n").await?;
                stdout.flush().await?;
            }
        }
    }
}

/// The id of a request the client sent (it will be answered).
fn request_id(line: &str) -> Option<String> {
    let value: Value = serde_json::from_str(line).ok()?;
    value.get("method")?;
    value.get("id").map(Value::to_string)
}

/// The id of a response coming back (no method).
fn response_id(text: &str) -> Option<String> {
    let value: Value = serde_json::from_str(text).ok()?;
    if value.get("method").is_some() {
        return None;
    }
    value.get("id").map(Value::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets() {
        assert_eq!(
            parse_url("unix:/x.sock"),
            Ok(Target::Unix("/x.sock".into()))
        );
        let tcp = parse_url("tcp:127.0.0.1:42617").unwrap();
        assert_eq!(tcp, Target::Url("ws://127.0.0.1:42617/acp".into()));
        assert_eq!(tcp.to_string(), "ws://127.0.0.1:42617/acp");
        assert!(parse_url("tcp:nowhere").is_err());
        assert_eq!(
            parse_url("ws://h:1/acp").unwrap().to_string(),
            "ws://h:1/acp"
        );
        let listen = vec!["unix:/nonexistent/z.sock".into(), "tcp:127.0.0.1:9".into()];
        assert_eq!(
            target_from_config(&listen).unwrap(),
            Target::Url("ws://127.0.0.1:9/acp".into())
        );
        let dir = tempfile::tempdir().unwrap();
        let sock = dir.path().join("z.sock");
        let _l = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        let listen = vec![format!("unix:{}", sock.display()), "tcp:127.0.0.1:9".into()];
        assert_eq!(target_from_config(&listen).unwrap(), Target::Unix(sock));
    }

    #[test]
    fn ids_of_requests_and_responses() {
        assert_eq!(
            request_id(r#"{"jsonrpc":"2.0","id":1,"method":"x"}"#).as_deref(),
            Some("1")
        );
        assert_eq!(request_id(r#"{"jsonrpc":"2.0","method":"x"}"#), None);
        assert_eq!(
            response_id(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#).as_deref(),
            Some("1")
        );
        assert_eq!(
            response_id(r#"{"jsonrpc":"2.0","id":"zc-out-1","method":"x"}"#),
            None
        );
    }
}
