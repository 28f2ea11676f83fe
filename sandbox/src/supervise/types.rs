//! The supervisor's vocabulary: what it is set up with ([`Config`]), fed ([`Event`]) and
//! answers ([`Reply`], [`Start`]), and what a call ends with ([`Outcome`]).

use std::borrow::Cow;

use crate::error::HelperNames;
use crate::wire::{Enforcement, ExitInfo, Findings};

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
    /// What the helper found of the call by its end: its landing's refusals and changes,
    /// the private places it left files in.
    pub findings: Findings,
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
    /// Read every report up to the helper's exit (a settling sandbox); else the first
    /// `Ended` report ends the call, on every backend and topology (the process that
    /// reports it has done everything the call leaves: a helper reports after its init's
    /// tree is gone and the workspace is scrubbed, staged and landed, so nothing of the
    /// call changes the workspace after it returns).
    pub(crate) settle: bool,
    pub(crate) reaper: Reaper,
    /// How the error of a helper gone before confining the command names it.
    pub(crate) helper: HelperNames,
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
    /// Output to pass on to the caller (within the cap; refusals come as stderr).
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
