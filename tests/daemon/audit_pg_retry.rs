//! The audit log on PostgreSQL when the answer to an append's COMMIT is lost with its
//! connection: a daemon reaches the database through a loopback relay that forwards the
//! protocol and, once, swallows the server's `CommandComplete` for the COMMIT of the
//! `session.create` record's transaction and closes both sides (the record is committed, the
//! daemon never hears so). The daemon retries on a new connection; the log must still hold that
//! record once, and `zeroclaw audit verify` must pass. The same for the other writes: `audit
//! prune` whose DELETE's answer is lost still reports what it pruned, and `store copy` whose
//! copied records' answer is lost still succeeds. Skipped (printed) without a PostgreSQL server,
//! a failure with `CI=true`.

use crate::support;

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use support::model_server::ModelServer;
use support::postgres::TestDb;
use support::ws_conn::{Endpoint, Upgrade};
use support::ws_daemon::Daemon;

/// The first 4 bytes of an SSLRequest and a GSSENCRequest: the server answers each with one
/// byte before the startup message.
const ENCRYPTION_REQUESTS: [u32; 2] = [80_877_103, 80_877_104];

/// A loopback TCP relay to a PostgreSQL server that, once, drops the server's word that the
/// transaction of a statement containing `statement` (with parameters containing `bound`)
/// committed, and closes both sides: the `CommandComplete` of its COMMIT (`C` "COMMIT"), or,
/// for a statement outside a transaction block, the `ReadyForQuery` that ends its implicit one
/// (`Z` 'I').
struct Relay {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    /// Set when the COMMIT's answer was dropped.
    fired: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl Relay {
    fn start(server: SocketAddr, statement: &'static [u8], bound: &'static [u8]) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let fired = Arc::new(AtomicBool::new(false));
        let (stopping, firing) = (stop.clone(), fired.clone());
        let accept = std::thread::spawn(move || {
            for client in listener.incoming() {
                if stopping.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(client) = client else { continue };
                let fired = firing.clone();
                std::thread::spawn(move || {
                    let _ = relay(client, server, (statement, bound), &fired);
                });
            }
        });
        Relay {
            addr,
            stop,
            fired,
            accept: Some(accept),
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
    }
}

/// Reads `n` bytes, or `None` at the end of the stream.
fn read_n(from: &mut TcpStream, n: usize) -> Option<Vec<u8>> {
    let mut buf = vec![0; n];
    from.read_exact(&mut buf).ok()?;
    Some(buf)
}

/// One message: its type byte (none in the startup phase) and the whole message as sent.
fn read_message(from: &mut TcpStream, typed: bool) -> Option<(u8, Vec<u8>)> {
    let mut message = if typed { read_n(from, 1)? } else { Vec::new() };
    let kind = message.first().copied().unwrap_or(0);
    let length = read_n(from, 4)?;
    let body = u32::from_be_bytes(length.clone().try_into().unwrap()) as usize;
    message.extend_from_slice(&length);
    message.extend(read_n(from, body.checked_sub(4)?)?);
    Some((kind, message))
}

fn relay(
    mut client: TcpStream,
    server: SocketAddr,
    (statement, bound): (&'static [u8], &'static [u8]),
    fired: &AtomicBool,
) -> Option<()> {
    let mut upstream = TcpStream::connect(server).ok()?;
    // The startup phase: encryption requests (answered by one byte), then the startup message.
    loop {
        let (_, message) = read_message(&mut client, false)?;
        upstream.write_all(&message).ok()?;
        let code = u32::from_be_bytes(message[4..8].try_into().unwrap());
        if !ENCRYPTION_REQUESTS.contains(&code) {
            break;
        }
        let answer = read_n(&mut upstream, 1)?;
        client.write_all(&answer).ok()?;
    }
    let armed = Arc::new(AtomicBool::new(false));
    let (mut from_client, mut to_server) = (client.try_clone().ok()?, upstream.try_clone().ok()?);
    let arming = armed.clone();
    let forward = std::thread::spawn(move || {
        let mut parsed = false;
        while let Some((kind, message)) = read_message(&mut from_client, true) {
            match kind {
                b'P' => parsed = contains(&message, statement),
                b'B' if parsed && contains(&message, bound) => {
                    arming.store(true, Ordering::SeqCst);
                }
                _ => {}
            }
            if to_server.write_all(&message).is_err() {
                break;
            }
        }
        let _ = to_server.shutdown(Shutdown::Both);
    });
    while let Some((kind, message)) = read_message(&mut upstream, true) {
        let commit_done = (kind == b'C' && message.ends_with(b"COMMIT\0"))
            || (kind == b'Z' && message.get(5) == Some(&b'I'));
        if commit_done && armed.load(Ordering::SeqCst) && !fired.swap(true, Ordering::SeqCst) {
            break;
        }
        if client.write_all(&message).is_err() {
            break;
        }
    }
    let _ = client.shutdown(Shutdown::Both);
    let _ = upstream.shutdown(Shutdown::Both);
    let _ = forward.join();
    Some(())
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || haystack.windows(needle.len()).any(|w| w == needle)
}

/// `url` with its `host:port` replaced by `addr`, and the `host:port` it named.
fn through(url: &str, addr: SocketAddr) -> (String, SocketAddr) {
    let start = url
        .find('@')
        .or_else(|| url.find("://").map(|i| i + 2))
        .unwrap()
        + 1;
    let end = url[start..]
        .find(['/', '?'])
        .map_or(url.len(), |i| start + i);
    let server = url[start..end]
        .to_socket_addrs()
        .unwrap()
        .next()
        .expect("the server's address");
    (format!("{}{addr}{}", &url[..start], &url[end..]), server)
}

#[test]
fn an_append_whose_commit_answer_is_lost_is_recorded_once_and_verifies() {
    let Some(db) = TestDb::create() else { return };
    let (_, server) = through(&db.url, "127.0.0.1:1".parse().unwrap());
    let relay = Relay::start(
        server,
        b"INSERT INTO audit_records",
        br#""kind":"session.create""#,
    );
    let (relayed_url, _) = through(&db.url, relay.addr);
    let model = ModelServer::start_blocking(vec![]);
    let work = tempfile::tempdir().unwrap();
    let daemon = Daemon::builder()
        .model(model.base_url())
        .env("ZEROCLAW_store__url", relayed_url)
        .spawn();
    let unix = Upgrade::new(Endpoint::Unix(daemon.unix().to_path_buf()));
    let client = support::acp_client::AcpClient::connect(&unix, daemon.config_dir()).unwrap();
    client.initialize();
    let session = client.new_session(work.path());
    assert!(
        relay.fired.load(Ordering::SeqCst),
        "the relay never saw the session.create record's COMMIT"
    );
    let creates = db.query_text(&format!(
        "SELECT count(*)::text FROM audit_records
         WHERE body LIKE '%\"kind\":\"session.create\"%' AND body LIKE '%\"session\":\"{session}\"%'"
    ));
    assert_eq!(
        creates.as_deref(),
        Some("1"),
        "the session.create record is there once"
    );
    drop(client);
    let verify = std::process::Command::new(env!("CARGO_BIN_EXE_zeroclaw"))
        .args(["audit", "verify"])
        .env("ZEROCLAW_store__url", &db.url)
        .env("ZEROCLAW_CONFIG_DIR", daemon.config_dir())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&verify.stdout);
    assert!(verify.status.success(), "{text}{verify:?}");
    assert!(text.starts_with("ok: "), "{text}");
    drop(daemon);
    drop(relay);
}

/// `zeroclaw ARGS` for the config in `config_dir`, on the store at `url`.
fn zeroclaw(config_dir: &std::path::Path, url: &str, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_zeroclaw"))
        .args(args)
        .env("ZEROCLAW_store__url", url)
        .env("ZEROCLAW_CONFIG_DIR", config_dir)
        .output()
        .unwrap()
}

fn stdout_ok(config_dir: &std::path::Path, url: &str, args: &[&str]) -> String {
    let out = zeroclaw(config_dir, url, args);
    assert!(out.status.success(), "zeroclaw {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// A daemon with its own config dir (kept) that made and closed one session on `url`'s store
/// (none: its SQLite file), and stopped.
fn one_session(config_dir: &std::path::Path, url: Option<&str>) {
    let model = ModelServer::start_blocking(vec![]);
    let work = tempfile::tempdir().unwrap();
    let mut builder = Daemon::builder()
        .config_dir(config_dir)
        .model(model.base_url());
    if let Some(url) = url {
        builder = builder.env("ZEROCLAW_store__url", url);
    }
    let daemon = builder.spawn();
    let unix = Upgrade::new(Endpoint::Unix(daemon.unix().to_path_buf()));
    let client = support::acp_client::AcpClient::connect(&unix, daemon.config_dir()).unwrap();
    client.initialize();
    let session = client.new_session(work.path());
    client.call("session/close", serde_json::json!({"sessionId": session}));
    drop(client);
    drop(daemon);
}

#[test]
fn a_prune_whose_commit_answer_is_lost_reports_what_it_pruned_and_verifies() {
    let Some(db) = TestDb::create() else { return };
    let config = tempfile::tempdir().unwrap();
    one_session(config.path(), Some(&db.url));
    let count = db
        .query_text("SELECT count(*)::text FROM audit_records")
        .unwrap();
    let (_, server) = through(&db.url, "127.0.0.1:1".parse().unwrap());
    let relay = Relay::start(server, b"DELETE FROM audit_records", b"");
    let (relayed_url, _) = through(&db.url, relay.addr);
    let pruned = stdout_ok(
        config.path(),
        &relayed_url,
        &["audit", "prune", "--before", "2999-01-01"],
    );
    assert!(relay.fired.load(Ordering::SeqCst), "no DELETE was relayed");
    assert!(
        pruned.starts_with(&format!("pruned {count} records")),
        "{pruned}"
    );
    let left = db.query_text("SELECT string_agg(body, ',') FROM audit_records");
    assert!(
        left.as_deref()
            .unwrap_or("")
            .contains(r#""kind":"checkpoint""#),
        "{left:?}"
    );
    let verified = stdout_ok(config.path(), &db.url, &["audit", "verify"]);
    assert!(verified.starts_with("ok: 1 records"), "{verified}");
}

#[test]
fn a_copy_whose_commit_answer_is_lost_succeeds_with_every_record_once() {
    let Some(db) = TestDb::create() else { return };
    let config = tempfile::tempdir().unwrap();
    one_session(config.path(), None);
    let sqlite = config.path().join("workspace/sessions/acp-sessions.db");
    let from = format!("sqlite:{}", sqlite.display());
    let records = stdout_ok(config.path(), &from, &["audit", "export"])
        .lines()
        .count();
    let (_, server) = through(&db.url, "127.0.0.1:1".parse().unwrap());
    let relay = Relay::start(server, b"INSERT INTO audit_records", b"");
    let (relayed_url, _) = through(&db.url, relay.addr);
    let copied = stdout_ok(
        config.path(),
        &from,
        &["store", "copy", "--from", &from, "--to", &relayed_url],
    );
    assert!(relay.fired.load(Ordering::SeqCst), "no INSERT was relayed");
    assert!(
        copied.contains(&format!("copied {records} audit records")),
        "{copied}"
    );
    let verified = stdout_ok(config.path(), &db.url, &["audit", "verify"]);
    assert!(
        verified.starts_with(&format!("ok: {records} records")),
        "{verified}"
    );
}
