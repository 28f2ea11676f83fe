//! `zeroclaw acp`: loads the config (with the command-line overrides), starts the audit log
//! and the shared ACP server state, and serves one client over stdin/stdout until end of
//! input. Started from a terminal (stdin a TTY), it first says on stderr what it is and where
//! to register it. It exits on end of input, SIGTERM or SIGINT (status 128 + the signal),
//! writing the audit log's final anchor and checkpoint first, and with `--metrics-file PATH`
//! its metrics ([`crate::metrics`]) to PATH.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use crate::acp::{Connection, Server, server};
use crate::config::{Config, FlagOverride};
use crate::rpc;
use crate::store::Store;

/// Flags of `zeroclaw acp`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct AcpArgs {
    /// Configuration directory (default: $ZEROCLAW_CONFIG_DIR, else ~/.zeroclaw).
    #[arg(long)]
    pub config_dir: Option<PathBuf>,
    /// Maximum number of active sessions (overrides [acp].max_sessions).
    #[arg(long)]
    pub max_sessions: Option<usize>,
    /// Seconds an idle session stays in memory (overrides [acp].session_timeout_secs).
    #[arg(long)]
    pub session_timeout: Option<u64>,
    /// On exit (end of input, SIGTERM, SIGINT) write the process's metrics to this file, in
    /// the Prometheus text format (replaced atomically).
    #[arg(long, value_name = "PATH")]
    pub metrics_file: Option<PathBuf>,
}

/// The one line for a person who started `zeroclaw acp` at a terminal.
const TERMINAL_HINT: &str = "zeroclaw acp speaks the Agent Client Protocol (JSON-RPC) on stdin/stdout, for an editor to launch; to register it, see \"Register in Zed\" in the README (Ctrl-D quits)";

pub fn run(args: AcpArgs) -> anyhow::Result<ExitCode> {
    if std::io::stdin().is_terminal() {
        eprintln!("{TERMINAL_HINT}");
    }
    let config = Config::load_with_flags(args.config_dir.as_deref(), flags(&args))?;
    if let Some(path) = &args.metrics_file {
        crate::metrics::file::check_target(path)?;
    }
    crate::acp::sandbox_decl::prepare(&config);
    let (runtime, store) = server::runtime_and_store(&config)?;
    let ended = runtime.block_on(serve_stdio(config, store))?;
    // Tasks still running (an outbound request nobody answers) must not hold the exit.
    runtime.shutdown_background();
    if let Some(path) = &args.metrics_file {
        let text = crate::metrics::get().encode(ended.sessions, 0);
        crate::metrics::file::write(path, &text)?;
    }
    Ok(match ended.signal {
        Some(signal) => ExitCode::from(128 + signal as u8),
        None => ExitCode::SUCCESS,
    })
}

/// The flags that set config keys, validated with the file and the environment.
fn flags(args: &AcpArgs) -> Vec<FlagOverride> {
    let max = args
        .max_sessions
        .map(|n| FlagOverride::whole_number("--max-sessions", "acp.max_sessions", n as u64));
    let timeout = args.session_timeout.map(|secs| {
        FlagOverride::whole_number("--session-timeout", "acp.session_timeout_secs", secs)
    });
    max.into_iter().chain(timeout).collect()
}

/// How serving ended: the sessions still in memory, and the signal that stopped it (if any).
struct Ended {
    sessions: usize,
    signal: Option<i32>,
}

/// Serves until end of input, SIGTERM or SIGINT; then the audit log's final anchor and
/// checkpoint are written (and the metrics file, if asked for).
async fn serve_stdio(config: Config, store: Option<Store>) -> anyhow::Result<Ended> {
    use tokio::signal::unix::{SignalKind, signal};
    let max_line_bytes = config.acp.max_line_bytes;
    crate::audit::init(&config);
    let server = Server::with_store(config, store);
    let connection = Arc::new(Connection::new(server.clone(), None, None));
    let serving = rpc::stdio::run_process_stdio(max_line_bytes, connection);
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let signal = tokio::select! {
        () = serving => None,
        _ = term.recv() => Some(libc::SIGTERM),
        _ = int.recv() => Some(libc::SIGINT),
    };
    if let Some(store) = &server.store {
        server.leases.release_all(store).await;
    }
    crate::audit::finish().await;
    Ok(Ended {
        sessions: server.sessions.len(),
        signal,
    })
}
