//! The supervisor's vocabulary: what it is set up with ([`Config`]), fed ([`Event`]) and
//! answers ([`Reply`], [`Start`]), and what a call ends with ([`Outcome`]).

use std::borrow::Cow;

use crate::wire::{Enforcement, ExitInfo};

/// Which stream a chunk of output came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// The command's stdout.
    Stdout,
    /// The command's stderr.
    Stderr,
}

/// Why the command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// It exited (or died) on its own.
    Exited,
    /// The wall-time limit killed the tree.
    TimedOut,
    /// The caller cancelled; the tree was killed.
    Cancelled,
    /// The output limit was reached; the tree was killed.
    OutputLimit,
    /// The call wrote more than its write bound into its workspace layer
    /// ([`crate::Limits::written_bytes`]); the tree was killed and nothing it wrote landed.
    WriteLimit,
}

/// The result of one confined execution.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Exit code or signal of the command.
    pub exit: ExitInfo,
    /// Why it ended.
    pub end: End,
    /// stdout kept (within the output limit).
    pub stdout: Vec<u8>,
    /// stderr kept (within the output limit).
    pub stderr: Vec<u8>,
    /// Output was cut at the limit.
    pub truncated: bool,
    /// What was enforced.
    pub enforcement: Enforcement,
    /// What git validation refused at landing, one line each (also passed on as stderr,
    /// unless the output limit was reached); the caller records them.
    pub git_refused: Vec<String>,
    /// The call's private places it left files in, discarded at its end (`/tmp`, `$HOME`
    /// as the command saw them; on the Landlock rung `$TMPDIR`, `$HOME`); empty on the
    /// backends that cannot tell (bubblewrap, seatbelt, none).
    pub discarded: Vec<String>,
    /// The call changed the user's git config copy in its private HOME (`git config
    /// --global`), which is discarded at its end (the backends with a private HOME).
    pub git_config_changed: bool,
    /// What the call changed in the workspace, as its layer landed (the transactional
    /// workspace: namespace rungs with [`crate::Profile::layers`]), at most
    /// [`crate::wire::LANDED_LISTED`] paths; empty without a layer.
    pub changed: Vec<crate::wire::Changed>,
    /// Changed paths left out of `changed`.
    pub changed_more: u64,
}

impl Outcome {
    /// The exit code a shell would report (128 + signal for signal deaths).
    pub fn shell_code(&self) -> i32 {
        match self.exit {
            ExitInfo::Code(c) => c,
            ExitInfo::Signal(s) => 128 + s,
        }
    }
}

/// Who reaps the helper, and so how its end becomes known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reaper {
    /// The zygote: it writes the helper's status as the report pipe's last line, so the
    /// pipe's end of file without it means the zygote died, and the helper with it.
    Zygote,
    /// The driver itself ([`Event::HelperExited`]); the report pipe may close earlier (an
    /// exec-only backend's command does not inherit it).
    Driver,
}

/// What a call's supervision is set up with.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Config {
    /// Output limit, both streams together.
    pub(crate) cap: u64,
    /// Keep the output passed on in the [`Outcome`].
    pub(crate) keep: bool,
    /// `Ended` reports that mean the call is over: one on every backend and topology (the
    /// process that reports it has done everything the call leaves: a helper reports after
    /// its init's tree is gone and the workspace is scrubbed, staged and landed, so nothing
    /// of the call changes the workspace after it returns); `u8::MAX` to read every report
    /// up to the helper's exit (a settling sandbox).
    pub(crate) ends: u8,
    pub(crate) reaper: Reaper,
    /// Log git validation's refusals (the daemon; `sandbox run` prints them only).
    pub(crate) log_git: bool,
    /// Name the error after bubblewrap's stage.
    pub(crate) bubblewrap: bool,
}

/// What the driver saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Event<'a> {
    /// Bytes read from the report pipe (any cut: lines are joined here).
    Report(&'a [u8]),
    /// The report pipe reached end of file.
    ReportClosed,
    /// A chunk read from one of the command's streams.
    Output(Stream, &'a [u8]),
    /// One of the streams reached end of file (or was handed to someone else).
    OutputClosed(Stream),
    /// The helper (or init) the driver reaps has ended.
    HelperExited(ExitInfo),
    /// The wall-time limit has passed (once).
    Deadline,
    /// The caller cancelled (once).
    Cancel,
}

/// What to do about an event.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Reply<'a> {
    /// Output to pass on to the caller (within the cap; git refusals come as stderr).
    pub(crate) forward: Option<(Stream, Cow<'a, [u8]>)>,
    /// Kill the tree now ([`super::Kill`]).
    pub(crate) kill: bool,
}

/// How far the call got before the command could run.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Start {
    /// Nothing decisive reported yet.
    Waiting,
    /// Confined: the command runs.
    Ready,
    /// A stage reported its failure.
    Failed,
    /// The helper ended, or its reports did, before confining the command.
    Gone,
}
