//! What a client sets on a stored session — its title and its autonomy mode — and the
//! per-principal listing behind `session/list`: keyset pages, most recent activity first,
//! optionally only one working directory. Also whether any other session's history contains
//! a given text (which uploads deleting a session may remove).

use std::path::PathBuf;

use super::{Store, StoreError, StoredEntry};

/// One row of a listing.
#[derive(Debug, Clone, PartialEq)]
pub struct ListedSession {
    pub id: String,
    pub workspace_dir: PathBuf,
    pub title: Option<String>,
    /// Unix time in milliseconds.
    pub last_activity: i64,
}

/// Which sessions a listing returns.
#[derive(Debug, Clone)]
pub struct ListQuery {
    /// Sessions stored with this owner...
    pub owner: String,
    /// ...and, when set, those stored without one.
    pub include_unowned: bool,
    /// Only sessions of this working directory (compared as stored: canonical).
    pub cwd: Option<PathBuf>,
    /// Only sessions after this `(last_activity, id)` in the listing order.
    pub after: Option<(i64, String)>,
    pub limit: usize,
}

/// A session's client-set values.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClientSettings {
    pub title: Option<String>,
    pub mode: Option<String>,
}

impl Store {
    /// A page of the sessions `query` selects, most recently active first (ties by id).
    pub async fn list_owned(&self, query: ListQuery) -> Result<Vec<ListedSession>, StoreError> {
        self.backend.list_owned(query).await
    }

    /// The session's title and mode; `None` when the session is not stored.
    pub async fn client_settings(&self, id: &str) -> Result<Option<ClientSettings>, StoreError> {
        self.backend.client_settings(id.to_owned()).await
    }

    /// Sets the session's title; a missing session is [`StoreError::SessionNotFound`].
    pub async fn set_title(&self, id: &str, title: &str) -> Result<(), StoreError> {
        let column = ClientColumn::Title;
        self.backend
            .set_client_column(id.to_owned(), column, title.to_owned())
            .await
    }

    /// Sets the session's autonomy mode; a missing session is [`StoreError::SessionNotFound`].
    pub async fn set_mode(&self, id: &str, mode: &str) -> Result<(), StoreError> {
        let column = ClientColumn::Mode;
        self.backend
            .set_client_column(id.to_owned(), column, mode.to_owned())
            .await
    }

    /// One transaction: the session's whole history becomes `entries`, as its only turn
    /// (a compacted history); `last_activity` is updated.
    pub async fn replace_history(
        &self,
        id: &str,
        entries: Vec<StoredEntry>,
    ) -> Result<(), StoreError> {
        self.backend.replace_history(id.to_owned(), entries).await
    }

    /// Whether the stored history of any session but `id` contains `needle` (exactly, as a
    /// substring of an entry's JSON).
    pub async fn named_by_others(&self, id: &str, needle: &str) -> Result<bool, StoreError> {
        self.backend
            .named_by_others(id.to_owned(), needle.to_owned())
            .await
    }
}

/// A session column a client sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientColumn {
    Title,
    Mode,
}

impl ClientColumn {
    /// The column's name (a fixed identifier, never client text).
    pub fn name(self) -> &'static str {
        match self {
            ClientColumn::Title => "title",
            ClientColumn::Mode => "mode",
        }
    }
}
