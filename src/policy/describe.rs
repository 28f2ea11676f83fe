//! What a session's tool children may read, write and reach, in words, for `/sandbox` and
//! `zeroclaw doctor`: derived from the policy (level, allowed roots, `full_host_writes`,
//! network) and the rung that runs them, with what that rung or level does not enforce. The
//! sandbox crate's own guarantee lines about reads, writes and the network describe its
//! default (supervised) profile; [`replaces`] names them so both outputs show these instead.

use std::path::Path;

use zeroclaw_sandbox::Backend;

use super::{Policy, reach};
use crate::config::AutonomyLevel;

/// Whether the sandbox report's guarantee `what` is one of the lines [`lines`] replaces
/// (reads, writes and the network are the session's, not the default profile's).
pub fn replaces(what: &str) -> bool {
    ["reads limited", "writes limited", "no network"]
        .iter()
        .any(|prefix| what.starts_with(prefix))
}

/// The reads, writes, network and not-enforced lines of `policy`'s children in `cwd` (`None`:
/// the session's cwd, for `doctor`) on `backend` (`None`: no usable backend).
pub fn lines(policy: &Policy, cwd: Option<&Path>, backend: Option<Backend>) -> Vec<String> {
    let workspace = match cwd {
        Some(cwd) => format!("the workspace {}", cwd.display()),
        None => "the session's workspace (its cwd)".to_owned(),
    };
    let roots = |write: bool| -> Vec<String> {
        policy
            .allowed_roots
            .iter()
            .filter(|(_, w)| *w == write)
            .map(|(p, _)| p.display().to_string())
            .collect()
    };
    let full = policy.level == AutonomyLevel::Full;
    let mut reads = format!("reads: {workspace}");
    for root in roots(false).into_iter().chain(roots(true)) {
        reads += &format!(", {root}");
    }
    reads += if full {
        HOST_READS.as_str()
    } else {
        ", the system's read-only roots (/usr, /bin, /lib, /etc, /opt, ...) and the home \
         toolchains (~/.cargo/bin, ~/.rustup, ~/.pyenv, ~/.nvm, ~/.local/bin)"
    };
    reads += &format!(
        "; never the forbidden paths ({})",
        policy
            .forbidden
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let mut writes = format!("writes: {workspace}");
    for root in roots(true) {
        writes += &format!(", {root}");
    }
    writes += ", a private /tmp (TMPDIR on the landlock rung) and HOME (gone after each call)";
    if policy.caches.enabled {
        writes += &crate::caches::described(policy.caches.scope);
    }
    if full && policy.full_host_writes {
        writes += "; and the host: every directory it reads ([autonomy] full_host_writes = true)";
    } else if full {
        writes += "; nothing else of the host (it is read-only)";
    }
    let never: Vec<String> = policy
        .never_writable_for(cwd.unwrap_or(Path::new("/nonexistent")))
        .iter()
        .map(|e| e.path.display().to_string())
        .collect();
    writes += &format!("; never, at any level: {}", never.join(", "));
    vec![
        reads,
        writes,
        format!("network: {}", network(policy)),
        format!("not enforced: {}", not_enforced(policy, backend).join("; ")),
    ]
}

/// What a `full` shell reads besides the workspace and the allowed roots.
static HOST_READS: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        ", and the host: every top-level directory but {} (the system's read-only roots) and \
         the home directory's entries",
        reach::NOT_REACHED.join(", ")
    )
});

/// The session's network, as its children get it.
pub fn network(policy: &Policy) -> String {
    if let Some(egress) = &policy.egress {
        format!(
            "only through zeroclaw's egress proxy ([sandbox.network] mode = \"proxy\"), which \
             admits what its allowlist allows: {}",
            egress.describe().join("; ")
        )
    } else if policy.network {
        "the host's network (mode = \"allow\")".to_owned()
    } else {
        "none: only a loopback of its own (mode = \"deny\")".to_owned()
    }
}

/// What `backend` or the policy's level does not enforce, one item each (the `not enforced:`
/// line of [`lines`]).
pub fn not_enforced(policy: &Policy, backend: Option<Backend>) -> Vec<String> {
    let mut out = Vec::new();
    match backend {
        None | Some(Backend::None) => {
            out.push("NOTHING: no confinement, tool calls are refused or run unconfined".into())
        }
        Some(Backend::Landlock) => out.push(
            "on the landlock rung, protected paths (.git/hooks, .git/config, a never-writable \
             path inside the workspace or a read-write allowed root) are not kept read-only \
             (the file tools' writes there are refused by the policy)"
                .into(),
        ),
        Some(_) => {}
    }
    match policy.level {
        AutonomyLevel::ReadOnly => out.push(
            "level readonly refuses writes and mutating commands in the policy; the kernel \
             still lets a command write the workspace"
                .into(),
        ),
        AutonomyLevel::Full if policy.full_host_writes => out.push(
            "[autonomy] full_host_writes = true: a full session's children change the host \
             outside the workspace"
                .into(),
        ),
        _ => {}
    }
    if out.is_empty() {
        out.push("nothing of the above".into());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_session_reads_the_host_and_writes_the_workspace_and_its_roots() {
        let mut policy = Policy {
            level: AutonomyLevel::Full,
            ..Policy::default()
        };
        policy.allowed_roots.push(("/srv/out".into(), true));
        let lines = lines(&policy, Some(Path::new("/p")), Some(Backend::Namespaces));
        assert!(lines[0].contains("and the host"), "{lines:?}");
        assert!(
            lines[1].starts_with("writes: the workspace /p, /srv/out, a private /tmp"),
            "{lines:?}"
        );
        assert!(lines[1].contains("nothing else of the host"), "{lines:?}");
        assert!(lines[2].starts_with("network: none"), "{lines:?}");
        policy.full_host_writes = true;
        let lines = super::lines(&policy, Some(Path::new("/p")), Some(Backend::Landlock));
        assert!(lines[1].contains("full_host_writes = true"), "{lines:?}");
        assert!(lines[3].contains("landlock rung") && lines[3].contains("change the host"));
    }

    #[test]
    fn the_default_profile_lines_are_the_replaced_ones() {
        assert!(replaces(
            "writes limited to the workspace; .git/hooks, .git/config read-only"
        ));
        assert!(replaces("no network, no abstract or outside Unix sockets"));
        assert!(!replaces("private /tmp and HOME"));
    }
}
