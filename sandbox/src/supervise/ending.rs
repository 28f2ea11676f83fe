//! The error of a call whose helper ended before confining the command.

use std::path::Path;

use crate::error::HelperNames;
use crate::error::{SandboxError, SetupError};
use crate::wire::ExitInfo;

/// "The helper ended before confining the command", with what is known of it.
///
/// `names`: the stage and hints the backend gives its helper; `status`: the helper's, if
/// known; `helper`: its path; `stderr`: what it wrote there, quoted when the driver has it
/// (else the caller has seen it already).
pub(super) fn helper_gone(
    names: HelperNames,
    status: Option<ExitInfo>,
    helper: Option<&Path>,
    stderr: Option<&str>,
) -> SandboxError {
    let how = match status {
        Some(info) => format!("{info:?}"),
        None => "without a word".to_string(),
    };
    let hint = match stderr {
        Some(_) => names.quoted,
        None => names.printed,
    };
    let helper = helper
        .map(|p| format!(" {}", p.display()))
        .unwrap_or_default();
    let quoted = stderr.map(|t| format!(": {t}")).unwrap_or_default();
    SetupError::new(
        names.stage,
        format!("the helper{helper} ended ({how}) before confining the command{quoted}"),
    )
    .hint(hint)
    .into()
}
