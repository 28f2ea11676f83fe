//! The child-side piece of the egress proxy's design: inside a child's network namespace
//! (which has only `lo`), bind the proxy's two TCP listeners on 127.0.0.1 and hand them to the
//! daemon over a Unix socket (`SCM_RIGHTS`), closing our copies, so the command can connect to
//! them but never accept on them; the daemon accepts on them directly (a socket keeps the
//! namespace it was made in). The helper calls [`bind_and_send`] on the plan socket
//! (`helper/egress.rs`), the launcher [`receive`] once the helper reported ready.

use std::io::{IoSlice, IoSliceMut};
use std::net::TcpListener;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};

use nix::sys::socket::{ControlMessage, ControlMessageOwned, MsgFlags, recvmsg, sendmsg, sockopt};

/// The loopback ports of the two listeners inside the child's namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProxyPorts {
    pub http: u16,
    pub socks: u16,
}

/// Binds the HTTP and SOCKS5 listeners on 127.0.0.1 at `want` (0: an ephemeral port) in the
/// current network namespace, sends them and their ports over `channel`, and closes them here.
pub fn bind_and_send(channel: BorrowedFd<'_>, want: ProxyPorts) -> std::io::Result<ProxyPorts> {
    let http = TcpListener::bind(("127.0.0.1", want.http))?;
    let socks = TcpListener::bind(("127.0.0.1", want.socks))?;
    let ports = ProxyPorts {
        http: http.local_addr()?.port(),
        socks: socks.local_addr()?.port(),
    };
    let mut payload = [0u8; 4];
    payload[..2].copy_from_slice(&ports.http.to_be_bytes());
    payload[2..].copy_from_slice(&ports.socks.to_be_bytes());
    let fds = [http.as_raw_fd(), socks.as_raw_fd()];
    let cmsg = [ControlMessage::ScmRights(&fds)];
    sendmsg::<()>(
        channel.as_raw_fd(),
        &[IoSlice::new(&payload)],
        &cmsg,
        MsgFlags::empty(),
        None,
    )?;
    drop((http, socks));
    Ok(ports)
}

/// Receives what [`bind_and_send`] sent: the two listeners (close-on-exec, checked to be
/// listening sockets) and their ports.
pub fn receive(channel: BorrowedFd<'_>) -> std::io::Result<(TcpListener, TcpListener, ProxyPorts)> {
    let bad = |why: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, why.to_owned());
    let mut payload = [0u8; 4];
    let mut iov = [IoSliceMut::new(&mut payload)];
    let mut space = nix::cmsg_space!([RawFd; 2]);
    let msg = recvmsg::<()>(
        channel.as_raw_fd(),
        &mut iov,
        Some(&mut space),
        MsgFlags::MSG_CMSG_CLOEXEC,
    )?;
    let mut owned: Vec<std::os::fd::OwnedFd> = Vec::new();
    for cmsg in msg.cmsgs()? {
        if let ControlMessageOwned::ScmRights(fds) = cmsg {
            owned.extend(crate::sys::adopt_received(fds));
        }
    }
    let truncated = msg
        .flags
        .intersects(MsgFlags::MSG_CTRUNC | MsgFlags::MSG_TRUNC);
    if truncated || msg.bytes != payload.len() || owned.len() != 2 {
        return Err(bad("expected two listeners and their ports"));
    }
    for fd in &owned {
        if !nix::sys::socket::getsockopt(&fd.as_fd(), sockopt::AcceptConn)? {
            return Err(bad("a passed descriptor is not a listening socket"));
        }
    }
    let ports = ProxyPorts {
        http: u16::from_be_bytes([payload[0], payload[1]]),
        socks: u16::from_be_bytes([payload[2], payload[3]]),
    };
    let socks = TcpListener::from(owned.pop().ok_or_else(|| bad("no socks listener"))?);
    let http = TcpListener::from(owned.pop().ok_or_else(|| bad("no http listener"))?);
    Ok((http, socks, ports))
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::sys::socket::{AddressFamily, SockFlag, SockType, socketpair};
    use std::io::{Read, Write};

    #[test]
    fn passed_listeners_accept_what_connects_to_their_ports() {
        let (a, b) = socketpair(
            AddressFamily::Unix,
            SockType::SeqPacket,
            None,
            SockFlag::SOCK_CLOEXEC,
        )
        .unwrap();
        let sent = bind_and_send(a.as_fd(), ProxyPorts { http: 0, socks: 0 }).unwrap();
        let (http, socks, ports) = receive(b.as_fd()).unwrap();
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
        let (a, b) = socketpair(
            AddressFamily::Unix,
            SockType::SeqPacket,
            None,
            SockFlag::SOCK_CLOEXEC,
        )
        .unwrap();
        nix::unistd::write(&a, &[0, 1, 0, 2]).unwrap();
        assert!(receive(b.as_fd()).is_err());
    }
}
