//! The launcher's link to its zygote ([`crate::helper::zygote`]): starts it once per
//! [`crate::Sandbox`] (the helper binary re-executed a single time), hands it each execution's
//! descriptors and gets back the forked helper's pid and pidfd. A zygote that died is started
//! again on the next request; one that cannot serve is a [`Stage::Spawn`] setup error. The
//! zygote also gets a pidfd of this process, so it and every helper it forks see the launcher
//! end however it ends (see [`crate::helper::zygote`]).

use std::io::{IoSlice, IoSliceMut, Read};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

use nix::sys::socket::{
    AddressFamily, ControlMessage, ControlMessageOwned, MsgFlags, SockFlag, SockType, recvmsg,
    sendmsg, setsockopt, socketpair, sockopt,
};
use nix::sys::time::TimeVal;

use crate::error::{SandboxError, SetupError, Stage};
use crate::wire::HELPER_ARG;
use crate::wire::{CONTROL_FD, LAUNCHER_PIDFD, ZYGOTE_ARG};

/// The zygote of one sandbox, shared by its clones; started on first use.
#[derive(Debug, Clone, Default)]
pub(crate) struct Spawner {
    zygote: Arc<Mutex<Option<Zygote>>>,
}

/// A running zygote: its process and our end of the control socket.
#[derive(Debug)]
struct Zygote {
    process: Child,
    control: OwnedFd,
}

/// Why a request failed, and whether the zygote had received its descriptors.
struct Failure {
    why: String,
    delivered: bool,
}

/// A helper forked by the zygote.
pub(crate) struct Forked {
    pub pid: i32,
    pub pidfd: OwnedFd,
}

impl Spawner {
    /// Forks a helper with `fds` (stdin, stdout, stderr, plan, report, lifeline, and a warm
    /// helper's go socket) installed.
    pub fn fork(&self, helper: &Path, fds: &[RawFd]) -> Result<Forked, SandboxError> {
        let mut slot = self.zygote.lock().unwrap_or_else(|e| e.into_inner());
        let mut last = None;
        for _ in 0..2 {
            if slot.is_none() {
                *slot = Some(Zygote::start(helper)?);
            }
            let zygote = slot.as_mut().expect("started above");
            match zygote.request(fds) {
                Ok(forked) => return Ok(forked),
                Err(Failure { why, delivered }) => {
                    let stderr = slot.take().map(Zygote::stop).unwrap_or_default();
                    last = Some((why, stderr));
                    // A zygote that took the descriptors may have forked a helper before it
                    // died: a second one with the same pipes would race it for the plan.
                    if delivered {
                        break;
                    }
                }
            }
        }
        let (why, stderr) = last.unwrap_or_default();
        Err(SetupError::new(
            Stage::Spawn,
            format!(
                "helper {} does not serve as a zygote ({why}): {}",
                helper.display(),
                stderr.trim()
            ),
        )
        .hint("a helper binary must call zeroclaw_sandbox::helper::run_if_helper() first in main")
        .into())
    }
}

impl Zygote {
    fn start(helper: &Path) -> Result<Zygote, SandboxError> {
        let (ours, theirs) = socketpair(
            AddressFamily::Unix,
            SockType::SeqPacket,
            None,
            SockFlag::SOCK_CLOEXEC,
        )
        .map_err(|e| spawn_error(helper, "socketpair(SOCK_SEQPACKET)", e.into()))?;
        // A wedged zygote must not hang a tool call forever.
        let timeout = TimeVal::new(10, 0);
        let _ = setsockopt(&ours, sockopt::ReceiveTimeout, &timeout);
        let _ = setsockopt(&ours, sockopt::SendTimeout, &timeout);
        // Both above the numbers they are installed on, so neither install clobbers the other.
        let theirs = crate::sys::dup_high(theirs.as_raw_fd())
            .map_err(|e| spawn_error(helper, "fcntl(F_DUPFD_CLOEXEC)", e))?;
        // Our own pidfd: readable once this process has ended, whoever still holds a copy of
        // any descriptor of ours (the zygote and every helper watch it, see `zygote`).
        let launcher = crate::sys::pidfd_open(std::process::id() as i32)
            .and_then(|fd| crate::sys::dup_high(fd.as_raw_fd()))
            .map_err(|e| spawn_error(helper, "pidfd_open(self)", e))?;
        let (theirs_raw, launcher_raw) = (theirs.as_raw_fd(), launcher.as_raw_fd());
        let mut cmd = Command::new(helper);
        cmd.args([HELPER_ARG, ZYGOTE_ARG])
            .env_clear()
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        crate::sys::install_before_exec(
            &mut cmd,
            vec![(theirs_raw, CONTROL_FD), (launcher_raw, LAUNCHER_PIDFD)],
        );
        let process = cmd
            .spawn()
            .map_err(|e| spawn_error(helper, "spawn(zygote)", e))?;
        drop((theirs, launcher));
        Ok(Zygote {
            process,
            control: ours,
        })
    }

    fn request(&mut self, fds: &[RawFd]) -> Result<Forked, Failure> {
        let undelivered = |why: String| Failure {
            why,
            delivered: false,
        };
        let delivered = |why: String| Failure {
            why,
            delivered: true,
        };
        let iov = [IoSlice::new(&[1u8])];
        sendmsg::<()>(
            self.control.as_raw_fd(),
            &iov,
            &[ControlMessage::ScmRights(fds)],
            MsgFlags::MSG_NOSIGNAL,
            None,
        )
        .map_err(|e| undelivered(format!("sendmsg: {e}")))?;
        let mut pid = [0u8; 4];
        let mut iov = [IoSliceMut::new(&mut pid)];
        let mut space = nix::cmsg_space!([RawFd; 1]);
        let msg = recvmsg::<()>(
            self.control.as_raw_fd(),
            &mut iov,
            Some(&mut space),
            MsgFlags::MSG_CMSG_CLOEXEC,
        )
        .map_err(|e| match e {
            // The zygote closed its end with our request still unread in its queue (a Unix
            // socket reports that as a reset, and an emptied queue as end of file): it died
            // before taking the descriptors.
            nix::errno::Errno::ECONNRESET => undelivered(format!("recvmsg: {e}")),
            _ => delivered(format!("recvmsg: {e}")),
        })?;
        let bytes = msg.bytes;
        let mut pidfd = None;
        for cmsg in msg.cmsgs().map_err(|e| delivered(e.to_string()))? {
            if let ControlMessageOwned::ScmRights(received) = cmsg {
                for owned in crate::sys::adopt_received(received) {
                    pidfd.get_or_insert(owned);
                }
            }
        }
        let pid = i32::from_le_bytes(pid);
        match (bytes, pidfd) {
            (4, Some(pidfd)) if pid > 0 => Ok(Forked { pid, pidfd }),
            (0, _) => Err(delivered("the zygote exited".into())),
            _ => Err(delivered(format!(
                "the zygote could not fork (answered pid {pid})"
            ))),
        }
    }

    /// Stops the zygote; returns what it said on stderr.
    fn stop(mut self) -> String {
        let _ = self.process.kill();
        let _ = self.process.wait();
        let mut text = String::new();
        if let Some(mut err) = self.process.stderr.take() {
            let _ = (&mut err).take(4096).read_to_string(&mut text);
        }
        text
    }
}

impl Drop for Zygote {
    fn drop(&mut self) {
        // End of file on the control socket ends it; kill and reap in case it is stuck.
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

fn spawn_error(helper: &Path, call: &str, e: std::io::Error) -> SandboxError {
    SetupError::os(Stage::Spawn, format!("{call} {}", helper.display()), &e).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The failure of a request to a stand-in zygote (a real process to own, and the peer end
    /// of the control socket) that closes its end once the request is waiting, after reading
    /// it when `read` is set.
    fn request_to_a_dying_zygote(read: bool) -> Failure {
        let (ours, peer) = socketpair(
            AddressFamily::Unix,
            SockType::SeqPacket,
            None,
            SockFlag::SOCK_CLOEXEC,
        )
        .unwrap();
        let process = Command::new("sleep")
            .arg("30")
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut zygote = Zygote {
            process,
            control: ours,
        };
        let closer = std::thread::spawn(move || {
            let mut fds = [nix::poll::PollFd::new(
                std::os::fd::AsFd::as_fd(&peer),
                nix::poll::PollFlags::POLLIN,
            )];
            nix::poll::poll(&mut fds, nix::poll::PollTimeout::NONE).unwrap();
            if read {
                let mut byte = [0u8; 1];
                let mut iov = [IoSliceMut::new(&mut byte)];
                let mut space = nix::cmsg_space!([RawFd; 7]);
                recvmsg::<()>(
                    peer.as_raw_fd(),
                    &mut iov,
                    Some(&mut space),
                    MsgFlags::empty(),
                )
                .unwrap();
            }
            drop(peer);
        });
        let failure = zygote.request(&[0]).err().expect("no zygote answered");
        closer.join().unwrap();
        failure
    }

    #[test]
    fn a_zygote_gone_before_reading_the_request_did_not_get_it() {
        let failure = request_to_a_dying_zygote(false);
        assert!(
            !failure.delivered,
            "an unread request counted as delivered: {}",
            failure.why
        );
    }

    #[test]
    fn a_zygote_gone_after_reading_the_request_may_have_forked() {
        let failure = request_to_a_dying_zygote(true);
        assert!(
            failure.delivered,
            "a request taken counted as undelivered: {}",
            failure.why
        );
    }
}
