//! Escape suite, network class of `SECURITY.md` (default policy: network denied).
//!
//! The test opens real listeners outside — TCP and UDP on 127.0.0.1 and [::1], abstract and
//! pathname Unix sockets — and judges from them: after the confined attempt nothing arrived;
//! after the unconfined twin something did.

use crate::sandbox_support;

use std::fs;
use std::io::ErrorKind;
use std::net::{TcpListener, UdpSocket};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram, UnixListener};

use sandbox_support::judge::{Confine, confined, control, defaults, not_escaped};
use sandbox_support::py::{self, py};
use sandbox_support::run::Run;
use sandbox_support::world::{q, unique};
use sandbox_support::{Backend, World};

/// Something the test listens on and can ask "did anyone reach you?".
trait Listener {
    fn reached(&self) -> bool;
}

fn arrived<T>(result: std::io::Result<T>) -> bool {
    match result {
        Ok(_) => true,
        Err(e) if e.kind() == ErrorKind::WouldBlock => false,
        Err(e) => panic!("listener error: {e}"),
    }
}

impl Listener for TcpListener {
    fn reached(&self) -> bool {
        arrived(self.accept())
    }
}

impl Listener for UdpSocket {
    fn reached(&self) -> bool {
        arrived(self.recv_from(&mut [0; 512]))
    }
}

impl Listener for UnixListener {
    fn reached(&self) -> bool {
        arrived(self.accept())
    }
}

impl Listener for UnixDatagram {
    fn reached(&self) -> bool {
        arrived(self.recv(&mut [0; 512]))
    }
}

/// Confined: the script ran and the listener got nothing. Control: it got something.
fn judge_listener(w: &World, b: Backend, listener: &dyn Listener, script: &str) {
    judge_listener_with(w, b, defaults, listener, script);
}

fn judge_listener_with(
    w: &World,
    b: Backend,
    confine: Confine,
    listener: &dyn Listener,
    script: &str,
) {
    let run: Run = confined(w, b, confine, script);
    assert!(
        !listener.reached(),
        "ESCAPE: the listener outside was reached\n{run}"
    );
    let control = control(w, script);
    assert!(
        listener.reached(),
        "positive control failed: nothing reached the listener\n{control}"
    );
}

fn send(kind: &str, host: &str, port: u16) -> String {
    py(
        &py::net_send(),
        &[kind.into(), host.into(), port.to_string()],
    )
}

fn tcp(w: &World, b: Backend, bind: &str, host: &str) {
    let listener = TcpListener::bind(bind).expect("bind tcp");
    listener.set_nonblocking(true).expect("nonblocking");
    let port = listener.local_addr().expect("addr").port();
    judge_listener(w, b, &listener, &send("tcp", host, port));
}

fn udp(w: &World, b: Backend, bind: &str, host: &str, kind: &str) {
    let socket = UdpSocket::bind(bind).expect("bind udp");
    socket.set_nonblocking(true).expect("nonblocking");
    let port = socket.local_addr().expect("addr").port();
    judge_listener(w, b, &socket, &send(kind, host, port));
}

fn tcp_loopback(w: &World, b: Backend) {
    tcp(w, b, "127.0.0.1:0", "127.0.0.1");
}
per_backend!(tcp_loopback);

fn udp_loopback(w: &World, b: Backend) {
    udp(w, b, "127.0.0.1:0", "127.0.0.1", "udp");
}
per_backend!(udp_loopback);

fn tcp_ipv6_loopback(w: &World, b: Backend) {
    tcp(w, b, "[::1]:0", "::1");
}
per_backend!(tcp_ipv6_loopback);

fn udp_ipv6_loopback(w: &World, b: Backend) {
    udp(w, b, "[::1]:0", "::1", "udp");
}
per_backend!(udp_ipv6_loopback);

/// A DNS query for `localhost` to a resolver the test runs on loopback.
fn dns_query(w: &World, b: Backend) {
    udp(w, b, "127.0.0.1:0", "127.0.0.1", "dns");
}
per_backend!(dns_query);

/// A hand-made UDP datagram through a raw IP socket.
fn raw_socket(w: &World, b: Backend) {
    udp(w, b, "127.0.0.1:0", "127.0.0.1", "raw_udp");
}
per_backend!(raw_socket);

fn abstract_unix_socket(w: &World, b: Backend) {
    let name = unique("zc-abstract-");
    let addr = SocketAddr::from_abstract_name(name.as_bytes()).expect("abstract name");
    let listener = UnixListener::bind_addr(&addr).expect("bind abstract");
    listener.set_nonblocking(true).expect("nonblocking");
    judge_listener(w, b, &listener, &send("unix", &format!("@{name}"), 0));
}
per_backend!(abstract_unix_socket);

/// A pathname socket outside the workspace, like an ssh-agent or docker.sock.
fn pathname_unix_socket(w: &World, b: Backend) {
    let path = w.outside.join("agent.sock");
    let listener = UnixListener::bind(&path).expect("bind unix");
    listener.set_nonblocking(true).expect("nonblocking");
    judge_listener(
        w,
        b,
        &listener,
        &send("unix", &path.display().to_string(), 0),
    );
}
per_backend!(pathname_unix_socket);

fn packet_socket(w: &World, b: Backend) {
    not_escaped(w, b, defaults, &py(&py::packet_socket(), &[]));
}
per_backend!(packet_socket);

/// `NETLINK_ROUTE` must not reveal the host's interfaces.
fn netlink_route(w: &World, b: Backend) {
    let host: Vec<String> = fs::read_dir("/sys/class/net")
        .expect("/sys/class/net")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n != "lo")
        .collect();
    let script = py(&py::netlink_links(), &[]);
    let run = confined(w, b, defaults, &script);
    for name in &host {
        assert!(
            !run.stdout.contains(&format!("IF:{name}\n")),
            "ESCAPE: host interface {name} visible\n{run}"
        );
    }
    let control = control(w, &script);
    assert!(
        host.iter()
            .any(|n| control.stdout.contains(&format!("IF:{n}\n"))),
        "positive control failed (host interfaces {host:?})\n{control}"
    );
}
per_backend!(netlink_route);

/// An IPv4 socket made through the i386 syscall table (`int 0x80`), then a datagram.
fn i386_socket(w: &World, b: Backend) {
    let socket = UdpSocket::bind("127.0.0.1:0").expect("bind udp");
    socket.set_nonblocking(true).expect("nonblocking");
    let port = socket.local_addr().expect("addr").port();
    let script = py(&py::i386(), &["socket".into(), port.to_string()]);
    judge_listener(w, b, &socket, &script);
}
per_backend!(i386_socket);

/// `--network allow` opens the host's network, not the host's Unix sockets: an ssh-agent or
/// docker.sock outside the allowed roots stays unreachable.
fn pathname_unix_socket_with_network_allowed(w: &World, b: Backend) {
    let path = w.outside.join("agent.sock");
    let listener = UnixListener::bind(&path).expect("bind unix");
    listener.set_nonblocking(true).expect("nonblocking");
    let script = send("unix", &path.display().to_string(), 0);
    judge_listener_with(w, b, |s, _| s.network_allow(), &listener, &script);
}
per_backend!(pathname_unix_socket_with_network_allowed);

/// The same through a symlink planted in the workspace, and through a relative path.
fn pathname_unix_socket_through_a_workspace_link(w: &World, b: Backend) {
    let path = w.outside.join("agent.sock");
    let listener = UnixListener::bind(&path).expect("bind unix");
    listener.set_nonblocking(true).expect("nonblocking");
    std::os::unix::fs::symlink(&path, w.ws.join("agent-link.sock")).expect("symlink");
    let script = format!(
        "{}; cd {} && {}",
        send("unix", "agent-link.sock", 0),
        q(&w.outside),
        send("unix", "agent.sock", 0)
    );
    judge_listener_with(w, b, |s, _| s.network_allow(), &listener, &script);
}
per_backend!(pathname_unix_socket_through_a_workspace_link);

/// A Unix datagram (`sendto` a path, as to `/dev/log` or journald) outside the roots, network
/// allowed: on the Landlock-only rung the filter cannot read sendto's address, so no Unix
/// datagram socket can be made there at all.
fn unix_datagram_with_network_allowed(w: &World, b: Backend) {
    let path = w.outside.join("log.sock");
    let sink = UnixDatagram::bind(&path).expect("bind unix dgram");
    sink.set_nonblocking(true).expect("nonblocking");
    let src = format!(
        r#"
import socket, sys
for make in (lambda: socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM),
             lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)[0]):
    try:
        s = make()
        s.sendto(b"zc", {path:?})
        print("ZC_ESCAPED dgram", flush=True)
    except OSError as e:
        print("dgram failed:", e, flush=True)
"#,
        path = path.display().to_string()
    );
    judge_listener_with(w, b, |s, _| s.network_allow(), &sink, &py(&src, &[]));
}
per_backend!(unix_datagram_with_network_allowed);

/// `--network allow` grants no privilege: a raw IP socket still needs CAP_NET_RAW.
fn raw_socket_with_network_allowed(w: &World, b: Backend) {
    let socket = UdpSocket::bind("127.0.0.1:0").expect("bind udp");
    socket.set_nonblocking(true).expect("nonblocking");
    let port = socket.local_addr().expect("addr").port();
    let script = send("raw_udp", "127.0.0.1", port);
    judge_listener_with(w, b, |s, _| s.network_allow(), &socket, &script);
}
per_backend!(raw_socket_with_network_allowed);
