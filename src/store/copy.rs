//! `zeroclaw store copy`: every session of one store, with its whole history and recorded
//! files, into another, and the agents' remembered "Always allow" answers.

use super::{Store, StoreError};

/// What a copy did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Copied {
    pub sessions: usize,
    pub turns: usize,
    pub entries: usize,
    pub files: usize,
    /// Agents' remembered answers (`agent_approvals` rows).
    pub approvals: usize,
}

/// Copies each session of `from` into `to` (one transaction per session), oldest first; a
/// session id already in `to` stops the copy with [`StoreError::SessionExists`], having copied
/// the ones before it. Then every agent's remembered answers (one already there is kept).
pub async fn copy_all(from: &Store, to: &Store) -> Result<Copied, StoreError> {
    let mut summaries = from.list_summaries().await?;
    summaries.reverse();
    let mut copied = Copied::default();
    for summary in summaries {
        let turns = from.turns(&summary.record.id).await?;
        copied.sessions += 1;
        copied.turns += turns.len();
        copied.entries += turns.iter().map(|t| t.entries.len()).sum::<usize>();
        let files = from.files(&summary.record.id).await?;
        copied.files += files.len();
        to.import_session(summary.record, turns, files).await?;
    }
    for (agent, approval) in from.all_agent_approvals().await? {
        to.add_agent_approval(&agent, &approval).await?;
        copied.approvals += 1;
    }
    Ok(copied)
}
