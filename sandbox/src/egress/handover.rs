//! The child-side piece of the egress proxy's design: inside a child's network namespace
//! (which has only `lo`), bind the proxy's two TCP listeners on 127.0.0.1 and hand them to the
//! daemon over a Unix socket (`SCM_RIGHTS`), closing our copies, so the command can connect to
//! them but never accept on them; the daemon accepts on them directly (a socket keeps the
//! namespace it was made in). The helper calls [`bind_and_send`] on the plan socket
//! (`helper/egress.rs`), the launcher [`receive`] once the helper reported ready.
//!
//! Transparent egress (the namespace backend, [`bind_and_send_with`]) adds, in the same
//! message, the DNS stub's UDP socket on 127.0.0.1:53 and one TCP listener on `0.0.0.0` per
//! destination port the policy can allow: with every IPv4 address local to `lo`
//! ([`crate::sys::local_route_all`]), a connection to any address at such a port lands on
//! that listener, and its local address is the destination the command asked for. Last
//! comes the watch on the connections the kernel refused ([`crate::egress::refused_watch`]), when
//! the raw socket could be made.

use std::io::{IoSlice, IoSliceMut};
use std::net::{TcpListener, UdpSocket};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};

use nix::sys::socket::{ControlMessage, ControlMessageOwned, MsgFlags, recvmsg, sendmsg, sockopt};

/// The ports the hand-over binds, declared by the plan.
pub use crate::plan::ProxyPorts;

/// The most destination ports transparent egress listens on.
pub const MAX_TRANSPARENT_PORTS: usize = 64;

/// Where the DNS stub listens inside the child's namespace (the child's `resolv.conf`).
pub const DNS_PORT: u16 = 53;

/// Transparent egress of one call: the DNS stub's socket (127.0.0.1:53 in the child's
/// namespace) and one listener per destination port (`0.0.0.0:port` there).
#[derive(Debug)]
pub struct Transparent {
    pub dns: UdpSocket,
    pub listeners: Vec<TcpListener>,
    /// The watch's raw socket ([`crate::egress::refused_watch::RefusedWatch::new`]), if made.
    pub watch: Option<OwnedFd>,
}

/// What [`receive`] took: the two proxy listeners, their ports, and transparent egress's
/// sockets when the helper bound them.
#[derive(Debug)]
pub struct Received {
    pub http: TcpListener,
    pub socks: TcpListener,
    pub ports: ProxyPorts,
    pub transparent: Option<Transparent>,
}

/// Binds the HTTP and SOCKS5 listeners on 127.0.0.1 at `want` (0: an ephemeral port) in the
/// current network namespace, sends them and their ports over `channel`, and closes them here.
pub fn bind_and_send(channel: BorrowedFd<'_>, want: ProxyPorts) -> std::io::Result<ProxyPorts> {
    bind_and_send_with(channel, want, None)
}

/// As [`bind_and_send`]; with `transparent` (destination ports), also the DNS stub's socket on
/// 127.0.0.1:[`DNS_PORT`] and a listener on `0.0.0.0` at each port (one that is already
/// taken by the proxy's own listeners is skipped), all in the same message.
pub fn bind_and_send_with(
    channel: BorrowedFd<'_>,
    want: ProxyPorts,
    transparent: Option<&[u16]>,
) -> std::io::Result<ProxyPorts> {
    let http = TcpListener::bind(("127.0.0.1", want.http))?;
    let socks = TcpListener::bind(("127.0.0.1", want.socks))?;
    let ports = ProxyPorts {
        http: http.local_addr()?.port(),
        socks: socks.local_addr()?.port(),
    };
    let mut payload = Vec::with_capacity(4 + 2 * MAX_TRANSPARENT_PORTS);
    payload.extend_from_slice(&ports.http.to_be_bytes());
    payload.extend_from_slice(&ports.socks.to_be_bytes());
    let mut owned: Vec<OwnedFd> = vec![http.into(), socks.into()];
    if let Some(list) = transparent {
        owned.push(UdpSocket::bind(("127.0.0.1", DNS_PORT))?.into());
        let mut seen = vec![ports.http, ports.socks, 0];
        for &port in list.iter().take(MAX_TRANSPARENT_PORTS) {
            if seen.contains(&port) {
                continue;
            }
            seen.push(port);
            owned.push(TcpListener::bind(("0.0.0.0", port))?.into());
            payload.extend_from_slice(&port.to_be_bytes());
        }
        // Without it (no raw sockets here) the kernel's refusals go unrecorded, nothing else
        // changes: the daemon says so.
        if let Ok(watch) = crate::egress::refused_watch::open() {
            owned.push(watch);
        }
    }
    let fds: Vec<RawFd> = owned.iter().map(AsRawFd::as_raw_fd).collect();
    let cmsg = [ControlMessage::ScmRights(&fds)];
    sendmsg::<()>(
        channel.as_raw_fd(),
        &[IoSlice::new(&payload)],
        &cmsg,
        MsgFlags::empty(),
        None,
    )?;
    drop(owned);
    Ok(ports)
}

/// Receives what [`bind_and_send_with`] sent: the two listeners (close-on-exec, checked to be
/// listening sockets), their ports, and transparent egress's sockets if any.
pub fn receive(channel: BorrowedFd<'_>) -> std::io::Result<Received> {
    let bad = |why: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, why.to_owned());
    let mut payload = [0u8; 4 + 2 * MAX_TRANSPARENT_PORTS];
    let mut iov = [IoSliceMut::new(&mut payload)];
    let mut space = nix::cmsg_space!([RawFd; 3 + MAX_TRANSPARENT_PORTS]);
    let msg = recvmsg::<()>(
        channel.as_raw_fd(),
        &mut iov,
        Some(&mut space),
        MsgFlags::MSG_CMSG_CLOEXEC,
    )?;
    let mut owned: Vec<OwnedFd> = Vec::new();
    for cmsg in msg.cmsgs()? {
        if let ControlMessageOwned::ScmRights(fds) = cmsg {
            owned.extend(crate::sys::adopt_received(fds));
        }
    }
    let truncated = msg
        .flags
        .intersects(MsgFlags::MSG_CTRUNC | MsgFlags::MSG_TRUNC);
    let bytes = msg.bytes;
    let watch = match owned.last() {
        Some(last) if owned.len() > 3 && is_raw_socket(last.as_fd()) => owned.pop(),
        _ => None,
    };
    let shape_ok = match owned.len() {
        2 => bytes == 4 && watch.is_none(),
        n if n >= 3 => bytes == 4 + 2 * (n - 3),
        _ => false,
    };
    if truncated || !shape_ok {
        return Err(bad("expected two listeners and their ports"));
    }
    for (i, fd) in owned.iter().enumerate() {
        if i == 2 {
            if nix::sys::socket::getsockopt(&fd.as_fd(), sockopt::SockType)?
                != nix::sys::socket::SockType::Datagram
            {
                return Err(bad("the DNS stub's descriptor is not a datagram socket"));
            }
        } else if !nix::sys::socket::getsockopt(&fd.as_fd(), sockopt::AcceptConn)? {
            return Err(bad("a passed descriptor is not a listening socket"));
        }
    }
    let ports = ProxyPorts {
        http: u16::from_be_bytes([payload[0], payload[1]]),
        socks: u16::from_be_bytes([payload[2], payload[3]]),
    };
    let mut fds = owned.into_iter();
    let mut next = || fds.next().ok_or_else(|| bad("a descriptor is missing"));
    let http = TcpListener::from(next()?);
    let socks = TcpListener::from(next()?);
    let transparent = match next() {
        Ok(dns) => Some(Transparent {
            dns: UdpSocket::from(dns),
            listeners: fds.map(TcpListener::from).collect(),
            watch,
        }),
        Err(_) => None,
    };
    Ok(Received {
        http,
        socks,
        ports,
        transparent,
    })
}

/// Whether `fd` is a raw socket (the refused-connection watch).
fn is_raw_socket(fd: BorrowedFd<'_>) -> bool {
    nix::sys::socket::getsockopt(&fd, sockopt::SockType)
        .is_ok_and(|t| t == nix::sys::socket::SockType::Raw)
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::sys::socket::{AddressFamily, SockFlag, SockType, socketpair};
    use std::io::{Read, Write};

    /// The two ends of a plan socket.
    fn plan_socket() -> (std::os::fd::OwnedFd, std::os::fd::OwnedFd) {
        socketpair(
            AddressFamily::Unix,
            SockType::SeqPacket,
            None,
            SockFlag::SOCK_CLOEXEC,
        )
        .unwrap()
    }

    #[test]
    fn passed_listeners_accept_what_connects_to_their_ports() {
        let (a, b) = plan_socket();
        let sent = bind_and_send(a.as_fd(), ProxyPorts { http: 0, socks: 0 }).unwrap();
        let Received {
            http,
            socks,
            ports,
            transparent,
        } = receive(b.as_fd()).unwrap();
        assert!(transparent.is_none());
        assert_eq!(sent, ports);
        assert_eq!(http.local_addr().unwrap().port(), ports.http);
        assert_eq!(socks.local_addr().unwrap().port(), ports.socks);
        let mut client = std::net::TcpStream::connect(("127.0.0.1", ports.http)).unwrap();
        client.write_all(b"x").unwrap();
        let (mut served, _) = http.accept().unwrap();
        let mut byte = [0u8; 1];
        served.read_exact(&mut byte).unwrap();
        assert_eq!(&byte, b"x");
    }

    #[test]
    fn a_message_without_listeners_is_refused() {
        let (a, b) = plan_socket();
        nix::unistd::write(&a, &[0, 1, 0, 2]).unwrap();
        assert!(receive(b.as_fd()).is_err());
    }
}
