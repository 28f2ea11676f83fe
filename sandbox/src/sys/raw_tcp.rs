//! Raw TCP sockets for watching: [`raw_tcp_socket`] makes an `AF_INET` `SOCK_RAW` socket for
//! `IPPROTO_TCP` that receives, of the TCP packets the current network namespace takes in,
//! those a classic BPF program passes (transparent egress's watch on connections the kernel
//! refused, `crate::egress::refused_watch`); it is never used to send. [`registered`] hands such a
//! socket to the Tokio reactor.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

use nix::sys::socket::{AddressFamily, SockFlag, SockProtocol, SockType, socket};

/// A raw TCP socket (non-blocking, close-on-exec) with `filter` attached and locked. The
/// kernel hands a raw socket a copy of each TCP packet delivered locally in its namespace (the
/// filter runs on the copy, from its IPv4 header); unlike a packet socket, closing it does not
/// wait for an RCU grace period. Needs `CAP_NET_RAW` in the namespace's owning user namespace.
/// A packet that came between the socket's creation and the filter may be queued unfiltered.
pub fn raw_tcp_socket(filter: &[libc::sock_filter]) -> io::Result<OwnedFd> {
    let sock = socket(
        AddressFamily::Inet,
        SockType::Raw,
        SockFlag::SOCK_CLOEXEC | SockFlag::SOCK_NONBLOCK,
        SockProtocol::Tcp,
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
    Ok(sock)
}

/// `fd` registered with the current Tokio runtime's reactor, for readiness (needs a runtime).
pub fn registered(fd: OwnedFd) -> io::Result<tokio::io::unix::AsyncFd<OwnedFd>> {
    // SAFETY: the `AsyncFd` owns `fd`, an `OwnedFd`, whose descriptor stays open and the same
    // (its `as_raw_fd` always returns it) until the `AsyncFd` drops it.
    Ok(unsafe { tokio::io::unix::AsyncFd::register(fd) }?)
}
