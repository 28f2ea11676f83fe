//! [`Supervisor`]: the state of one running call and its answers to each event.

use std::borrow::Cow;

use super::ending;
use super::output::Capped;
use super::types::{Config, End, Event, Outcome, Reaper, Reply, Start, Stream};
use crate::error::SandboxError;
use crate::wire::{Enforcement, ExitInfo, Findings, Message, ReportLines, SETUP_FAILED};

/// The state of one running call.
#[derive(Debug)]
pub(crate) struct Supervisor {
    config: Config,
    lines: ReportLines,
    output: Capped,
    enforcement: Option<Enforcement>,
    failed: Option<crate::error::SetupError>,
    /// The command's own end, as the helper saw it.
    exit: Option<ExitInfo>,
    /// The first `Ended` report: the helper's status, with its whole tree reaped.
    ended: Option<ExitInfo>,
    /// The helper's end learnt otherwise: reaped by the driver, or the zygote gone.
    gone: Option<ExitInfo>,
    end: End,
    reports_open: bool,
    streams_open: [bool; 2],
    deadline_passed: bool,
    /// What the helper found of the call, reported so far.
    findings: Findings,
}

fn slot(stream: Stream) -> usize {
    match stream {
        Stream::Stdout => 0,
        Stream::Stderr => 1,
    }
}

impl Supervisor {
    pub(crate) fn new(config: Config) -> Supervisor {
        Supervisor {
            config,
            lines: ReportLines::default(),
            output: Capped::new(config.keep),
            enforcement: None,
            failed: None,
            exit: None,
            ended: None,
            gone: None,
            end: End::Exited,
            reports_open: true,
            streams_open: [true; 2],
            deadline_passed: false,
            findings: Findings::default(),
        }
    }

    /// Takes in one event.
    pub(crate) fn feed<'a>(&mut self, event: Event<'a>) -> Reply<'a> {
        let mut reply = Reply::default();
        match event {
            Event::Report(bytes) => {
                self.lines.push(bytes);
                let mut told = Vec::new();
                while self.wants_reports()
                    && let Some(message) = self.lines.next_message()
                {
                    self.apply(message, &mut told);
                }
                if !told.is_empty() {
                    let n = self.output.admit(Stream::Stderr, &told, self.config.cap);
                    told.truncate(n);
                    reply.forward = Some((Stream::Stderr, Cow::Owned(told)));
                }
            }
            Event::ReportClosed => {
                self.reports_open = false;
                if self.config.reaper == Reaper::Zygote {
                    // Without a word from the zygote: it died, and the helper is gone.
                    self.helper_gone(ExitInfo::Code(SETUP_FAILED));
                }
            }
            Event::Output(stream, chunk) if self.streams_open[slot(stream)] => {
                let n = self.output.admit(stream, chunk, self.config.cap);
                if n > 0 {
                    reply.forward = Some((stream, Cow::Borrowed(&chunk[..n])));
                }
                if n < chunk.len() {
                    reply.kill = self.stop(End::OutputLimit);
                }
            }
            Event::Output(..) => {}
            Event::OutputClosed(stream) => self.streams_open[slot(stream)] = false,
            Event::HelperExited(info) => self.helper_gone(info),
            Event::Deadline => {
                self.deadline_passed = true;
                if self.ended_known() {
                    self.abandon();
                } else {
                    reply.kill = self.stop(End::TimedOut);
                }
            }
            Event::Cancel => reply.kill = self.stop(End::Cancelled),
        }
        reply
    }

    fn apply(&mut self, message: Message, told: &mut Vec<u8>) {
        match message {
            Message::Ready(e) => self.enforcement = Some(e),
            Message::Failed(e) => self.failed = Some(e),
            Message::Exited(info) => self.exit = Some(info),
            Message::Ended(info) => {
                self.ended.get_or_insert(info);
                self.after_end();
            }
            // The helper has killed the tree itself and lands nothing.
            Message::WriteLimit(_) => {
                if self.end == End::Exited {
                    self.end = End::WriteLimit;
                }
            }
            Message::Prepared(_) => {}
            // The refusals, changes and discards: carried to the outcome, and the text
            // they tell the caller passed on as stderr.
            finding => told.extend(self.findings.take_in(finding)),
        }
    }

    /// The first reason to end wins; the kill is asked only while the helper lives.
    fn stop(&mut self, why: End) -> bool {
        if self.end != End::Exited {
            return false;
        }
        self.end = why;
        !self.ended_known()
    }

    fn helper_gone(&mut self, info: ExitInfo) {
        self.gone.get_or_insert(info);
        self.after_end();
    }

    fn after_end(&mut self) {
        if self.deadline_passed {
            self.abandon();
        }
    }

    /// Past the deadline with the helper gone: whatever still holds a pipe is not the
    /// call's to wait for.
    fn abandon(&mut self) {
        self.streams_open = [false; 2];
        self.reports_open = false;
    }

    /// The helper has ended (its whole tree with it).
    pub(crate) fn ended_known(&self) -> bool {
        self.ended.is_some() || self.gone.is_some()
    }

    /// Whether the report pipe is still to be read.
    pub(crate) fn wants_reports(&self) -> bool {
        self.reports_open && (self.config.settle || self.ended.is_none())
    }

    /// Whether `stream` is still to be read.
    pub(crate) fn wants_output(&self, stream: Stream) -> bool {
        self.streams_open[slot(stream)]
    }

    /// The call is over: the helper has ended, the output is read (unless the call was
    /// stopped) and the reports are done.
    pub(crate) fn done(&self) -> bool {
        let streams_done = self.streams_open == [false; 2];
        self.ended_known() && (streams_done || self.end != End::Exited) && !self.wants_reports()
    }

    /// Why the command ended, so far.
    #[cfg(test)]
    pub(crate) fn end(&self) -> End {
        self.end
    }

    /// How far the start got.
    pub(crate) fn start(&self) -> Start {
        if self.failed.is_some() {
            Start::Failed
        } else if self.enforcement.is_some() {
            Start::Ready
        } else if self.ended_known() || !self.reports_open {
            Start::Gone
        } else {
            Start::Waiting
        }
    }

    /// What the helper enforced (once [`Start::Ready`]).
    pub(crate) fn enforcement(&self) -> Option<&Enforcement> {
        self.enforcement.as_ref()
    }
}

impl Supervisor {
    /// The status the helper ended with, as far as known.
    fn status(&self) -> Option<ExitInfo> {
        self.ended.or(self.gone)
    }

    /// The call's result, once [`Supervisor::done`]: a stage's failure, the helper gone
    /// before confining the command, or the [`Outcome`] (its output taken out of here).
    pub(crate) fn finish(&mut self) -> Result<Outcome, SandboxError> {
        if let Some(e) = self.failed.take() {
            return Err(e.into());
        }
        let Some(enforcement) = self.enforcement.take() else {
            return Err(self.gone_error(None, None));
        };
        let exit = self
            .exit
            .or(self.status())
            .unwrap_or(ExitInfo::Code(SETUP_FAILED));
        Ok(Outcome {
            exit,
            end: self.end,
            stdout: std::mem::take(&mut self.output.stdout),
            stderr: std::mem::take(&mut self.output.stderr),
            truncated: self.output.truncated,
            enforcement,
            findings: std::mem::take(&mut self.findings),
        })
    }

    /// The error for a start that did not reach [`Start::Ready`]: the stage's failure, or
    /// the helper gone (naming `helper`, quoting what it wrote to stderr when the driver has
    /// it; else the caller has seen it already).
    pub(crate) fn not_started(
        self,
        helper: Option<&std::path::Path>,
        stderr: Option<&str>,
    ) -> SandboxError {
        match self.failed {
            Some(e) => e.into(),
            None => self.gone_error(helper, stderr),
        }
    }

    fn gone_error(&self, helper: Option<&std::path::Path>, stderr: Option<&str>) -> SandboxError {
        // A zygote's reports ending without its `Ended` line: nothing is known of the status.
        let known = match self.config.reaper {
            Reaper::Zygote => self.ended,
            Reaper::Driver => self.status(),
        };
        ending::helper_gone(self.config.helper, known, helper, stderr)
    }
}
