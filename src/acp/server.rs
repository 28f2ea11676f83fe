//! State shared by every ACP connection of the process: the config (replaced as a whole by a
//! daemon reload), the store (or none when it could not be opened), the active sessions, the
//! providers built so far, the tools, the agents' remembered approvals.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use crate::config::Config;
use crate::provider::{self, Provider, ProviderError};
use crate::store::{Location, Store};
use crate::tools::ToolRegistry;

use super::sessions::Sessions;

pub struct Server {
    /// Read through [`Server::config`]; a reload swaps it for the turns that start afterwards.
    config: RwLock<Arc<Config>>,
    /// `None`: running in memory; load/resume/close are unavailable.
    pub store: Option<Store>,
    pub sessions: Arc<Sessions>,
    pub tools: ToolRegistry,
    /// The default `cwd` of new sessions.
    pub launch_dir: PathBuf,
    providers: Mutex<HashMap<String, Arc<dyn Provider>>>,
    /// The leases this process holds on the sessions it runs.
    pub leases: Arc<super::lease::Leases>,
    /// The agents' "Always allow" answers seen by this process ([`crate::approval::agent`]).
    pub approvals: Arc<crate::approval::agent::ApprovalBook>,
}

impl Server {
    /// Opens the store (falling back to memory) and starts the idle reaper. Must run inside a
    /// Tokio runtime.
    pub fn start(config: Config) -> Arc<Server> {
        let store =
            open_store(&config.store_location(), config.store.pool_size).unwrap_or_else(|error| {
                eprintln!("zeroclaw: running in memory: {error:#}");
                None
            });
        Self::with_store(config, store)
    }

    pub fn with_store(config: Config, store: Option<Store>) -> Arc<Server> {
        let sessions = Arc::new(Sessions::new(
            config.acp.max_sessions,
            Duration::from_secs(config.acp.session_timeout_secs),
        ));
        sessions.spawn_reaper();
        let launch_dir = std::env::current_dir()
            .and_then(|d| d.canonicalize())
            .unwrap_or_else(|_| PathBuf::from("/"));
        let leases = Arc::new(super::lease::Leases::new(Duration::from_secs(
            config.store.lease_secs,
        )));
        let server = Arc::new(Server {
            config: RwLock::new(Arc::new(config)),
            store,
            sessions,
            tools: ToolRegistry::builtin(),
            launch_dir,
            providers: Mutex::default(),
            leases,
            approvals: Arc::default(),
        });
        super::lease::Leases::spawn_renewal(&server.leases, server.store.clone(), &server.sessions);
        server
    }

    /// The configuration as of now.
    pub fn config(&self) -> Arc<Config> {
        self.config
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Replaces agents, providers and policy for what starts from now on (running turns keep
    /// what they started with); providers are rebuilt on next use. The session limits stay.
    pub fn reload(&self, config: Config) {
        let mut providers = self.providers.lock().unwrap_or_else(|e| e.into_inner());
        *self.config.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(config);
        providers.clear();
    }

    /// The provider named in the config, built once and shared.
    pub fn provider(&self, name: &str) -> Result<Arc<dyn Provider>, ProviderError> {
        let config = self.config();
        let mut providers = self.providers.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(provider) = providers.get(name) {
            return Ok(provider.clone());
        }
        let provider = provider::build(&config, name)?;
        providers.insert(name.to_owned(), provider.clone());
        Ok(provider)
    }
}

/// The multi-threaded runtime and the configured store (see [`open_store`]), opened on a
/// thread while the runtime is built: cold start is a product figure.
pub fn runtime_and_store(
    config: &Config,
) -> anyhow::Result<(tokio::runtime::Runtime, Option<Store>)> {
    let location = config.store_location();
    let pool_size = config.store.pool_size;
    let opening = std::thread::spawn(move || open_store(&location, pool_size));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let store = opening
        .join()
        .map_err(|_| anyhow::anyhow!("opening the session store panicked"))??;
    Ok((runtime, store))
}

/// The store at `location`. A SQLite file that cannot be opened leaves the process running in
/// memory, with a notice on stderr (whatever the log filter says); a PostgreSQL store that
/// cannot be reached is an error: a daemon configured to share sessions never runs without.
pub fn open_store(location: &Location, pool_size: usize) -> anyhow::Result<Option<Store>> {
    match Store::open_location(location, pool_size) {
        Ok(store) => Ok(Some(store)),
        Err(error) if matches!(location, Location::Postgres(_)) => Err(error.into()),
        Err(error) => {
            eprintln!("zeroclaw: running in memory: sessions will not survive a restart: {error}");
            Ok(None)
        }
    }
}
