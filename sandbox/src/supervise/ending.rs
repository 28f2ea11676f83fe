//! The error of a call whose helper ended before confining the command.

use std::path::Path;

use crate::error::{SandboxError, SetupError, Stage};
use crate::wire::ExitInfo;

/// "The helper ended before confining the command", with what is known of it.
///
/// `bubblewrap`: name bubblewrap's stage; `status`: the helper's, if known; `helper`: its
/// path; `stderr`: what it wrote there, quoted when the driver has it (else the caller has
/// seen it already).
pub(super) fn helper_gone(
    bubblewrap: bool,
    status: Option<ExitInfo>,
    helper: Option<&Path>,
    stderr: Option<&str>,
) -> SandboxError {
    let how = match status {
        Some(info) => format!("{info:?}"),
        None => "without a word".to_string(),
    };
    let stage = if bubblewrap {
        Stage::Bubblewrap
    } else {
        Stage::Spawn
    };
    let hint = match (stderr.is_some(), bubblewrap) {
        (true, _) => {
            "a helper binary must call zeroclaw_sandbox::helper::run_if_helper() first in main; \
             for bubblewrap, its message is quoted above"
        }
        (false, true) => "bubblewrap's own message is printed above",
        (false, false) => "the helper's stderr is printed above",
    };
    let helper = helper
        .map(|p| format!(" {}", p.display()))
        .unwrap_or_default();
    let quoted = stderr.map(|t| format!(": {t}")).unwrap_or_default();
    SetupError::new(
        stage,
        format!("the helper{helper} ended ({how}) before confining the command{quoted}"),
    )
    .hint(hint)
    .into()
}
