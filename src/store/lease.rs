//! Session leases: which daemon runs a session's turns.
//!
//! A lease row (session, holder, fencing token, expiry) is taken by `session/new`, `load` and
//! `resume`, renewed while the session is active and released when it is dropped. Another
//! holder can take it only once it expired — or at once when its holder is a process of this
//! host that no longer exists — and every takeover increments the token. Each turn is written
//! only if the writer's [`Fence`] still matches the row, in the turn's own transaction, so a
//! holder that was paused past its expiry and taken over can never write again.

use std::fmt;

/// Who holds a lease: this host, this process and this run of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder(String);

impl Holder {
    /// The holder name of this process: `<hostname>/<pid>/<random>`.
    pub fn this_process() -> Holder {
        let host = nix::unistd::gethostname()
            .ok()
            .and_then(|h| h.into_string().ok())
            .unwrap_or_else(|| "localhost".into());
        let mut nonce = [0u8; 6];
        let _ = getrandom::fill(&mut nonce);
        Holder(format!(
            "{host}/{}/{}",
            std::process::id(),
            hex::encode(nonce)
        ))
    }

    pub fn from_name(name: impl Into<String>) -> Holder {
        Holder(name.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether this holder is a process of this host that has ended (its lease can be taken at
    /// once). A reused pid counts as alive, which only delays a takeover until expiry.
    pub fn is_dead_local_process(&self) -> bool {
        let mut parts = self.0.split('/');
        let (Some(host), Some(pid)) = (parts.next(), parts.next()) else {
            return false;
        };
        let ours = nix::unistd::gethostname().ok();
        if ours.as_ref().and_then(|h| h.to_str()) != Some(host) {
            return false;
        }
        let Ok(pid) = pid.parse::<i32>() else {
            return false;
        };
        if pid <= 0 || pid as u32 == std::process::id() {
            return false;
        }
        matches!(
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None),
            Err(nix::errno::Errno::ESRCH)
        )
    }
}

impl fmt::Display for Holder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A held lease: the proof a turn's write carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fence {
    pub session: String,
    pub holder: String,
    pub token: i64,
}

/// A request to take a session's lease.
#[derive(Debug, Clone)]
pub struct Request {
    pub session: String,
    pub holder: String,
    pub ttl_ms: i64,
    /// Take the lease even if unexpired, when its holder is still exactly this one (a dead
    /// process of this host).
    pub steal_from: Option<String>,
}

impl Request {
    pub fn new(session: &str, holder: &Holder, ttl_ms: i64) -> Request {
        Request {
            session: session.to_owned(),
            holder: holder.as_str().to_owned(),
            ttl_ms,
            steal_from: None,
        }
    }
}

/// Why a lease could not be taken or used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LeaseError {
    #[error(
        "session `{session}` is leased by {holder} until its lease expires in {expires_in_ms} ms"
    )]
    Held {
        session: String,
        holder: String,
        expires_in_ms: i64,
    },
    #[error(
        "session `{session}` was taken over by {holder}; this daemon's lease (token {token}) is no longer valid and nothing was written"
    )]
    Fenced {
        session: String,
        holder: String,
        token: i64,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dead_local_holder_is_recognised() {
        let me = Holder::this_process();
        assert!(!me.is_dead_local_process(), "this process is alive");
        let host = me.as_str().split('/').next().unwrap();
        // Pid 0 and unparsable holders are never treated as dead.
        assert!(!Holder::from_name(format!("{host}/0/x")).is_dead_local_process());
        assert!(!Holder::from_name("other-host/1/x").is_dead_local_process());
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        let gone = Holder::from_name(format!("{host}/{pid}/x"));
        assert!(gone.is_dead_local_process());
    }
}
