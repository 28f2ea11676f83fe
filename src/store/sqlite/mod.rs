//! The embedded SQLite backend: one connection owned by a dedicated thread ([`worker`]); every
//! operation is a closure sent there, so the executor never blocks on disk. [`schema`] opens the
//! file (WAL, busy timeout, foreign keys) and migrates it through `PRAGMA user_version`;
//! [`queries`] holds the SQL.

mod approvals;
mod client_meta;
mod files;
mod options;
mod queries;
mod schema;
mod worker;

use std::path::Path;

use futures::FutureExt;
use futures::future::BoxFuture;

use super::backend::Backend;
use super::client_meta::{ClientColumn, ClientSettings, ListQuery, ListedSession};
use super::files::SessionFile;
use super::lease::Request;
use super::{Fence, NewTurn, SessionRecord, SessionSummary, StoreError, StoredEntry, StoredTurn};

pub struct SqliteBackend {
    worker: worker::Worker,
}

impl SqliteBackend {
    pub fn open(path: &Path) -> Result<SqliteBackend, StoreError> {
        let conn = schema::open(path)?;
        Ok(SqliteBackend {
            worker: worker::Worker::spawn(conn)?,
        })
    }
}

type Answer<'a, T> = BoxFuture<'a, Result<T, StoreError>>;

impl Backend for SqliteBackend {
    fn create_session(&self, rec: SessionRecord) -> Answer<'_, ()> {
        self.worker
            .run(move |c| queries::create_session(c, &rec))
            .boxed()
    }

    fn get_session(&self, id: String) -> Answer<'_, Option<SessionRecord>> {
        self.worker
            .run(move |c| queries::get_session(c, &id))
            .boxed()
    }

    fn turns(&self, id: String) -> Answer<'_, Vec<StoredTurn>> {
        self.worker.run(move |c| queries::turns(c, &id)).boxed()
    }

    fn append_turn(&self, turn: NewTurn) -> Answer<'_, ()> {
        self.worker
            .run(move |c| queries::append_turn(c, &turn))
            .boxed()
    }

    fn touch(&self, id: String) -> Answer<'_, ()> {
        self.worker.run(move |c| queries::touch(c, &id)).boxed()
    }

    fn list_summaries(&self) -> Answer<'_, Vec<SessionSummary>> {
        self.worker.run(queries::list_summaries).boxed()
    }

    fn delete_session(&self, id: String) -> Answer<'_, bool> {
        self.worker
            .run(move |c| queries::delete_session(c, &id))
            .boxed()
    }

    fn import_session(
        &self,
        rec: SessionRecord,
        turns: Vec<StoredTurn>,
        files: Vec<SessionFile>,
    ) -> Answer<'_, ()> {
        self.worker
            .run(move |c| queries::import_session(c, &rec, &turns, &files))
            .boxed()
    }

    fn files(&self, id: String) -> Answer<'_, Vec<SessionFile>> {
        self.worker.run(move |c| files::list(c, &id)).boxed()
    }

    fn acquire_lease(&self, request: Request) -> Answer<'_, Fence> {
        self.worker
            .run(move |c| queries::acquire_lease(c, &request))
            .boxed()
    }

    fn renew_leases(&self, fences: Vec<Fence>, ttl_ms: i64) -> Answer<'_, Vec<Fence>> {
        self.worker
            .run(move |c| queries::renew_leases(c, &fences, ttl_ms))
            .boxed()
    }

    fn lease_holder(&self, session: String) -> Answer<'_, Option<String>> {
        self.worker
            .run(move |c| queries::lease_holder(c, &session))
            .boxed()
    }

    fn release_lease(&self, fence: Fence) -> Answer<'_, ()> {
        self.worker
            .run(move |c| queries::release_lease(c, &fence))
            .boxed()
    }

    fn list_owned(&self, query: ListQuery) -> Answer<'_, Vec<ListedSession>> {
        self.worker
            .run(move |c| client_meta::list_owned(c, &query))
            .boxed()
    }

    fn client_settings(&self, id: String) -> Answer<'_, Option<ClientSettings>> {
        self.worker
            .run(move |c| client_meta::client_settings(c, &id))
            .boxed()
    }

    fn set_client_column(&self, id: String, column: ClientColumn, value: String) -> Answer<'_, ()> {
        self.worker
            .run(move |c| client_meta::set_column(c, &id, column, &value))
            .boxed()
    }

    fn replace_history(&self, id: String, entries: Vec<StoredEntry>) -> Answer<'_, ()> {
        self.worker
            .run(move |c| client_meta::replace_history(c, &id, &entries))
            .boxed()
    }

    fn named_by_others(&self, id: String, needle: String) -> Answer<'_, bool> {
        self.worker
            .run(move |c| client_meta::named_by_others(c, &id, &needle))
            .boxed()
    }

    fn set_option(&self, id: String, option: String, value: String) -> Answer<'_, ()> {
        self.worker
            .run(move |c| options::set(c, &id, &option, &value))
            .boxed()
    }

    fn options(&self, id: String) -> Answer<'_, std::collections::BTreeMap<String, String>> {
        self.worker.run(move |c| options::get(c, &id)).boxed()
    }

    fn add_agent_approval(&self, agent: String, approval: String) -> Answer<'_, ()> {
        self.worker
            .run(move |c| approvals::add(c, &agent, &approval))
            .boxed()
    }

    fn agent_approvals(&self, agent: String) -> Answer<'_, Vec<String>> {
        self.worker.run(move |c| approvals::list(c, &agent)).boxed()
    }

    fn all_agent_approvals(&self) -> Answer<'_, Vec<(String, String)>> {
        self.worker.run(approvals::all).boxed()
    }
}
