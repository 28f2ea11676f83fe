//! Writes the per-user kernel counts ([`UserLimits`], see [`crate::host::user_counts`]) in the
//! child's user namespace: the namespace backend's init and the bubblewrap backend's inner
//! stage.

use crate::error::{SetupError, Stage};
use crate::host::user_counts::DIR;
pub(crate) use crate::host::user_counts::UserLimits;

impl UserLimits {
    /// Writes the maxima in the caller's user namespace (it needs `CAP_SYS_RESOURCE` there).
    /// Never in the host's: there it would lower the host's own limits.
    pub fn apply(&self) -> Result<(), SetupError> {
        if self.0.is_empty() {
            return Ok(());
        }
        if in_initial_user_namespace() {
            return Err(SetupError::new(
                Stage::Namespaces,
                "per-user limits: not in a user namespace of our own",
            ));
        }
        for (name, value) in &self.0 {
            let path = format!("{DIR}/{name}");
            std::fs::write(&path, value.to_string()).map_err(|e| {
                SetupError::os(Stage::Namespaces, format!("write({path}, {value})"), &e)
            })?;
        }
        Ok(())
    }
}

/// Whether we are in the host's user namespace: its id map is the whole range, as no child
/// namespace's can be (ours map one id, or fail to read: then assume the host's).
fn in_initial_user_namespace() -> bool {
    std::fs::read_to_string("/proc/self/uid_map").map_or(true, |map| {
        map.split_whitespace().collect::<Vec<_>>() == ["0", "0", "4294967295"]
    })
}
