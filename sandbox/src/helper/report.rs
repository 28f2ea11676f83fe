//! What a helper tells its launcher: report lines on [`REPORT_FD`] (see [`crate::wire`]), and
//! its exit code (a failed stage is reported first, then the helper exits [`SETUP_FAILED`]).

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::SetupError;
use crate::wire::{ExitInfo, Message, REPORT_FD, SETUP_FAILED};

/// Whether the process limit also binds uid 0 (a pids cgroup or the pid namespace's
/// `pid_max`), for the enforcement report.
pub(crate) static ROOT_PROCESS_LIMIT: AtomicBool = AtomicBool::new(false);

/// Ends a helper or a forked stage: its result becomes the exit code (a failure is reported
/// first).
pub(crate) fn finish(result: Result<i32, SetupError>) -> ! {
    exit(match result {
        Ok(code) => code,
        Err(e) => {
            send(&Message::Failed(e));
            SETUP_FAILED
        }
    })
}

/// Flushes stdout and exits at once (no destructors, no atexit handlers of the caller's).
pub(crate) fn exit(code: i32) -> ! {
    let _ = std::io::stdout().flush();
    crate::sys::exit_now(code)
}

/// Writes one report line to [`REPORT_FD`] (best effort: the launcher may be gone).
pub(crate) fn send(msg: &Message) {
    send_all(std::slice::from_ref(msg));
}

/// Sends `msgs` in one write: the launcher wakes once for all of them.
pub(crate) fn send_all(msgs: &[Message]) {
    let lines: Vec<u8> = msgs.iter().flat_map(Message::encode).collect();
    let _ = nix::unistd::write(super::inherited::borrow(REPORT_FD), &lines);
}

/// Sends git validation's refusals (`crate::git::stage`), if any: the launcher logs them and
/// passes them on as the command's stderr.
pub(crate) fn git_refusals(lines: Vec<String>) {
    if !lines.is_empty() {
        send(&Message::Refused(lines));
    }
}

/// Whether this helper has told the call's end ([`ended`]).
static ENDED: AtomicBool = AtomicBool::new(false);

/// Tells the call's end (`Ended` with the command's shell exit `code`), once: a backend with
/// clean-up left once the tree is gone tells it first, keeping the clean-up off the
/// launcher's path.
pub(crate) fn ended(code: i32) {
    if !ENDED.swap(true, Ordering::Relaxed) {
        send(&Message::Ended(ExitInfo::Code(code)));
    }
}

/// The exit code a shell would show for `info`.
pub(crate) fn shell_code(info: ExitInfo) -> i32 {
    match info {
        ExitInfo::Code(c) => c,
        ExitInfo::Signal(s) => 128 + s,
    }
}
