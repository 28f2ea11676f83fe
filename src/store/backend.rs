//! The operations every store backend answers the same way; [`super::Store`] is a handle over
//! one of them.

use futures::future::BoxFuture;

use super::client_meta::{ClientColumn, ClientSettings, ListQuery, ListedSession};
use super::files::SessionFile;
use super::lease::Request;
use super::{Fence, NewTurn, SessionRecord, SessionSummary, StoreError, StoredEntry, StoredTurn};

type Answer<'a, T> = BoxFuture<'a, Result<T, StoreError>>;

/// A session store: SQLite ([`super::sqlite`]) or PostgreSQL ([`super::postgres`]).
///
/// Each method is one transaction. The backends share the semantics documented on
/// [`super::Store`]; the suite in `tests/cli/store_backends.rs` runs against both.
pub trait Backend: Send + Sync {
    fn create_session(&self, rec: SessionRecord) -> Answer<'_, ()>;
    fn get_session(&self, id: String) -> Answer<'_, Option<SessionRecord>>;
    fn turns(&self, id: String) -> Answer<'_, Vec<StoredTurn>>;
    fn append_turn(&self, turn: NewTurn) -> Answer<'_, ()>;
    fn touch(&self, id: String) -> Answer<'_, ()>;
    fn list_summaries(&self) -> Answer<'_, Vec<SessionSummary>>;
    fn delete_session(&self, id: String) -> Answer<'_, bool>;
    fn import_session(
        &self,
        rec: SessionRecord,
        turns: Vec<StoredTurn>,
        files: Vec<SessionFile>,
    ) -> Answer<'_, ()>;
    fn files(&self, id: String) -> Answer<'_, Vec<SessionFile>>;
    fn acquire_lease(&self, request: Request) -> Answer<'_, Fence>;
    fn renew_leases(&self, fences: Vec<Fence>, ttl_ms: i64) -> Answer<'_, Vec<Fence>>;
    fn release_lease(&self, fence: Fence) -> Answer<'_, ()>;
    fn lease_holder(&self, session: String) -> Answer<'_, Option<String>>;
    fn list_owned(&self, query: ListQuery) -> Answer<'_, Vec<ListedSession>>;
    fn client_settings(&self, id: String) -> Answer<'_, Option<ClientSettings>>;
    fn set_client_column(&self, id: String, column: ClientColumn, value: String) -> Answer<'_, ()>;
    fn replace_history(&self, id: String, entries: Vec<StoredEntry>) -> Answer<'_, ()>;
    fn named_by_others(&self, id: String, needle: String) -> Answer<'_, bool>;
    fn set_option(&self, id: String, option: String, value: String) -> Answer<'_, ()>;
    fn options(&self, id: String) -> Answer<'_, std::collections::BTreeMap<String, String>>;
    fn add_agent_approval(&self, agent: String, approval: String) -> Answer<'_, ()>;
    fn agent_approvals(&self, agent: String) -> Answer<'_, Vec<String>>;
    fn all_agent_approvals(&self) -> Answer<'_, Vec<(String, String)>>;
}
