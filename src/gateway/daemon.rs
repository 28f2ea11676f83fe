//! `zeroclaw daemon`: loads the config, takes activated sockets (or binds the configured
//! ones), opens the store, self-tests the sandbox, says `READY=1`, and serves `/acp`,
//! `/health` (= `/livez`) and `/readyz` on every listener. SIGHUP reloads the config (a bad one
//! is logged and the old one kept); SIGTERM/SIGINT (or `--idle-exit`) drain: `/readyz` and new
//! `/acp` upgrades answer 503, connections stop reading, running turns finish within
//! `shutdown_grace_secs`, the rest are cancelled (persisted as cancelled); then the listeners
//! stop accepting and the daemon exits 0. The drain says on stderr what it waits for (or that
//! nothing runs and it exits at once) and waits on the turns and connections themselves, not
//! on a timer.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::routing::get;
use tokio::signal::unix::{SignalKind, signal};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::auth::{self, PeerInfo};
use super::listen::{self, Listener};
use super::{Gateway, health, metrics, systemd, ws};
use crate::acp::{Server, server};
use crate::config::Config;
use crate::store::Store;
use zeroclaw_sandbox::{Profile, Sandbox};

/// How long the drain waits for cancelled turns and closing connections after the grace.
const CLOSE_WAIT: Duration = Duration::from_secs(10);

/// Flags of `zeroclaw daemon`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct DaemonArgs {
    /// Configuration directory (default: $ZEROCLAW_CONFIG_DIR, else ~/.zeroclaw).
    #[arg(long)]
    pub config_dir: Option<PathBuf>,
    /// Exit (cleanly) after this many seconds with no connection and no running turn; for
    /// socket-activated setups, where systemd starts the daemon again on the next connection.
    #[arg(long, value_name = "SECS")]
    pub idle_exit: Option<u64>,
}

pub fn run(args: DaemonArgs) -> anyhow::Result<std::process::ExitCode> {
    let config = Config::load(args.config_dir.as_deref())?;
    let activated = systemd::take_activated()?;
    let mut listeners = if activated.is_empty() {
        listen::bind_all(&config.gateway.listen)?
    } else {
        activated
    };
    // Removed (each while still the socket bound here) on every way out of this function.
    let socket_files: Vec<_> = listeners
        .iter_mut()
        .filter_map(Listener::take_socket_file)
        .collect();
    let (runtime, store) = server::runtime_and_store(&config)?;
    let result = runtime.block_on(serve(config, store, listeners, args));
    drop(socket_files);
    runtime.shutdown_timeout(Duration::from_secs(1));
    result.map(|()| std::process::ExitCode::SUCCESS)
}

async fn serve(
    config: Config,
    store: Option<Store>,
    listeners: Vec<Listener>,
    args: DaemonArgs,
) -> anyhow::Result<()> {
    let backend = sandbox_self_test(&config).await?;
    let gateway_config = config.gateway.clone();
    let log = crate::audit::init(&config);
    let server = Server::with_store(config, store);
    if let Err(error) = log.opened().await {
        // Not fatal: `/readyz` stays 503 and tool calls fail (or, best_effort, run unrecorded).
        eprintln!("zeroclaw: the audit log is unusable: {error}");
        tracing::error!(%error, "the audit log is unusable");
    }
    let gateway = Arc::new(Gateway::new(server, &gateway_config, backend));
    let stop_accepting = CancellationToken::new();
    let mut serving = JoinSet::new();
    for listener in listeners {
        let address = listener.describe();
        spawn_listener(&mut serving, listener, router(&gateway), &stop_accepting)?;
        eprintln!("zeroclaw: listening on {address}");
        tracing::info!(%address, "listening");
    }
    systemd::ready();
    systemd::status(&status_line(&gateway));
    systemd::spawn_watchdog();
    let why = run_until_stopped(&gateway, args.config_dir.as_deref(), args.idle_exit).await?;
    systemd::stopping();
    // The listeners keep answering during the drain, so probes see `/readyz` go 503 (new
    // `/acp` upgrades get 503 too); they stop accepting once the turns are done.
    drain(&gateway, why, gateway_config.shutdown_grace_secs).await;
    stop_accepting.cancel();
    let _ = tokio::time::timeout(CLOSE_WAIT, async {
        while serving.join_next().await.is_some() {}
    })
    .await;
    if let Some(store) = &gateway.server.store {
        gateway.server.leases.release_all(store).await;
    }
    crate::audit::finish().await;
    Ok(())
}

pub(super) fn router(gateway: &Arc<Gateway>) -> Router {
    Router::new()
        .route("/acp", get(ws::acp))
        .route("/health", get(health::health))
        .route("/livez", get(health::health))
        .route("/readyz", get(health::readyz))
        .route("/metrics", get(metrics::metrics))
        .with_state(gateway.clone())
}

fn spawn_listener(
    serving: &mut JoinSet<()>,
    listener: Listener,
    app: Router,
    stop: &CancellationToken,
) -> anyhow::Result<()> {
    let stop = stop.clone().cancelled_owned();
    match listener {
        Listener::Tcp(std_listener) => {
            let listener =
                auth::NoDelayTcpListener(tokio::net::TcpListener::from_std(std_listener)?);
            let service = app.into_make_service_with_connect_info::<PeerInfo>();
            serving.spawn(async move {
                let served = axum::serve(listener, service).with_graceful_shutdown(stop);
                if let Err(error) = served.await {
                    tracing::error!(%error, "a TCP listener failed");
                }
            });
        }
        Listener::Unix { listener, .. } => {
            let listener = tokio::net::UnixListener::from_std(listener)?;
            let service = app.into_make_service_with_connect_info::<PeerInfo>();
            serving.spawn(async move {
                let served = axum::serve(listener, service).with_graceful_shutdown(stop);
                if let Err(error) = served.await {
                    tracing::error!(%error, "a Unix listener failed");
                }
            });
        }
    }
    Ok(())
}

/// Runs `true` confined with the configured backend under the workspace profile, so a daemon
/// that cannot confine tools never reports ready. Returns the backend in use.
async fn sandbox_self_test(config: &Config) -> anyhow::Result<String> {
    let choice = config.sandbox.backend;
    let sandbox = Sandbox::new(choice, config.sandbox.allow_partial)
        .map_err(|e| anyhow::anyhow!("sandbox self-test: backend `{choice}` unusable: {e}"))?;
    // A private empty workspace: `workspace_dir` lies inside a denied path by default (the
    // config directory, `~/.zeroclaw`), which the sandbox refuses as a writable root.
    let scratch = std::env::temp_dir().join(format!("zeroclaw-self-test-{}", std::process::id()));
    std::fs::create_dir(&scratch)
        .or_else(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => Ok(()),
            _ => Err(e),
        })
        .map_err(|e| anyhow::anyhow!("creating {}: {e}", scratch.display()))?;
    let profile = Profile::for_workspace(&scratch);
    let outcome = sandbox
        .run(&profile, ["true"], std::future::pending())
        .await;
    // Whole: a run in a directory without `.git` can leave the protected-path placeholders.
    let _ = std::fs::remove_dir_all(&scratch);
    let outcome = outcome
        .map_err(|e| anyhow::anyhow!("sandbox self-test: running `true` confined failed: {e}"))?;
    if outcome.shell_code() != 0 {
        anyhow::bail!(
            "sandbox self-test: `true` exited with {} under backend {}",
            outcome.shell_code(),
            sandbox.backend()
        );
    }
    tracing::info!(backend = %sandbox.backend(), "sandbox self-test passed");
    Ok(sandbox.backend().name().to_owned())
}

fn status_line(gateway: &Gateway) -> String {
    format!(
        "backend={} sessions={} busy={} connections={}",
        gateway.backend,
        gateway.server.sessions.len(),
        gateway.server.sessions.busy(),
        gateway.open_connections()
    )
}

/// Serves until SIGTERM/SIGINT, or until idle for `idle_exit` seconds (the answer says which);
/// SIGHUP reloads.
async fn run_until_stopped(
    gateway: &Gateway,
    config_dir: Option<&Path>,
    idle_exit: Option<u64>,
) -> anyhow::Result<&'static str> {
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let mut hup = signal(SignalKind::hangup())?;
    let mut ticks = tokio::time::interval(Duration::from_secs(1));
    let mut idle_since = Instant::now();
    let mut last_status = status_line(gateway);
    loop {
        tokio::select! {
            _ = term.recv() => return Ok("SIGTERM"),
            _ = int.recv() => return Ok("SIGINT"),
            _ = hup.recv() => reload(gateway, config_dir).await,
            _ = ticks.tick() => {
                let status = status_line(gateway);
                if status != last_status {
                    systemd::status(&status);
                    last_status = status;
                }
                if gateway.open_connections() > 0 || gateway.server.sessions.busy() > 0 {
                    idle_since = Instant::now();
                }
                if idle_exit.is_some_and(|secs| idle_since.elapsed() >= Duration::from_secs(secs)) {
                    return Ok("idle past --idle-exit");
                }
            }
        }
    }
}

/// Re-reads the config: agents, providers and admission policy change for what starts next;
/// listeners, limits and the store stay. A bad config is logged and the old one kept. Either
/// way a `config.reload` audit record says so (with the names of the changed sections).
async fn reload(gateway: &Gateway, config_dir: Option<&Path>) {
    match Config::load(config_dir) {
        Ok(config) => {
            let old = gateway.server.config();
            crate::audit::note(crate::audit::reload::applied(&old, &config)).await;
            if config.gateway.listen != old.gateway.listen {
                tracing::warn!("gateway.listen changed: restart the daemon to apply it");
            }
            if config.audit != old.audit {
                tracing::warn!("[audit] changed: restart the daemon to apply it");
            }
            gateway.set_policy(&config.gateway);
            gateway.server.reload(config);
            eprintln!("zeroclaw: configuration reloaded");
            systemd::status(&format!("reloaded; {}", status_line(gateway)));
        }
        Err(error) => {
            crate::audit::note(crate::audit::reload::rejected()).await;
            eprintln!("zeroclaw: reload failed, keeping the previous configuration: {error}");
            tracing::error!(%error, "reload failed; keeping the previous configuration");
        }
    }
}

/// Says what the drain waits for (on stderr, whatever the log filter, and in the log), stops
/// every connection's reader, waits up to `grace_secs` for running turns, cancels what is left
/// and waits for those turns to be persisted and the connections to close.
async fn drain(gateway: &Gateway, why: &str, grace_secs: u64) {
    let sessions = &gateway.server.sessions;
    let running = sessions.busy();
    let connections = gateway.open_connections();
    let plan = match (running, connections) {
        (0, 0) => "nothing running, exiting now".to_owned(),
        (0, n) => format!("no turn running; closing {n} open connection(s)"),
        (t, n) => format!(
            "waiting up to {grace_secs}s (shutdown_grace_secs) for {t} running turn(s) to finish, then cancelling them; {n} open connection(s)"
        ),
    };
    eprintln!("zeroclaw: {why}: {plan}");
    tracing::info!(running, connections, "{why}: {plan}");
    gateway.closing.cancel();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(grace_secs);
    let finished = async {
        for session in sessions.all() {
            session.wait_idle().await;
        }
    };
    let _ = tokio::time::timeout_at(deadline, finished).await;
    let running = sessions.busy();
    if running > 0 {
        tracing::warn!(running, "grace period over: cancelling the running turns");
        for session in sessions.all() {
            session.cancel_turn();
        }
    }
    let closed = async {
        for session in sessions.all() {
            session.wait_idle().await;
        }
        gateway.connections_closed().await;
    };
    if tokio::time::timeout(CLOSE_WAIT, closed).await.is_err() {
        tracing::warn!("connections still open after the drain; exiting anyway");
    }
}
