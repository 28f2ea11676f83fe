//! The wire between the launcher and its helpers, shared by both sides and by nothing else:
//! the argv markers that turn the binary into a helper or a zygote, every descriptor number
//! a helper, a zygote or a warm helper is started with, the size caps, the names of the
//! on-disk markers both sides recognise, and the report pipe's messages (one JSON object per
//! line) with their encoder and their decoder ([`Message::decode`] for one line,
//! [`ReportLines`] for the pipe's bytes however reads cut them). Side-effect free.

use std::os::fd::RawFd;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::error::SetupError;

// --- argv markers -------------------------------------------------------------------------

/// The hidden first argument that turns the binary into the helper.
pub const HELPER_ARG: &str = "__zeroclaw-sandbox-helper";
/// Second argument for the stage that runs inside bubblewrap.
pub const INNER_ARG: &str = "inner";
/// Second argument that starts the zygote.
pub const ZYGOTE_ARG: &str = "zygote";

// --- a helper's descriptors ---------------------------------------------------------------

/// Descriptor the plan is read from.
pub const PLAN_FD: RawFd = 3;
/// Descriptor reports are written to.
pub const REPORT_FD: RawFd = 4;
/// Descriptor whose end-of-file means the launcher is gone (it holds the write end for as
/// long as it cares about the command; works whatever thread spawned the helper, unlike
/// `PR_SET_PDEATHSIG`, which fires when the spawning *thread* exits).
pub const LIFELINE_FD: RawFd = 5;
/// Descriptor of the go socket in a warm helper (after the zygote's six).
pub const GO_FD: RawFd = 6;
/// Descriptor of the launcher's pidfd in a helper forked by the zygote (after a warm helper's
/// go socket): readable once the launcher process has ended, however it ended and whoever
/// still holds a copy of the lifeline's write end. Watched beside [`LIFELINE_FD`].
pub const LAUNCHER_FD: RawFd = 7;
/// Descriptor of a proxy call's plan socket in bubblewrap's inner stage (its helper's plan
/// number carries the inner stage's plan instead): the stage binds the egress proxy's
/// listeners in bwrap's network namespace and sends them back on it.
pub const EGRESS_FD: RawFd = 8;

// --- the zygote's descriptors and requests ------------------------------------------------

/// Where the launcher installs the zygote's control socket.
pub const CONTROL_FD: RawFd = 3;
/// Where the launcher installs a pidfd of itself for the zygote.
pub const LAUNCHER_PIDFD: RawFd = 4;
/// Descriptors attached to each request to the zygote: the command's stdin, stdout, stderr,
/// the plan, report and lifeline pipe ends, in that order (installed on 0–5).
pub const REQUEST_FDS: usize = 6;
/// Descriptors attached to a request for a warm helper (plus its go socket, on [`GO_FD`]).
pub const WARM_REQUEST_FDS: usize = REQUEST_FDS + 1;

// --- sizes, exit codes, markers -----------------------------------------------------------

/// Largest call message (a plan as JSON) sent over the go socket; a bigger plan starts cold.
pub const MAX_CALL_BYTES: usize = 128 * 1024;
/// Exit code of the helper when confinement failed (the reason went over the report pipe).
pub const SETUP_FAILED: i32 = 125;
/// File marking a placeholder directory the helper created for a protected path.
pub const PLACEHOLDER_MARKER: &str = ".zeroclaw-placeholder";
/// Where bubblewrap binds the call's layer directory for its inner stage, which mounts the
/// workspace's overlay from it and detaches it (`helper::mounts::layer_in_bwrap`).
pub const LAYER_DIR: &str = "/.zeroclaw-layer";
/// Empty directory at the new root, the lower layer of read-only overlays (and bwrap's
/// `--dir`).
pub const EMPTY_DIR: &str = "/.zeroclaw-empty";

// --- the report pipe ----------------------------------------------------------------------

/// What was actually enforced for one execution (sent just before `execve`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Enforcement {
    /// Backend name.
    pub backend: String,
    /// Namespaces the command lives in (`user`, `mount`, `pid`, `net`, `ipc`, `uts`).
    pub namespaces: Vec<String>,
    /// Landlock ABI in use (0 when none).
    pub landlock_abi: u32,
    /// `full`, `partial`, or `none`.
    pub landlock: String,
    /// Seccomp filter installed.
    pub seccomp: bool,
    /// `PR_SET_NO_NEW_PRIVS` set.
    pub no_new_privs: bool,
    /// Every capability set (incl. bounding and ambient) empty.
    pub capabilities_dropped: bool,
    /// Resource limits applied.
    pub rlimits: bool,
    /// `/tmp` and `HOME` are private to this execution.
    pub private_tmp: bool,
    /// Protected paths are read-only.
    pub protected_paths: bool,
    /// Reduced guarantees, in words.
    pub notes: Vec<String>,
    /// Served by a helper prepared before the call arrived (see [`crate::warm`]).
    #[serde(default)]
    pub warm: bool,
    /// What the confined process proved from inside before the command ran (absent on the
    /// backends that confine nothing: `none`, Seatbelt).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checked: Option<InsideCheck>,
}

/// The confinement as the confined process itself observed it, once every stage was applied
/// and before the command ran (`helper/inside_check.rs`). A property that does not hold fails
/// the call instead, so a report only ever lists what held.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InsideCheck {
    /// Each property observed to hold, in words, with the call that showed it.
    pub held: Vec<String>,
    /// Each property not checked for this plan, with why (e.g. the network is the host's).
    pub not_checked: Vec<String>,
    /// How long the check took, in nanoseconds.
    pub nanos: u64,
}

/// How the command ended, as seen by the helper.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ExitInfo {
    /// Exit code.
    Code(i32),
    /// Killed by a signal.
    Signal(i32),
}

/// One report line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Message {
    /// Confinement complete; the command is being executed.
    Ready(Enforcement),
    /// A stage failed.
    Failed(SetupError),
    /// The command ended.
    Exited(ExitInfo),
    /// The helper is done: every process of the call is reaped. Written by the helper as it
    /// exits, and by the zygote once it has reaped it (always the last line, so a helper that
    /// died without a word is noticed too).
    Ended(ExitInfo),
    /// A warm helper's root is built and waits for its call; the value is the
    /// [`crate::warm::key::fingerprint`] taken just before mounting.
    Prepared(u64),
    /// What validation refused at the call's end (git control state the run wrote, see
    /// `crate::git::stage` and `crate::layer`), one line each; passed on as the command's
    /// stderr and kept in the [`Findings`].
    Refused(Vec<String>),
    /// The call wrote to these private places, discarded at its end (`/tmp` and `$HOME` as
    /// the command saw them; see `helper::discarded`), sent before [`Message::Exited`].
    Discarded(Vec<String>),
    /// The call changed the user's git config copy in its private HOME (`git config
    /// --global`; see `helper::git_global`), discarded at its end; sent before
    /// [`Message::Exited`].
    GitConfigChanged,
    /// The call's layer grew past its write bound (the value, in bytes): the helper killed
    /// the tree and discards the layer.
    WriteLimit(u64),
    /// What the call changed in the workspace, as its layer landed (the transactional
    /// workspace, see `crate::layer`): at most [`LANDED_LISTED`] paths, and how many more
    /// there were; sent before the helper's `Ended`.
    Landed {
        /// The changed paths, relative to the workspace, in landing order.
        changed: Vec<Changed>,
        /// Changed paths left out of `changed`.
        more: u64,
    },
}

/// One changed path of a call's landing ([`Message::Landed`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Changed {
    /// Relative to the workspace.
    pub path: PathBuf,
    /// What happened to it.
    pub change: Change,
}

/// What happened to a path.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Change {
    /// A regular file written (created or replaced): its size and SHA-256 (hex).
    Written { bytes: u64, sha256: String },
    /// A symbolic link made, and what it points to.
    Symlink { target: PathBuf },
    /// A directory made (or its mode changed).
    Directory,
    /// Removed (a file, a link or a whole tree).
    Removed,
}

/// What the helper found of a call by its end, for the caller to report and record: the
/// refusals and changes of its landing, the private places it left files in, its changed
/// git config copy. The supervisor carries these from the report lines into the call's
/// outcome without reading them ([`Findings::take_in`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Findings {
    /// What validation refused at landing, one line each (also passed on as stderr, unless
    /// the output limit was reached); the caller records them.
    pub refused: Vec<String>,
    /// The call's private places it left files in, discarded at its end (`/tmp`, `$HOME`
    /// as the command saw them; on the Landlock rung `$TMPDIR`, `$HOME`); empty on the
    /// backends that cannot tell (bubblewrap, seatbelt, none).
    pub discarded: Vec<String>,
    /// The call changed the user's git config copy in its private HOME (`git config
    /// --global`), which is discarded at its end (the backends with a private HOME).
    pub git_config_changed: bool,
    /// What the call changed in the workspace, as its layer landed (the transactional
    /// workspace: namespace rungs with a layers directory), at most [`LANDED_LISTED`]
    /// paths; empty without a layer.
    pub changed: Vec<Changed>,
    /// Changed paths left out of `changed`.
    pub changed_more: u64,
}

impl Findings {
    /// Takes in `message` if it is a finding, answering what it tells the caller as the
    /// command's stderr (the refusals, a line each); any other message is not taken.
    pub fn take_in(&mut self, message: Message) -> Vec<u8> {
        match message {
            Message::Refused(lines) => {
                let told = lines.iter().flat_map(|l| format!("{l}\n").into_bytes());
                let told = told.collect();
                self.refused.extend(lines);
                told
            }
            Message::Discarded(places) => {
                self.discarded.extend(places);
                Vec::new()
            }
            Message::GitConfigChanged => {
                self.git_config_changed = true;
                Vec::new()
            }
            Message::Landed { changed, more } => {
                self.changed.extend(changed);
                self.changed_more += more;
                Vec::new()
            }
            _ => Vec::new(),
        }
    }
}

/// The most changed paths a [`Message::Landed`] lists (its line stays around a megabyte).
pub const LANDED_LISTED: usize = 10_000;

impl Message {
    /// The message on one report line (`None`: not one of ours; such a line is skipped).
    pub fn decode(line: &[u8]) -> Option<Message> {
        serde_json::from_slice(line).ok()
    }

    /// One JSON line.
    pub fn encode(&self) -> Vec<u8> {
        let mut line = serde_json::to_vec(self).unwrap_or_else(|_| b"{}".to_vec());
        line.push(b'\n');
        line
    }
}

/// The report pipe's decoder: bytes in, as the reads deliver them (a line may be split
/// across reads, or one read hold several), messages out, in order. A line that is not one of
/// ours is skipped; an unfinished line waits for the rest.
#[derive(Debug, Default)]
pub struct ReportLines {
    pending: Vec<u8>,
}

impl ReportLines {
    /// Adds what one read returned.
    pub fn push(&mut self, bytes: &[u8]) {
        self.pending.extend_from_slice(bytes);
    }

    /// The next complete line's message; `None` until another line is complete.
    pub fn next_message(&mut self) -> Option<Message> {
        while let Some(at) = self.pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=at).collect();
            if let Some(m) = Message::decode(&line) {
                return Some(m);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_lines_join_split_reads_and_skip_foreign_lines() {
        let mut lines = ReportLines::default();
        let ready = Message::Ready(Enforcement::default()).encode();
        let ended = Message::Ended(ExitInfo::Code(3)).encode();
        let (a, b) = ready.split_at(7);
        lines.push(a);
        assert_eq!(lines.next_message(), None, "half a line is not a message");
        lines.push(b);
        lines.push(b"not ours\n");
        lines.push(&ended);
        assert_eq!(
            lines.next_message(),
            Some(Message::Ready(Enforcement::default()))
        );
        assert_eq!(
            lines.next_message(),
            Some(Message::Ended(ExitInfo::Code(3)))
        );
        assert_eq!(lines.next_message(), None);
    }
}
