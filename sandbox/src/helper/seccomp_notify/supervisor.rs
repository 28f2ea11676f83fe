//! The supervisor of one Landlock-only call: its listener, and the roots a change may touch
//! (see the module above for what it emulates and why).

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use nix::errno::Errno;

use crate::plan::Plan;

use super::decode::Change;
use super::listener::valid;

/// The supervisor: the listener and the roots a change may touch.
pub struct Supervisor {
    pub(super) listener: Arc<OwnedFd>,
    pub(super) writable: Vec<PathBuf>,
    pub(super) denied: Vec<PathBuf>,
    /// Connects being performed on their own threads.
    pub(super) connecting: Arc<AtomicUsize>,
    /// The network is denied: only pathname Unix sockets may be connected (an abstract one
    /// would be the host's: we connect unconfined, outside Landlock's scope).
    pub(super) network_denied: bool,
    /// Proxy mode (no network namespace): an IP socket may be connected only to the egress
    /// proxy's listeners on 127.0.0.1 (we connect outside the child's Landlock TCP rules).
    pub(super) proxy_only: Option<crate::egress::handover::ProxyPorts>,
}

impl Supervisor {
    /// Supervises `listener` for `plan`: changes only inside its writable Landlock roots
    /// (canonical, denied paths carved out) and never inside a denied path.
    pub fn new(listener: OwnedFd, plan: &Plan) -> Supervisor {
        let mut denied = plan.denied.clone();
        denied.extend(plan.denied.iter().filter_map(|d| d.canonicalize().ok()));
        Supervisor {
            listener: Arc::new(listener),
            writable: plan.landlock.write.clone(),
            denied,
            connecting: Arc::new(AtomicUsize::new(0)),
            network_denied: plan.seccomp.deny_inet,
            proxy_only: plan.seccomp.proxy_only,
        }
    }

    /// The listener, to poll for readability (a notification) or hang-up (no child left).
    pub fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.listener.as_fd()
    }

    /// Whether notification `id` is still pending (its caller is still blocked in it).
    pub(super) fn valid(&self, id: u64) -> bool {
        valid(&self.listener, id)
    }

    /// The checks, on the descriptor about to be changed.
    pub(super) fn check(&self, file: &OwnedFd, fsuid: u32, change: Change) -> Result<(), Errno> {
        let real = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd()))
            .map_err(|_| Errno::EPERM)?;
        if !self.may_change(&real) {
            return Err(Errno::EPERM);
        }
        let st = nix::sys::stat::fstat(file).map_err(|_| Errno::EPERM)?;
        if st.st_uid != fsuid {
            return Err(Errno::EPERM);
        }
        if let Change::Mode(mode) = change
            && mode & (libc::S_ISUID | libc::S_ISGID) != 0
        {
            return Err(Errno::EPERM);
        }
        let keeps = |wanted: u32, current: u32| wanted == u32::MAX || wanted == current;
        if let Change::Owner(uid, gid) = change
            && !(keeps(uid, st.st_uid) && keeps(gid, st.st_gid))
        {
            return Err(Errno::EPERM);
        }
        Ok(())
    }

    /// A real path the child may change the mode or times of.
    pub(super) fn may_change(&self, real: &Path) -> bool {
        real.is_absolute()
            && self.writable.iter().any(|w| real.starts_with(w))
            && !self.denied.iter().any(|d| real.starts_with(d))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_writable_roots_outside_denied_paths_may_change() {
        let (a, _b) = nix::unistd::pipe().unwrap();
        let s = Supervisor {
            listener: Arc::new(a),
            writable: vec![PathBuf::from("/ws"), PathBuf::from("/scratch/x")],
            denied: vec![PathBuf::from("/ws/.ssh")],
            connecting: Arc::new(AtomicUsize::new(0)),
            network_denied: true,
            proxy_only: None,
        };
        assert!(s.may_change(Path::new("/ws/a.sh")));
        assert!(s.may_change(Path::new("/ws")));
        assert!(s.may_change(Path::new("/scratch/x/tmp/f")));
        assert!(!s.may_change(Path::new("/wsx/a")));
        assert!(!s.may_change(Path::new("/ws/.ssh/id")));
        assert!(!s.may_change(Path::new("/etc/shadow")));
        assert!(!s.may_change(Path::new("pipe:[1234]")));
    }
}
