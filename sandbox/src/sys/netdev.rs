//! Network devices of the current network namespace: bringing `lo` up (a new namespace's
//! loopback starts down: 127.0.0.1 can be bound, but nothing connects to it), and checking it
//! is (bubblewrap brings it up itself), and making every IPv4 address local on `lo`
//! ([`local_route_all`], transparent egress).

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

/// Adds `local 0.0.0.0/0 dev lo` to the `local` routing table (rtnetlink `RTM_NEWROUTE`,
/// needs `CAP_NET_ADMIN` in the namespace's owning user namespace): in a namespace that has
/// only `lo`, a `connect()` to any IPv4 address then lands on a local listener bound to
/// `0.0.0.0` at that port, whose accepted socket's local address is the destination asked for
/// (or is refused when nothing listens there): no packet can leave, and no NAT is needed to
/// learn where the child meant to go.
pub fn local_route_all() -> std::io::Result<()> {
    use nix::sys::socket::{MsgFlags, NetlinkAddr, SockProtocol, recv, sendto};
    const RTM_NEWROUTE: u16 = 24;
    const NLM_F_REQUEST: u16 = 0x1;
    const NLM_F_ACK: u16 = 0x4;
    const NLM_F_EXCL: u16 = 0x200;
    const NLM_F_CREATE: u16 = 0x400;
    const NLMSG_ERROR: u16 = 2;
    const RT_TABLE_LOCAL: u8 = 255;
    const RTPROT_STATIC: u8 = 4;
    const RT_SCOPE_HOST: u8 = 254;
    const RTN_LOCAL: u8 = 2;
    const RTA_OIF: u16 = 4;
    // `lo` is interface 1 in every network namespace (`LOOPBACK_IFINDEX`).
    let lo: u32 = 1;
    let sock = socket(
        AddressFamily::Netlink,
        SockType::Raw,
        SockFlag::SOCK_CLOEXEC,
        SockProtocol::NetlinkRoute,
    )?;
    let mut msg = Vec::with_capacity(36);
    msg.extend_from_slice(&36u32.to_ne_bytes());
    msg.extend_from_slice(&RTM_NEWROUTE.to_ne_bytes());
    let flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_EXCL | NLM_F_CREATE;
    msg.extend_from_slice(&flags.to_ne_bytes());
    msg.extend_from_slice(&1u32.to_ne_bytes()); // sequence
    msg.extend_from_slice(&0u32.to_ne_bytes()); // port id: the kernel's
    // rtmsg: family, dst_len, src_len, tos, table, protocol, scope, type, flags.
    msg.extend_from_slice(&[
        libc::AF_INET as u8,
        0,
        0,
        0,
        RT_TABLE_LOCAL,
        RTPROT_STATIC,
        RT_SCOPE_HOST,
        RTN_LOCAL,
    ]);
    msg.extend_from_slice(&0u32.to_ne_bytes());
    msg.extend_from_slice(&8u16.to_ne_bytes());
    msg.extend_from_slice(&RTA_OIF.to_ne_bytes());
    msg.extend_from_slice(&lo.to_ne_bytes());
    sendto(
        sock.as_raw_fd(),
        &msg,
        &NetlinkAddr::new(0, 0),
        MsgFlags::empty(),
    )?;
    let mut ack = [0u8; 512];
    let n = recv(sock.as_raw_fd(), &mut ack, MsgFlags::empty())?;
    let bad = || std::io::Error::new(std::io::ErrorKind::InvalidData, "short rtnetlink answer");
    if n < 20 || u16::from_ne_bytes([ack[4], ack[5]]) != NLMSG_ERROR {
        return Err(bad());
    }
    let code = i32::from_ne_bytes([ack[16], ack[17], ack[18], ack[19]]);
    if code != 0 {
        return Err(std::io::Error::from_raw_os_error(-code));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_host_loopback_is_up() {
        assert!(super::loopback_is_up().unwrap());
    }
}
