//! `zeroclaw acp` started by a person at a terminal: with stdin a pseudo-terminal it says, in
//! one line on stderr, that it speaks ACP on stdin/stdout and where registering it is described,
//! and writes nothing on stdout; with stdin a pipe (an editor) that line never appears.

use crate::support;

use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use support::acp_inbox::spawn_stderr_collector;
use support::ws_daemon::{HANG_GUARD, zeroclaw};

const HINT: &str = "speaks the Agent Client Protocol";

type Buffer = Arc<Mutex<Vec<u8>>>;

fn text(buffer: &Buffer) -> String {
    String::from_utf8_lossy(&buffer.lock().unwrap_or_else(|e| e.into_inner())).into_owned()
}

/// `zeroclaw acp` with the given stdin; stdout and stderr collected in the background.
fn spawn_acp(stdin: Stdio, config: &std::path::Path) -> (Child, [Buffer; 2], Vec<JoinHandle<()>>) {
    let mut cmd = zeroclaw(config);
    cmd.arg("acp")
        .current_dir(config)
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn zeroclaw acp");
    let out = Buffer::default();
    let err = Buffer::default();
    let threads = vec![
        spawn_stderr_collector(child.stdout.take().unwrap(), Arc::clone(&out)),
        spawn_stderr_collector(child.stderr.take().unwrap(), Arc::clone(&err)),
    ];
    (child, [out, err], threads)
}

#[test]
fn on_a_terminal_one_line_on_stderr_says_what_it_speaks_and_where_to_register_it() {
    let config = tempfile::tempdir().unwrap();
    let pty = nix::pty::openpty(None, None).expect("openpty");
    let (mut child, [out, err], threads) = spawn_acp(Stdio::from(pty.slave), config.path());
    let start = Instant::now();
    while !text(&err).contains('\n') && start.elapsed() < HANG_GUARD {
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    let _ = child.wait();
    drop(pty.master);
    for t in threads {
        let _ = t.join();
    }
    let stderr = text(&err);
    let line = stderr.lines().next().unwrap_or_default();
    assert!(line.contains(HINT), "{stderr:?}");
    assert!(line.contains("stdin/stdout"), "{stderr:?}");
    assert!(line.contains("Register in Zed"), "{stderr:?}");
    assert_eq!(text(&out), "", "stdout carries ACP only");
}

#[test]
fn with_a_pipe_on_stdin_the_terminal_line_never_appears() {
    let config = tempfile::tempdir().unwrap();
    let (mut child, [out, err], threads) = spawn_acp(Stdio::piped(), config.path());
    drop(child.stdin.take());
    let status = child.wait().expect("wait");
    for t in threads {
        let _ = t.join();
    }
    assert!(status.success(), "{status}: {}", text(&err));
    assert!(!text(&err).contains(HINT), "{}", text(&err));
    assert_eq!(text(&out), "");
}
