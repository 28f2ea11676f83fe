//! Errors: a [`SetupError`] names the helper [`Stage`] that failed (it travels from the helper to
//! the launcher over a pipe), a [`SandboxError`] is what the launcher's callers see, and
//! [`HelperNames`] how a helper gone before confining its command is named.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::backend::{Backend, BackendChoice};

/// One step of confining a child, in the order the helper performs them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Stage {
    /// Spawning the helper process itself.
    Spawn,
    /// Reading the plan from the launcher.
    Plan,
    /// Parent-death signal.
    DieWithParent,
    /// New session (no controlling terminal).
    Session,
    /// Placeholders for protected paths that do not exist yet.
    Placeholders,
    /// Private scratch directories (HOME, TMPDIR) on the Landlock-only backend.
    Scratch,
    /// Per-execution cgroups (process count, memory).
    Cgroup,
    /// User, mount, pid, net, ipc and uts namespaces; uid/gid maps.
    Namespaces,
    /// The new root built from bind mounts.
    Mounts,
    /// The pid namespace's init process.
    Init,
    /// Starting bubblewrap.
    Bubblewrap,
    /// Resource limits.
    Rlimits,
    /// Changing to the working directory.
    Chdir,
    /// Closing inherited file descriptors.
    CloseFds,
    /// Dropping every capability (effective, permitted, inheritable, ambient, bounding).
    Capabilities,
    /// `PR_SET_NO_NEW_PRIVS`.
    NoNewPrivs,
    /// Landlock ruleset.
    Landlock,
    /// Seccomp filter.
    Seccomp,
    /// Finding or executing the command.
    Exec,
}

impl Stage {
    /// The stage's name as written in errors and reports.
    pub fn name(self) -> &'static str {
        match self {
            Stage::Spawn => "spawn",
            Stage::Plan => "plan",
            Stage::DieWithParent => "die_with_parent",
            Stage::Session => "session",
            Stage::Placeholders => "placeholders",
            Stage::Scratch => "scratch",
            Stage::Cgroup => "cgroup",
            Stage::Namespaces => "namespaces",
            Stage::Mounts => "mounts",
            Stage::Init => "init",
            Stage::Bubblewrap => "bubblewrap",
            Stage::Rlimits => "rlimits",
            Stage::Chdir => "chdir",
            Stage::CloseFds => "close_fds",
            Stage::Capabilities => "capabilities",
            Stage::NoNewPrivs => "no_new_privs",
            Stage::Landlock => "landlock",
            Stage::Seccomp => "seccomp",
            Stage::Exec => "exec",
        }
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A confinement step failed: which one, the failing call, the OS error, how to fix it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("sandbox setup failed at stage {stage}: {call}{}{}", errno_text(*.errno), hint_text(.hint))]
pub struct SetupError {
    /// The stage that failed.
    pub stage: Stage,
    /// The failing call with its arguments, e.g. `mount(/usr -> /usr, bind)`.
    pub call: String,
    /// The OS error number, when a syscall failed.
    pub errno: Option<i32>,
    /// What is missing and how to fix it (may be empty).
    pub hint: String,
    /// The host changed under the plan before anything of the call ran (a path it binds or
    /// pins was removed meanwhile): planning the call again, from the host as it is now,
    /// may succeed ([`SetupError::host_changed`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub host_changed: bool,
}

fn errno_text(errno: Option<i32>) -> String {
    match errno {
        Some(e) => format!(": {}", std::io::Error::from_raw_os_error(e)),
        None => String::new(),
    }
}

fn hint_text(hint: &str) -> String {
    if hint.is_empty() {
        String::new()
    } else {
        format!(" (fix: {hint})")
    }
}

impl SetupError {
    /// A failure without an OS error.
    pub fn new(stage: Stage, call: impl Into<String>) -> Self {
        SetupError {
            stage,
            call: call.into(),
            errno: None,
            hint: String::new(),
            host_changed: false,
        }
    }

    /// A failure of a call that set `errno`.
    pub fn os(stage: Stage, call: impl Into<String>, err: &std::io::Error) -> Self {
        SetupError {
            errno: err.raw_os_error(),
            ..SetupError::new(stage, call)
        }
    }

    /// Adds how to fix it.
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = hint.into();
        self
    }

    /// Marks a failure caused by the host changing under the plan before the command ran:
    /// the call is planned and started again (`crate::restart`).
    pub fn host_changed(mut self) -> Self {
        self.host_changed = true;
        self
    }
}

/// Everything the launcher can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SandboxError {
    /// The requested backend cannot be used here.
    #[error("sandbox backend {requested} is unavailable: {reason}")]
    Unavailable {
        /// What was asked for.
        requested: BackendChoice,
        /// Why it cannot be used and how to fix it.
        reason: String,
    },
    /// The backend exists but enforces less than asked (old Landlock ABI), and partial
    /// enforcement was not allowed.
    #[error(
        "sandbox backend {backend} would be only partially enforced: {reason} (set allow_partial = true to accept)"
    )]
    Partial {
        /// The backend.
        backend: Backend,
        /// What is missing.
        reason: String,
    },
    /// The profile cannot be applied (e.g. the workspace does not exist).
    #[error("invalid sandbox profile: {0}")]
    Profile(String),
    /// The helper reported a failed stage.
    #[error(transparent)]
    Setup(#[from] SetupError),
    /// Talking to the helper failed.
    #[error("sandbox helper i/o: {0}")]
    Io(#[from] std::io::Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setup_error_message_names_stage_call_errno_and_fix() {
        let e = SetupError::os(
            Stage::Namespaces,
            "unshare(CLONE_NEWUSER)",
            &std::io::Error::from_raw_os_error(libc::EPERM),
        )
        .hint("enable unprivileged user namespaces");
        let text = e.to_string();
        assert!(text.contains("stage namespaces"), "{text}");
        assert!(text.contains("unshare(CLONE_NEWUSER)"), "{text}");
        assert!(text.contains("not permitted"), "{text}");
        assert!(text.contains("fix: enable"), "{text}");
    }

    #[test]
    fn setup_error_round_trips_through_json() {
        let e = SetupError::new(Stage::Exec, "execve(nope)").hint("install it");
        let back: SetupError = serde_json::from_str(&serde_json::to_string(&e).unwrap()).unwrap();
        assert_eq!(back, e);
    }

    #[test]
    fn sandbox_error_nests_setup_error() {
        let e: SandboxError = SetupError::new(Stage::Landlock, "x").into();
        assert!(matches!(
            e,
            SandboxError::Setup(SetupError {
                stage: Stage::Landlock,
                ..
            })
        ));
    }
}

/// How the error of a helper gone before confining the command names it: its stage, and
/// where its own words are ([`HelperNames::of`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HelperNames {
    /// The stage the error names.
    pub(crate) stage: Stage,
    /// The hint when the helper's stderr is quoted in the error.
    pub(crate) quoted: &'static str,
    /// The hint when the caller has seen its stderr already.
    pub(crate) printed: &'static str,
}

impl HelperNames {
    /// How `backend`'s helper is named when it ends before confining the command: on
    /// bubblewrap the stage is bwrap's, and its message is bwrap's own.
    pub(crate) fn of(backend: Backend) -> HelperNames {
        // Quoted: the helper's stderr, or bwrap's own when bwrap could not start it.
        const QUOTED: &str = "a helper binary must call zeroclaw_sandbox::helper::run_if_helper() \
                              first in main; for bubblewrap, its message is quoted above";
        match backend {
            Backend::Bubblewrap => HelperNames {
                stage: Stage::Bubblewrap,
                quoted: QUOTED,
                printed: "bubblewrap's own message is printed above",
            },
            _ => HelperNames {
                stage: Stage::Spawn,
                quoted: QUOTED,
                printed: "the helper's stderr is printed above",
            },
        }
    }
}
