//! Packet sockets: [`ip_packet_socket_on_lo`] makes an `AF_PACKET` socket that receives the
//! IPv4 packets `lo` of the current network namespace takes in, as many of each as a classic
//! BPF program passes (transparent egress's watch on connections the kernel refused,
//! `crate::refused_watch`), and [`registered`] hands such a socket to the Tokio reactor.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

use nix::sys::socket::{AddressFamily, SockFlag, SockType, socket};

/// `ETH_P_IP`: IPv4 packets only.
const ETH_P_IP: u16 = 0x0800;

/// An `AF_PACKET` `SOCK_DGRAM` socket (non-blocking, close-on-exec) on `lo` for IPv4, with
/// `filter` attached and locked before it is bound: it never queues a packet the filter did not
/// pass. Made with no protocol, so no packet reaches it before the filter is on. Bound to one
/// device and one protocol, the kernel hands it received IPv4 packets of `lo` only (not every
/// packet sent, as a socket for all protocols would be). Needs `CAP_NET_RAW` in the
/// namespace's owning user namespace.
pub fn ip_packet_socket_on_lo(filter: &[libc::sock_filter]) -> io::Result<OwnedFd> {
    let sock = socket(
        AddressFamily::Packet,
        SockType::Datagram,
        SockFlag::SOCK_CLOEXEC | SockFlag::SOCK_NONBLOCK,
        None,
    )?;
    let len = u16::try_from(filter.len())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "filter too long"))?;
    let prog = libc::sock_fprog {
        len,
        filter: filter.as_ptr().cast_mut(),
    };
    // SAFETY: `prog` points at `filter`, a live array of `len` entries, for the duration of the
    // call (the kernel copies the program); the option's size is `prog`'s; the socket is ours.
    let attached = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_ATTACH_FILTER,
            (&raw const prog).cast(),
            std::mem::size_of::<libc::sock_fprog>() as libc::socklen_t,
        )
    };
    if attached < 0 {
        return Err(io::Error::last_os_error());
    }
    let one: libc::c_int = 1;
    // SAFETY: an `int` option read from a live local of the size given; the socket is ours.
    let locked = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LOCK_FILTER,
            (&raw const one).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if locked < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `sockaddr_ll` is plain old data; all-zero is a valid value.
    let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    addr.sll_family = libc::AF_PACKET as libc::c_ushort;
    addr.sll_protocol = ETH_P_IP.to_be();
    // `lo` is interface 1 in every network namespace (`LOOPBACK_IFINDEX`).
    addr.sll_ifindex = 1;
    // SAFETY: `addr` is a live, fully initialized `sockaddr_ll` of the length given; the
    // socket is ours.
    let bound = unsafe {
        libc::bind(
            sock.as_raw_fd(),
            (&raw const addr).cast(),
            std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    };
    if bound < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(sock)
}

/// `fd` registered with the current Tokio runtime's reactor, for readiness (needs a runtime).
pub fn registered(fd: OwnedFd) -> io::Result<tokio::io::unix::AsyncFd<OwnedFd>> {
    // SAFETY: the `AsyncFd` owns `fd`, an `OwnedFd`, whose descriptor stays open and the same
    // (its `as_raw_fd` always returns it) until the `AsyncFd` drops it.
    Ok(unsafe { tokio::io::unix::AsyncFd::register(fd) }?)
}
