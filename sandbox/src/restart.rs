//! When a call whose setup failed is planned and started again. The host keeps changing while
//! a call is set up, and nothing of the call has run when its setup fails, so two failures
//! start it again with a plan made anew from the host as it is then, a bounded number of times
//! (the last error is returned). Owned here for both ways a call starts: the launcher's
//! (`Launcher::start`) and a single-threaded caller's (`Sandbox::run_foreground`).

use crate::error::{SandboxError, Stage};

/// How many times a call is planned again when the host changed under its plan before the
/// command ran ([`crate::SetupError::host_changed`]).
const REPLANS: u32 = 2;

/// How many times a call whose root vanished under bubblewrap is started again. bwrap checks
/// a source and binds it in two steps, so a directory another program removes and makes
/// again in a loop can fail several starts in a row (the churn test's 64 roots failed four
/// in a row once in about 200 calls); each start fails before anything of the call runs.
const VANISHED_ROOT_RETRIES: u32 = 8;

/// The starts one call has left.
#[derive(Debug)]
pub(crate) struct Restarts {
    replans: u32,
    vanished: u32,
}

impl Restarts {
    /// A call's budget, before its first start.
    pub(crate) fn new() -> Restarts {
        Restarts {
            replans: REPLANS,
            vanished: VANISHED_ROOT_RETRIES,
        }
    }

    /// Whether the start that failed with `e` is made again (planned anew), counting it:
    /// - a path the plan binds or pins was removed meanwhile ([`host_changed`]: a protected
    ///   path, which the new plan makes a placeholder for, or a writable root guarding one);
    /// - a source bubblewrap was binding was removed or replaced ([`a_read_root_vanished`]).
    pub(crate) fn again(&mut self, e: &SandboxError) -> bool {
        let left = if host_changed(e) {
            &mut self.replans
        } else if a_read_root_vanished(e) {
            &mut self.vanished
        } else {
            return false;
        };
        if *left == 0 {
            return false;
        }
        *left -= 1;
        tracing::debug!("the host changed while the sandbox was built; planning again: {e}");
        true
    }
}

/// Whether `e` says the host changed under the plan before anything of the call ran.
fn host_changed(e: &SandboxError) -> bool {
    matches!(e, SandboxError::Setup(setup) if setup.host_changed)
}

/// Whether bubblewrap failed because a source it was binding was removed (or removed and made
/// again) meanwhile: the path is gone, the kernel names the bind "… (deleted)", or the bind
/// itself failed (`Can't bind mount`, whatever the errno of the replaced path). bwrap fails
/// these before it runs anything of the call, so starting it again is safe.
fn a_read_root_vanished(e: &SandboxError) -> bool {
    matches!(e, SandboxError::Setup(setup)
        if setup.stage == Stage::Bubblewrap
            && setup.call.contains("bwrap: ")
            && (setup.call.contains("(deleted)\" in mount table")
                || setup.call.contains("No such file or directory")
                || setup.call.contains("Can't bind mount")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::SetupError;

    fn bwrap(says: &str) -> SandboxError {
        SetupError::new(Stage::Bubblewrap, format!("bwrap: {says}")).into()
    }

    #[test]
    fn a_changed_host_is_planned_again_twice_then_the_error_stands() {
        let changed: SandboxError = SetupError::new(Stage::Mounts, "mount")
            .host_changed()
            .into();
        let mut restarts = Restarts::new();
        assert!(restarts.again(&changed));
        assert!(restarts.again(&changed));
        assert!(!restarts.again(&changed), "a third replan");
        // The vanished-root budget is its own.
        assert!(restarts.again(&bwrap("Can't bind mount /x on /newroot/x")));
    }

    #[test]
    fn only_a_vanished_bubblewrap_source_or_a_changed_host_starts_again() {
        let mut restarts = Restarts::new();
        for _ in 0..VANISHED_ROOT_RETRIES {
            assert!(restarts.again(&bwrap(
                "Can't find source path /x: No such file or directory"
            )));
        }
        assert!(!restarts.again(&bwrap("Can't bind mount /x on /newroot/x")));
        let mut fresh = Restarts::new();
        assert!(!fresh.again(&bwrap(
            "Creating new namespace failed: Operation not permitted"
        )));
        assert!(!fresh.again(&SetupError::new(Stage::Mounts, "mount").into()));
        assert!(!fresh.again(&SandboxError::Profile("empty command".into())));
    }
}
