//! Warm helpers (namespace backend): after a call ends, the launcher has its zygote fork the
//! helper for the *next* call of the same shape ahead of time. That helper creates the
//! namespaces and builds the new root, and its pid-namespace init confines itself (capabilities,
//! no_new_privs, Landlock, seccomp), then waits on a socket for the call itself: the final plan
//! and the command's stdio. A call whose plan has the same shape ([`Plan::shape`], the digest of
//! its [`normalized`](crate::plan::shape::normalized) part) takes it and skips straight
//! to the last fork, the command's limits and cwd, and `execve`.
//!
//! Each call still gets namespaces, a root and a `/tmp` of its own: a warm helper serves one
//! call and is made only once the previous call's tree is gone, so no confined process can
//! race its preparation. Staleness is checked on both sides, and either discards the warm
//! helper for a cold start:
//! - the init records the identity (device, inode, type, or absence) of every host path the
//!   root depends on just before mounting ([`fingerprint`](crate::warm::key::fingerprint)) and reports it
//!   ([`Message::Prepared`]); the launcher recomputes it when it hands the call over (a
//!   workspace or `.git` moved aside and made anew);
//! - the init records which mount each of those paths resolves to once the root is built
//!   ([`mount_ids`](crate::warm::key::mount_ids)) and compares when the call arrives (a mounted path deleted and made
//!   anew on the host, whose new inode may reuse the old number).
//!
//! [`Message::Prepared`]: crate::wire::Message::Prepared

use std::io::{IoSlice, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::path::Path;
use std::sync::Arc;

use nix::sys::socket::{ControlMessage, MsgFlags, sendmsg};

pub(crate) mod key;

use crate::plan::Plan;
#[cfg(test)]
use crate::plan::shape::normalized;
use crate::spawner::{Forked, Spawner};
use crate::warm::key::fingerprint;
use crate::wire::{MAX_CALL_BYTES, Message};

/// Warm helpers kept per sandbox (one per distinct call shape, least recently made evicted).
pub const MAX_WARM: usize = 4;

/// A helper prepared for the next call of one shape (launcher side).
#[derive(Debug)]
pub(crate) struct Warm {
    /// The shape it was prepared for ([`shape`]).
    shape: [u8; 32],
    pid: i32,
    pidfd: OwnedFd,
    go: OwnedFd,
    report: OwnedFd,
    lifeline: OwnedFd,
}

/// What a warm helper has reported so far.
enum Progress {
    /// Its root is built from paths whose identity hashed to this.
    Prepared(u64),
    /// Still building (nothing reported yet).
    Building,
    /// Failed, ended, or said something unexpected.
    Gone,
}

impl Warm {
    /// Reads what the helper reported without waiting; consumes `Prepared` only.
    fn progress(&self) -> Progress {
        use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
        let mut fds = [PollFd::new(self.report.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, PollTimeout::ZERO) {
            Ok(0) => return Progress::Building,
            Ok(_) => {}
            Err(_) => return Progress::Gone,
        }
        // One short line written at once (below PIPE_BUF), so one read has all of it.
        let mut buf = [0u8; 256];
        let n = match nix::unistd::read(&self.report, &mut buf) {
            Ok(n) => n,
            Err(_) => return Progress::Gone,
        };
        match Message::decode(buf[..n].strip_suffix(b"\n").unwrap_or(b"")) {
            Some(Message::Prepared(fingerprint)) => Progress::Prepared(fingerprint),
            _ => Progress::Gone,
        }
    }

    /// Hands the call (`plan` as `json`, with the command's stdio) to the waiting init.
    /// `None` when the helper is stale or gone (it is told to end): start cold instead.
    pub fn hand_over(self, plan: &Plan, json: &[u8], stdio: [RawFd; 3]) -> Option<Taken> {
        let fresh = match self.progress() {
            Progress::Prepared(recorded) => recorded == fingerprint(plan),
            Progress::Building => true,
            Progress::Gone => false,
        };
        let iov = [IoSlice::new(json)];
        let sent = fresh
            && json.len() <= MAX_CALL_BYTES
            && sendmsg::<()>(
                self.go.as_raw_fd(),
                &iov,
                &[ControlMessage::ScmRights(&stdio)],
                MsgFlags::MSG_NOSIGNAL,
                None,
            )
            .is_ok();
        if !sent {
            self.discard();
            return None;
        }
        // The call stays queued for the init after our end of the socket closes.
        let Warm {
            pid,
            pidfd,
            report,
            lifeline,
            ..
        } = self;
        Some(Taken {
            forked: Forked { pid, pidfd },
            report,
            lifeline,
        })
    }

    /// Ends the helper (SIGTERM: it kills its tree and cleans up; so would the closed
    /// lifeline, a little later).
    fn discard(self) {
        let _ = crate::sys::pidfd_signal(&self.pidfd, libc::SIGTERM);
    }
}

/// A warm helper that took a call: what the launcher keeps of it.
pub(crate) struct Taken {
    pub forked: Forked,
    pub report: OwnedFd,
    pub lifeline: OwnedFd,
}

/// The warm helpers of one sandbox, shared by its clones.
#[derive(Debug, Clone, Default)]
pub(crate) struct Pool(Arc<tokio::sync::Mutex<Vec<Warm>>>);

impl Pool {
    /// Takes the helper prepared for `plan`'s shape, if any (waiting for one being made).
    pub async fn take(&self, plan: &Plan) -> Option<Warm> {
        let shape = shape(plan);
        let mut warm = self.0.lock().await;
        let at = warm.iter().position(|w| w.shape == shape)?;
        Some(warm.remove(at))
    }

    /// Has a helper prepared in the background for the plan `next` builds (built now, after
    /// the previous call, so it sees what that call left). Nothing without a runtime, when
    /// one is being made already, or when `next` has no plan. Call once the previous call's
    /// tree is gone.
    pub fn refill(
        &self,
        spawner: &Spawner,
        helper: &Path,
        next: impl FnOnce() -> Option<Plan> + Send + 'static,
    ) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let Ok(mut warm) = self.0.clone().try_lock_owned() else {
            return;
        };
        let (spawner, helper) = (spawner.clone(), helper.to_owned());
        // Planning and forking through the zygote block for a moment; the pool stays locked
        // meanwhile, so the next call waits for this helper rather than starting cold beside
        // it.
        runtime.spawn_blocking(move || {
            let Some(plan) = next() else { return };
            let shape = shape(&plan);
            if warm.iter().any(|w| w.shape == shape)
                || makes_placeholders(&plan)
                // Git hook: a stage the init cannot bind from its root starts cold.
                || !crate::git::stage::warm_can_bind(&plan)
            {
                return;
            }
            if let Ok(made) = prepare(&spawner, &helper, plan, shape) {
                if warm.len() >= MAX_WARM {
                    warm.remove(0).discard();
                }
                warm.push(made);
            }
        });
    }
}

/// Whether a helper for `plan` would create something on the host (a protected-path
/// placeholder, which a cold call creates too, or a denied-path one) or keep a denied-path
/// placeholder of ours: a helper waiting for a call that may never come must not, so such
/// calls start cold. (A protected path is listed only while it does not exist.)
fn makes_placeholders(plan: &Plan) -> bool {
    plan.placeholders.iter().any(|p| {
        // Git hook: a stage's `.git` is made only once the call arrives (`git::stage::deferred`).
        !crate::git::stage::is_deferred(plan, &p.path)
            && (!p.denied
                || std::fs::symlink_metadata(&p.path).is_err()
                || std::fs::symlink_metadata(p.path.join(crate::wire::PLACEHOLDER_MARKER)).is_ok())
    })
}

/// `plan`'s shape: the digest its planner recorded, or made now (a plan made elsewhere).
fn shape(plan: &Plan) -> [u8; 32] {
    plan.shape
        .unwrap_or_else(|| crate::plan::shape::digest(plan))
}

/// Has the zygote fork a warm helper for `plan` (its stdio on `/dev/null` until the call).
fn prepare(
    spawner: &Spawner,
    helper: &Path,
    mut plan: Plan,
    shape: [u8; 32],
) -> std::io::Result<Warm> {
    use nix::sys::socket::{AddressFamily, SockFlag, SockType, socketpair};
    plan.warm = Some(crate::plan::WarmPlan {
        deferred: crate::git::stage::deferred(&plan),
    });
    let json = serde_json::to_vec(&plan)?;
    let null = std::fs::File::open("/dev/null")?;
    let pipe = || nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(std::io::Error::from);
    let (plan_r, plan_w) = pipe()?;
    let (report_r, report_w) = pipe()?;
    let (life_r, life_w) = pipe()?;
    let (go, go_theirs) = socketpair(
        AddressFamily::Unix,
        SockType::SeqPacket,
        None,
        SockFlag::SOCK_CLOEXEC,
    )?;
    let n = null.as_raw_fd();
    let fds = [
        n,
        n,
        n,
        plan_r.as_raw_fd(),
        report_w.as_raw_fd(),
        life_r.as_raw_fd(),
        go_theirs.as_raw_fd(),
    ];
    let forked = spawner
        .fork(helper, &fds)
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    drop((null, plan_r, report_w, life_r, go_theirs));
    std::fs::File::from(plan_w).write_all(&json)?;
    Ok(Warm {
        shape,
        pid: forked.pid,
        pidfd: forked.pidfd,
        go,
        report: report_r,
        lifeline: life_w,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::Backend;
    use crate::profile::Profile;

    fn plan(ws: &Path, argv: &str) -> Plan {
        crate::plan::build_on_host(
            Backend::Namespaces,
            &Profile::for_workspace(ws),
            vec![argv.into()],
            None,
        )
    }

    #[test]
    fn the_key_ignores_the_command_but_not_the_root() {
        let ws = tempfile::tempdir().unwrap();
        let (a, b) = (plan(ws.path(), "true"), plan(ws.path(), "false"));
        assert_eq!(normalized(&a), normalized(&b));
        let mut c = a.clone();
        c.egress.own_namespace = !c.egress.own_namespace;
        assert_ne!(normalized(&a), normalized(&c));
        let other = tempfile::tempdir().unwrap();
        assert_ne!(normalized(&a), normalized(&plan(other.path(), "true")));
    }

    #[test]
    fn the_key_leaves_out_the_stage_as_a_warm_helpers_root_does() {
        let ws = tempfile::tempdir().unwrap();
        // The planner's git hook: a workspace without `.git` gets a stage.
        let staged = |argv: &str| {
            let mut p = plan(ws.path(), argv);
            crate::git::missing::guard(&mut p, &ws.path().join(".git"));
            p
        };
        let p = staged("true");
        assert!(crate::git::stage::any(&p), "no stage: {:?}", p.mounts);
        let stripped = crate::git::stage::deferred(&p).expect("a stage");
        let k = normalized(&p);
        assert_eq!(k.mounts, stripped.mounts);
        assert_eq!(k.placeholders, stripped.placeholders);
        assert_ne!(k.mounts, p.mounts);
        // Each call's stage has a name of its own; the shape is the same.
        let next = staged("false");
        assert_ne!(next.mounts, p.mounts);
        assert_eq!(normalized(&next), k);
    }

    #[test]
    fn the_fingerprint_sees_a_path_appear_or_be_replaced() {
        let ws = tempfile::tempdir().unwrap();
        let p = plan(ws.path(), "true");
        let before = fingerprint(&p);
        assert_eq!(before, fingerprint(&p));
        // Replacing the workspace directory (same path, new inode) changes it.
        let moved = ws.path().with_extension("old");
        std::fs::rename(ws.path(), &moved).unwrap();
        std::fs::create_dir(ws.path()).unwrap();
        assert_ne!(before, fingerprint(&p));
        std::fs::remove_dir(ws.path()).unwrap();
        std::fs::rename(&moved, ws.path()).unwrap();
        assert_eq!(before, fingerprint(&p));
    }
}
