//! The supervisor fed fabricated events: what it passes on, when it kills, when the call is
//! over and what it ends with.

use super::*;
use crate::error::SandboxError;
use crate::error::{SetupError, Stage};
use crate::wire::{Enforcement, ExitInfo, Message};

fn daemon(cap: u64, settle: bool) -> Supervisor {
    Supervisor::new(Config {
        cap,
        keep: true,
        settle,
        reaper: Reaper::Zygote,
        helper: crate::error::HelperNames::of(crate::Backend::Namespaces),
    })
}

fn foreground(cap: u64) -> Supervisor {
    Supervisor::new(Config {
        cap,
        keep: false,
        settle: false,
        reaper: Reaper::Driver,
        helper: crate::error::HelperNames::of(crate::Backend::Namespaces),
    })
}

fn line(m: Message) -> Vec<u8> {
    m.encode()
}

fn ready() -> Vec<u8> {
    line(Message::Ready(Enforcement {
        backend: "test".into(),
        ..Enforcement::default()
    }))
}

fn forwarded(reply: &Reply<'_>) -> Option<(Stream, Vec<u8>)> {
    reply.forward.as_ref().map(|(s, b)| (*s, b.to_vec()))
}

fn close_streams(s: &mut Supervisor) {
    s.feed(Event::OutputClosed(Stream::Stdout));
    s.feed(Event::OutputClosed(Stream::Stderr));
}

fn err_text(e: SandboxError) -> String {
    match e {
        SandboxError::Setup(e) => format!("{}: {}", e.call, e.hint),
        other => panic!("not a setup error: {other:?}"),
    }
}

#[test]
fn the_cap_cuts_mid_chunk_across_both_streams_and_asks_one_kill() {
    let mut s = daemon(10, false);
    s.feed(Event::Report(&ready()));
    let r = s.feed(Event::Output(Stream::Stdout, b"123456"));
    assert_eq!(forwarded(&r), Some((Stream::Stdout, b"123456".to_vec())));
    assert!(!r.kill);
    let r = s.feed(Event::Output(Stream::Stderr, b"abcdefgh"));
    assert_eq!(forwarded(&r), Some((Stream::Stderr, b"abcd".to_vec())));
    assert!(r.kill, "over the cap: kill the tree");
    assert_eq!(s.end(), End::OutputLimit);
    let r = s.feed(Event::Output(Stream::Stdout, b"more"));
    assert_eq!(
        (forwarded(&r), r.kill),
        (None, false),
        "nothing more, no second kill"
    );
    s.feed(Event::Report(&line(Message::Ended(ExitInfo::Signal(15)))));
    assert!(
        s.done(),
        "stopped and ended: the open streams are not waited for"
    );
    let o = s.finish().unwrap();
    assert_eq!(o.end, End::OutputLimit);
    assert_eq!((o.stdout, o.stderr), (b"123456".to_vec(), b"abcd".to_vec()));
    assert!(o.truncated);
    assert_eq!(o.exit, ExitInfo::Signal(15));
}

#[test]
fn a_chunk_that_exactly_fills_the_cap_is_not_cut() {
    let mut s = foreground(4);
    s.feed(Event::Report(&ready()));
    let r = s.feed(Event::Output(Stream::Stdout, b"1234"));
    assert!(!r.kill);
    assert_eq!(s.end(), End::Exited);
    let r = s.feed(Event::Output(Stream::Stdout, b"5"));
    assert_eq!((forwarded(&r), r.kill), (None, true));
}

#[test]
fn a_report_split_across_reads_is_joined() {
    let mut s = daemon(100, false);
    let bytes = [ready(), line(Message::Exited(ExitInfo::Code(3)))].concat();
    let (a, b) = bytes.split_at(5);
    s.feed(Event::Report(a));
    assert_eq!(s.start(), Start::Waiting);
    s.feed(Event::Report(&b[..b.len() - 2]));
    assert_eq!(s.start(), Start::Ready);
    assert_eq!(s.enforcement().map(|e| e.backend.as_str()), Some("test"));
    s.feed(Event::Report(&b[b.len() - 2..]));
    s.feed(Event::Report(&line(Message::Ended(ExitInfo::Code(0)))));
    close_streams(&mut s);
    assert!(s.done());
    let o = s.finish().unwrap();
    assert_eq!(
        o.exit,
        ExitInfo::Code(3),
        "the command's own exit beats the helper's"
    );
    assert_eq!(o.end, End::Exited);
}

#[test]
fn a_helper_reaped_before_its_ready_report_did_not_confine() {
    let mut s = foreground(100);
    s.feed(Event::Report(b"garbage\n"));
    s.feed(Event::HelperExited(ExitInfo::Code(1)));
    assert_eq!(s.start(), Start::Gone);
    s.feed(Event::ReportClosed);
    close_streams(&mut s);
    assert!(s.done());
    let text = err_text(s.finish().unwrap_err());
    assert!(
        text.contains("ended (Code(1)) before confining the command"),
        "{text}"
    );
    assert!(text.contains("printed above"), "{text}");
}

#[test]
fn a_zygote_gone_silent_before_ready_is_quoted() {
    let mut s = daemon(100, false);
    s.feed(Event::ReportClosed);
    assert_eq!(s.start(), Start::Gone);
    assert!(s.ended_known(), "the zygote's end takes the helper with it");
    let text = err_text(s.not_started(Some(std::path::Path::new("/bin/h")), Some("boom")));
    assert!(
        text.contains("helper /bin/h ended (without a word) before confining the command: boom"),
        "{text}"
    );
}

#[test]
fn a_stage_failure_wins() {
    let mut s = daemon(100, false);
    let failure = SetupError::new(Stage::Landlock, "landlock_restrict_self()");
    s.feed(Event::Report(&line(Message::Failed(failure))));
    s.feed(Event::Report(&line(Message::Ended(ExitInfo::Code(125)))));
    assert_eq!(s.start(), Start::Failed);
    let text = err_text(s.not_started(None, Some("ignored")));
    assert!(text.starts_with("landlock_restrict_self()"), "{text}");
}

#[test]
fn the_deadline_kills_once_then_waits_for_the_end() {
    let mut s = foreground(100);
    s.feed(Event::Report(&ready()));
    let r = s.feed(Event::Deadline);
    assert!(r.kill);
    assert_eq!(s.end(), End::TimedOut);
    assert!(!s.done(), "the helper has not ended yet");
    assert!(!s.feed(Event::Cancel).kill, "the first reason stays");
    s.feed(Event::HelperExited(ExitInfo::Signal(9)));
    assert!(
        !s.wants_output(Stream::Stdout),
        "past the deadline, pipes are dropped"
    );
    assert!(s.done());
    let o = s.finish().unwrap();
    assert_eq!((o.end, o.exit), (End::TimedOut, ExitInfo::Signal(9)));
}

#[test]
fn past_the_deadline_an_ended_call_stops_waiting_for_held_pipes() {
    let mut s = daemon(100, false);
    s.feed(Event::Report(
        &[ready(), line(Message::Ended(ExitInfo::Code(0)))].concat(),
    ));
    assert!(!s.done(), "output still open");
    let r = s.feed(Event::Deadline);
    assert!(!r.kill, "nothing left to kill");
    assert!(s.done());
    assert_eq!(s.finish().unwrap().end, End::Exited);
}

#[test]
fn cancel_kills_while_running_and_only_marks_after_the_end() {
    let mut s = daemon(100, false);
    s.feed(Event::Report(&ready()));
    assert!(s.feed(Event::Cancel).kill);
    assert_eq!(s.end(), End::Cancelled);

    let mut s = daemon(100, false);
    s.feed(Event::Report(
        &[ready(), line(Message::Ended(ExitInfo::Code(0)))].concat(),
    ));
    assert!(!s.feed(Event::Cancel).kill, "the helper is gone");
    assert!(s.done(), "cancelled: the open streams are not drained");
    assert_eq!(s.finish().unwrap().end, End::Cancelled);
}

#[test]
fn both_streams_are_kept_apart_and_both_must_end() {
    let mut s = daemon(100, false);
    s.feed(Event::Report(&ready()));
    s.feed(Event::Output(Stream::Stdout, b"out1 "));
    s.feed(Event::Output(Stream::Stderr, b"err"));
    s.feed(Event::Output(Stream::Stdout, b"out2"));
    s.feed(Event::Report(&line(Message::Ended(ExitInfo::Code(0)))));
    s.feed(Event::OutputClosed(Stream::Stdout));
    assert!(!s.done(), "stderr still open");
    s.feed(Event::OutputClosed(Stream::Stderr));
    assert!(s.done());
    let o = s.finish().unwrap();
    assert_eq!(
        (o.stdout, o.stderr),
        (b"out1 out2".to_vec(), b"err".to_vec())
    );
    assert!(!o.truncated);
}

#[test]
fn a_foreground_run_counts_but_keeps_nothing() {
    let mut s = foreground(100);
    s.feed(Event::Report(&ready()));
    s.feed(Event::Output(Stream::Stdout, b"seen"));
    s.feed(Event::HelperExited(ExitInfo::Code(0)));
    close_streams(&mut s);
    assert!(
        s.wants_reports(),
        "the report pipe may still hold the last word"
    );
    s.feed(Event::ReportClosed);
    assert!(s.done());
    let o = s.finish().unwrap();
    assert!(o.stdout.is_empty());
    assert_eq!(o.exit, ExitInfo::Code(0));
}

#[test]
fn a_settling_supervisor_reads_every_report_and_tells_refusals() {
    let mut s = daemon(100, true);
    s.feed(Event::Report(&ready()));
    close_streams(&mut s);
    s.feed(Event::Report(&line(Message::Ended(ExitInfo::Code(0)))));
    assert!(!s.done(), "settling: every report up to the helper's exit");
    let refused = line(Message::Refused(vec!["refused hook".into()]));
    let r = s.feed(Event::Report(&refused));
    assert_eq!(
        forwarded(&r),
        Some((Stream::Stderr, b"refused hook\n".to_vec()))
    );
    s.feed(Event::Report(&line(Message::Ended(ExitInfo::Code(7)))));
    assert!(s.wants_reports() && !s.done());
    s.feed(Event::ReportClosed);
    assert!(s.done());
    let o = s.finish().unwrap();
    assert_eq!(o.exit, ExitInfo::Code(0), "the first end is the call's");
    assert_eq!(o.stderr, b"refused hook\n");
    assert_eq!(
        o.findings.refused,
        ["refused hook"],
        "kept for the caller's record"
    );
}

#[test]
fn the_first_ended_report_beats_the_reaped_status() {
    let mut s = foreground(100);
    s.feed(Event::Report(&ready()));
    close_streams(&mut s);
    s.feed(Event::HelperExited(ExitInfo::Code(0)));
    assert!(!s.done());
    s.feed(Event::Report(&line(Message::Ended(ExitInfo::Code(4)))));
    assert!(s.done(), "after its last word the report pipe is not read");
    assert_eq!(s.finish().unwrap().exit, ExitInfo::Code(4));
}

#[test]
fn the_first_ended_report_ends_the_call_with_what_was_found() {
    let mut s = daemon(100, false);
    s.feed(Event::Report(&ready()));
    close_streams(&mut s);
    let found = [
        Message::Refused(vec!["refused core.fsmonitor".into()]),
        Message::Discarded(vec!["/tmp".into()]),
        Message::GitConfigChanged,
        Message::Landed {
            changed: Vec::new(),
            more: 3,
        },
        Message::Ended(ExitInfo::Code(0)),
    ];
    let lines: Vec<u8> = found.iter().flat_map(Message::encode).collect();
    let r = s.feed(Event::Report(&lines));
    assert_eq!(
        forwarded(&r),
        Some((Stream::Stderr, b"refused core.fsmonitor\n".to_vec()))
    );
    assert!(!s.wants_reports(), "one `Ended` ends the call");
    assert!(s.done());
    let findings = s.finish().unwrap().findings;
    assert_eq!(findings.refused, ["refused core.fsmonitor"]);
    assert_eq!(findings.discarded, ["/tmp"]);
    assert!(findings.git_config_changed);
    assert_eq!(findings.changed_more, 3);
}
