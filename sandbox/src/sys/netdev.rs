//! Network devices of the current network namespace: bringing `lo` up (a new namespace's
//! loopback starts down: 127.0.0.1 can be bound, but nothing connects to it), and checking it
//! is (bubblewrap brings it up itself).

use std::os::fd::{AsRawFd, OwnedFd};

use nix::sys::socket::{AddressFamily, SockFlag, SockType, socket};

/// Sets `IFF_UP` on `lo` (needs `CAP_NET_ADMIN` in the namespace's owning user namespace).
pub fn loopback_up() -> std::io::Result<()> {
    let (sock, mut req) = loopback_flags()?;
    // SAFETY: after SIOCGIFFLAGS the flags member is the union's active one.
    unsafe { req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short };
    // SAFETY: SIOCSIFFLAGS only reads `req`, a live, correctly sized `ifreq`; the descriptor
    // is ours and open.
    if unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCSIFFLAGS, &req) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Whether `lo` is up (reading its flags needs no capability).
pub fn loopback_is_up() -> std::io::Result<bool> {
    let (_, req) = loopback_flags()?;
    // SAFETY: after SIOCGIFFLAGS the flags member is the union's active one.
    let flags = unsafe { req.ifr_ifru.ifru_flags };
    Ok(flags & libc::IFF_UP as libc::c_short != 0)
}

/// A socket to ask on and `lo`'s `ifreq` with its flags read (`SIOCGIFFLAGS`).
fn loopback_flags() -> std::io::Result<(OwnedFd, libc::ifreq)> {
    let sock = socket(
        AddressFamily::Inet,
        SockType::Datagram,
        SockFlag::SOCK_CLOEXEC,
        None,
    )?;
    // SAFETY: `ifreq` is plain old data; all-zero is a valid value (empty name, no flags).
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (slot, byte) in req.ifr_name.iter_mut().zip(b"lo") {
        *slot = *byte as libc::c_char;
    }
    // SAFETY: SIOCGIFFLAGS reads the name and writes the flags of `req`, a live, correctly
    // sized `ifreq`; the descriptor is ours and open.
    if unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFFLAGS, &mut req) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((sock, req))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_host_loopback_is_up() {
        assert!(super::loopback_is_up().unwrap());
    }
}
