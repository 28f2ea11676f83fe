//! Who owns the daemon's Unix socket path, judged from outside with real daemons: a second
//! daemon on the same config refuses a live socket (naming it and the first daemon's pid) and
//! the first keeps answering on it; a stale socket file is replaced; a regular file is refused
//! and left untouched; a busy TCP address is named (and the socket bound before it removed);
//! a socket file someone else put in place is not removed when the daemon exits.

use crate::support;

use std::os::unix::fs::MetadataExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::process::ExitStatus;

use support::ws_conn::{raw_get, status_of};
use support::ws_daemon::{Daemon, Launched, listen_value, zeroclaw};

/// `zeroclaw daemon` in `config_dir` listening on `listen` (a TOML array), run to its exit.
fn daemon_exit(config_dir: &Path, listen: &str) -> (ExitStatus, String) {
    let mut cmd = zeroclaw(config_dir);
    cmd.arg("daemon")
        .env("ZEROCLAW_gateway__listen", listen)
        .current_dir(config_dir);
    let mut launched = Launched::spawn(cmd);
    let status = launched.wait_exit();
    (status, launched.text())
}

/// `GET /health` over a Unix socket: the HTTP status.
fn health_over(path: &Path) -> u16 {
    let stream =
        UnixStream::connect(path).unwrap_or_else(|e| panic!("connect {}: {e}", path.display()));
    status_of(&raw_get(stream, "/health", &[], false))
}

fn inode(path: &Path) -> u64 {
    std::fs::symlink_metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .ino()
}

#[test]
fn a_second_daemon_refuses_a_live_socket_and_the_first_keeps_serving_on_it() {
    let first = Daemon::builder().no_token().spawn();
    let socket = first.unix().to_path_buf();
    let before = inode(&socket);
    let (status, text) = daemon_exit(first.config_dir(), &listen_value(Some(&socket), true));
    assert!(!status.success(), "the second daemon started:\n{text}");
    assert!(
        text.contains(&socket.display().to_string()),
        "no socket path in:\n{text}"
    );
    assert!(
        text.contains(&format!("pid {}", first.pid())),
        "no pid of the first daemon in:\n{text}"
    );
    assert_eq!(inode(&socket), before, "the socket file was replaced");
    assert_eq!(health_over(&socket), 200, "{}", first.log());
}

#[test]
fn a_stale_socket_file_is_replaced_and_the_daemon_serves_on_it() {
    let config = tempfile::tempdir().unwrap();
    let socket = config.path().join("stale.sock");
    drop(UnixListener::bind(&socket).unwrap());
    let mut cmd = zeroclaw(config.path());
    cmd.arg("daemon")
        .env(
            "ZEROCLAW_gateway__listen",
            listen_value(Some(&socket), false),
        )
        .current_dir(config.path());
    let mut launched = Launched::spawn(cmd);
    launched.wait_unix();
    assert_eq!(health_over(&socket), 200, "{}", launched.text());
    launched.signal(libc::SIGTERM);
    assert!(launched.wait_exit().success(), "{}", launched.text());
    assert!(
        !socket.exists(),
        "the daemon's own socket is removed on exit"
    );
}

#[test]
fn a_regular_file_at_the_socket_path_is_refused_and_left_untouched() {
    let config = tempfile::tempdir().unwrap();
    let path = config.path().join("not-a-socket");
    std::fs::write(&path, "keep me").unwrap();
    let (status, text) = daemon_exit(config.path(), &listen_value(Some(&path), false));
    assert!(!status.success(), "the daemon started:\n{text}");
    assert!(text.contains(&path.display().to_string()), "{text}");
    assert!(text.contains("not a socket"), "{text}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "keep me");
}

#[test]
fn a_busy_tcp_address_is_named_and_the_socket_bound_before_it_is_removed() {
    let config = tempfile::tempdir().unwrap();
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = busy.local_addr().unwrap();
    let socket = config.path().join("z.sock");
    let listen = format!("[\"unix:{}\", \"tcp:{addr}\"]", socket.display());
    let (status, text) = daemon_exit(config.path(), &listen);
    assert!(!status.success(), "the daemon started:\n{text}");
    assert!(text.contains(&format!("tcp:{addr}")), "{text}");
    assert!(text.contains("in use"), "{text}");
    assert!(
        !socket.exists(),
        "the socket bound before the failure is left behind"
    );
}

#[test]
fn a_socket_file_replaced_under_a_running_daemon_is_not_removed_at_its_exit() {
    let mut daemon = Daemon::builder().no_token().spawn();
    let socket = daemon.unix().to_path_buf();
    std::fs::remove_file(&socket).unwrap();
    let _other = UnixListener::bind(&socket).unwrap();
    let other = inode(&socket);
    assert!(daemon.terminate().success(), "{}", daemon.log());
    assert_eq!(
        inode(&socket),
        other,
        "the daemon removed a socket it did not bind"
    );
}
