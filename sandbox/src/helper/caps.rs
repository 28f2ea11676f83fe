//! Drops every capability: bounding and ambient sets first (they need CAP_SETPCAP), then
//! inheritable, permitted and effective, so even root (or root in the user namespace) execs
//! with nothing.

use caps::CapSet;

use crate::error::{SetupError, Stage};

/// Empties all five capability sets.
pub fn drop_all() -> Result<(), SetupError> {
    let fail = |what: &str, e: caps::errors::CapsError| {
        SetupError::new(Stage::Capabilities, format!("{what}: {e}"))
    };
    if caps::has_cap(None, CapSet::Effective, caps::Capability::CAP_SETPCAP).unwrap_or(false) {
        // One PR_CAPBSET_DROP each (clearing reads every one first); a drop that fails only
        // matters for a capability this kernel knows and still has in the set.
        for cap in caps::all() {
            if let Err(e) = caps::drop(None, CapSet::Bounding, cap)
                && caps::has_cap(None, CapSet::Bounding, cap).unwrap_or(false)
            {
                return Err(fail("clear bounding set", e));
            }
        }
    }
    caps::clear(None, CapSet::Ambient).map_err(|e| fail("clear ambient set", e))?;
    for set in [CapSet::Inheritable, CapSet::Effective, CapSet::Permitted] {
        caps::clear(None, set).map_err(|e| fail("clear capability set", e))?;
    }
    let left = caps::read(None, CapSet::Permitted).map_err(|e| fail("read permitted set", e))?;
    if !left.is_empty() {
        return Err(SetupError::new(
            Stage::Capabilities,
            format!("capabilities left: {left:?}"),
        ));
    }
    Ok(())
}
