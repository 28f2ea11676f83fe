//! The PostgreSQL backend: a pool of connections (deadpool-postgres over tokio-postgres, TLS by
//! rustls) shared by a daemon's sessions, so several daemons can serve one set of sessions.
//!
//! [`schema`] migrates the database under an advisory lock (two daemons starting at once
//! migrate it once); [`queries`] holds the SQL, the same semantics as the SQLite backend's.
//! Without `sslmode` in the URL, a host that is not loopback or a Unix socket requires TLS: a
//! store reached over a network never silently falls back to plain text.

mod approvals;
mod files;
mod meta;
mod queries;
mod schema;
mod tls;

use futures::FutureExt;
use futures::future::BoxFuture;

use super::backend::Backend;
use super::client_meta::{ClientColumn, ClientSettings, ListQuery, ListedSession};
use super::files::SessionFile;
use super::lease::Request;
use super::{Fence, NewTurn, SessionRecord, SessionSummary, StoreError, StoredEntry, StoredTurn};

pub struct PgBackend {
    pool: deadpool_postgres::Pool,
}

impl PgBackend {
    /// [`PgBackend::connect_async`] on a private runtime, for callers outside one.
    pub fn connect(url: &str, pool_size: usize) -> Result<PgBackend, StoreError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| connect_error(url, e.to_string()))?;
        runtime.block_on(PgBackend::connect_async(url, pool_size))
    }

    /// Checks the URL, migrates the database over one connection, and builds the pool (its
    /// connections are made on first use, on the runtime that uses them).
    pub async fn connect_async(url: &str, pool_size: usize) -> Result<PgBackend, StoreError> {
        let connect_err = |message: String| connect_error(url, message);
        let (config, tls) = tls::client_config(url).map_err(connect_err)?;
        schema::migrate(&config, tls.clone())
            .await
            .map_err(|e| connect_err(e.to_string()))?;
        let manager = deadpool_postgres::Manager::from_config(
            config,
            tls,
            deadpool_postgres::ManagerConfig {
                recycling_method: deadpool_postgres::RecyclingMethod::Fast,
            },
        );
        let pool = deadpool_postgres::Pool::builder(manager)
            .max_size(pool_size)
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .create_timeout(Some(std::time::Duration::from_secs(10)))
            .wait_timeout(Some(std::time::Duration::from_secs(30)))
            .build()
            .map_err(|e| connect_err(e.to_string()))?;
        Ok(PgBackend { pool })
    }

    async fn client(&self) -> Result<deadpool_postgres::Object, StoreError> {
        self.pool
            .get()
            .await
            .map_err(|e| StoreError::Postgres(e.to_string()))
    }
}

/// One plain connection to the database at `url` (migrated first, TLS as for the pool), its
/// connection task spawned on the calling runtime: for the audit log's writer, which appends
/// one record at a time on its own thread.
pub async fn connect_client(url: &str) -> Result<tokio_postgres::Client, StoreError> {
    let connect_err = |message: String| connect_error(url, message);
    let (config, tls) = tls::client_config(url).map_err(connect_err)?;
    schema::migrate(&config, tls.clone())
        .await
        .map_err(|e| connect_err(e.to_string()))?;
    let (client, connection) = config
        .connect(tls)
        .await
        .map_err(|e| connect_err(pg_error(e).to_string()))?;
    tokio::spawn(connection);
    Ok(client)
}

fn connect_error(url: &str, message: String) -> StoreError {
    StoreError::Connect {
        location: super::Location::Postgres(url.to_owned()).to_string(),
        message,
    }
}

/// A PostgreSQL error with the server's message (tokio-postgres's own `Display` says only
/// "db error").
pub(crate) fn pg_error(e: tokio_postgres::Error) -> StoreError {
    StoreError::Postgres(pg_message(&e))
}

/// The text of a PostgreSQL error: the server's severity and message, or the client's error
/// with its cause.
pub fn pg_message(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{}: {}", db.severity(), db.message()),
        None => match std::error::Error::source(e) {
            Some(source) => format!("{e}: {source}"),
            None => e.to_string(),
        },
    }
}

type Answer<'a, T> = BoxFuture<'a, Result<T, StoreError>>;

impl Backend for PgBackend {
    fn create_session(&self, rec: SessionRecord) -> Answer<'_, ()> {
        async move { queries::create_session(&**self.client().await?, &rec).await }.boxed()
    }

    fn get_session(&self, id: String) -> Answer<'_, Option<SessionRecord>> {
        async move { queries::get_session(&**self.client().await?, &id).await }.boxed()
    }

    fn turns(&self, id: String) -> Answer<'_, Vec<StoredTurn>> {
        async move { queries::turns(&**self.client().await?, &id).await }.boxed()
    }

    fn append_turn(&self, turn: NewTurn) -> Answer<'_, ()> {
        async move { queries::append_turn(&mut self.client().await?, &turn).await }.boxed()
    }

    fn touch(&self, id: String) -> Answer<'_, ()> {
        async move { queries::touch(&**self.client().await?, &id).await }.boxed()
    }

    fn list_summaries(&self) -> Answer<'_, Vec<SessionSummary>> {
        async move { queries::list_summaries(&**self.client().await?).await }.boxed()
    }

    fn delete_session(&self, id: String) -> Answer<'_, bool> {
        async move { queries::delete_session(&**self.client().await?, &id).await }.boxed()
    }

    fn import_session(
        &self,
        rec: SessionRecord,
        turns: Vec<StoredTurn>,
        files: Vec<SessionFile>,
    ) -> Answer<'_, ()> {
        async move {
            queries::import_session(&mut self.client().await?, &rec, &turns, &files).await
        }
        .boxed()
    }

    fn files(&self, id: String) -> Answer<'_, Vec<SessionFile>> {
        async move { files::list(&**self.client().await?, &id).await }.boxed()
    }

    fn acquire_lease(&self, request: Request) -> Answer<'_, Fence> {
        async move { queries::acquire_lease(&mut self.client().await?, &request).await }.boxed()
    }

    fn renew_leases(&self, fences: Vec<Fence>, ttl_ms: i64) -> Answer<'_, Vec<Fence>> {
        async move { queries::renew_leases(&mut self.client().await?, &fences, ttl_ms).await }
            .boxed()
    }

    fn lease_holder(&self, session: String) -> Answer<'_, Option<String>> {
        async move { queries::lease_holder(&**self.client().await?, &session).await }.boxed()
    }

    fn release_lease(&self, fence: Fence) -> Answer<'_, ()> {
        async move { queries::release_lease(&**self.client().await?, &fence).await }.boxed()
    }

    fn list_owned(&self, query: ListQuery) -> Answer<'_, Vec<ListedSession>> {
        async move { meta::list_owned(&**self.client().await?, &query).await }.boxed()
    }

    fn client_settings(&self, id: String) -> Answer<'_, Option<ClientSettings>> {
        async move { meta::client_settings(&**self.client().await?, &id).await }.boxed()
    }

    fn set_client_column(&self, id: String, column: ClientColumn, value: String) -> Answer<'_, ()> {
        async move { meta::set_column(&**self.client().await?, &id, column, &value).await }.boxed()
    }

    fn replace_history(&self, id: String, entries: Vec<StoredEntry>) -> Answer<'_, ()> {
        async move { meta::replace_history(&mut self.client().await?, &id, &entries).await }.boxed()
    }

    fn named_by_others(&self, id: String, needle: String) -> Answer<'_, bool> {
        async move { meta::named_by_others(&**self.client().await?, &id, &needle).await }.boxed()
    }

    fn set_option(&self, id: String, option: String, value: String) -> Answer<'_, ()> {
        async move { meta::set_option(&**self.client().await?, &id, &option, &value).await }.boxed()
    }

    fn options(&self, id: String) -> Answer<'_, std::collections::BTreeMap<String, String>> {
        async move { meta::options(&**self.client().await?, &id).await }.boxed()
    }

    fn add_agent_approval(&self, agent: String, approval: String) -> Answer<'_, ()> {
        async move { approvals::add(&**self.client().await?, &agent, &approval).await }.boxed()
    }

    fn agent_approvals(&self, agent: String) -> Answer<'_, Vec<String>> {
        async move { approvals::list(&**self.client().await?, &agent).await }.boxed()
    }

    fn all_agent_approvals(&self) -> Answer<'_, Vec<(String, String)>> {
        async move { approvals::all(&**self.client().await?).await }.boxed()
    }
}
