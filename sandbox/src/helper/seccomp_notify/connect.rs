//! `connect`: the socket and address checked, a pathname Unix address
//! only inside the writable roots and through the descriptor that was checked, then the
//! connect performed on our copy of the socket on a thread of its own.

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use nix::errno::Errno;
use nix::sys::signal::{SigSet, SigmaskHow, Signal, pthread_sigmask};

use super::decode::{Status, fd_arg, read_remote};
use super::emulate::{fetch_fd, openat2};
use super::listener::reply;
use super::supervisor::Supervisor;

/// Whether `addr` (a raw socket address) is 127.0.0.1 at one of the proxy's `ports`, as an
/// `AF_INET` address or an IPv4-mapped `AF_INET6` one.
pub(super) fn to_proxy(addr: &[u8], ports: crate::egress::handover::ProxyPorts) -> bool {
    let family = addr
        .get(..2)
        .map(|b| i32::from(u16::from_ne_bytes([b[0], b[1]])));
    let Some(port) = addr.get(2..4).map(|b| u16::from_be_bytes([b[0], b[1]])) else {
        return false;
    };
    let loopback = match family {
        Some(libc::AF_INET) => addr.get(4..8) == Some(&[127, 0, 0, 1][..]),
        Some(libc::AF_INET6) => {
            let mut mapped = [0u8; 16];
            mapped[10..12].copy_from_slice(&[0xff, 0xff]);
            mapped[12..].copy_from_slice(&[127, 0, 0, 1]);
            addr.get(8..24) == Some(&mapped[..])
        }
        _ => false,
    };
    loopback && (port == ports.http || port == ports.socks)
}

/// Most `connect`s performed at once (each on its own thread, since a blocking connect may
/// wait long and the supervisor must keep serving); beyond that, EAGAIN.
const MAX_CONNECTS: usize = 32;

impl Supervisor {
    /// `connect`: checked here, performed on a thread of its own (it may block), which
    /// answers.
    pub(super) fn serve_connect(&self, notif: &libc::seccomp_notif) {
        let id = notif.id;
        let (sock, addr, keep) = match self.prepare_connect(id, notif.pid, notif.data.args) {
            Ok(prepared) => prepared,
            Err(e) => {
                reply(&self.listener, id, Err(e));
                return;
            }
        };
        if self.connecting.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTS {
            self.connecting.fetch_sub(1, Ordering::SeqCst);
            reply(&self.listener, id, Err(Errno::EAGAIN));
            return;
        }
        let listener = Arc::clone(&self.listener);
        let connecting = Arc::clone(&self.connecting);
        // The thread inherits our mask: SIGTERM blocked there, so it always interrupts the
        // supervisor's own wait instead (the flag it sets is process-wide).
        let mut term = SigSet::empty();
        term.add(Signal::SIGTERM);
        let mut old = SigSet::empty();
        let _ = pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&term), Some(&mut old));
        let spawned = std::thread::Builder::new()
            .name("connect".into())
            .spawn(move || {
                let answer = crate::sys::connect_raw(sock.as_fd(), &addr);
                drop(keep);
                reply(&listener, id, answer);
                connecting.fetch_sub(1, Ordering::SeqCst);
            });
        let _ = pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&old), None);
        if spawned.is_err() {
            self.connecting.fetch_sub(1, Ordering::SeqCst);
            reply(&self.listener, id, Err(Errno::EAGAIN));
        }
    }

    /// The socket (our copy), the address to connect it to and what must stay open until
    /// then. A pathname Unix address must name a socket inside the writable roots (outside
    /// them, EACCES); it is connected through `/proc/self/fd/N` of the O_PATH descriptor that
    /// was checked, so a path swapped meanwhile changes nothing. Other families and abstract
    /// or unnamed Unix addresses go through unchanged (the network is allowed).
    fn prepare_connect(
        &self,
        id: u64,
        tid: u32,
        args: [u64; 6],
    ) -> Result<(OwnedFd, Vec<u8>, Option<OwnedFd>), Errno> {
        let status = Status::of(tid).ok_or(Errno::EPERM)?;
        let pidfd = crate::sys::pidfd_open(status.tgid).map_err(|_| Errno::EPERM)?;
        if !self.valid(id) {
            return Err(Errno::EPERM);
        }
        let len = args[2] as u32 as usize;
        if len > std::mem::size_of::<libc::sockaddr_storage>() {
            return Err(Errno::EINVAL);
        }
        let addr = if len == 0 {
            Vec::new()
        } else {
            read_remote(tid, args[1], len)?
        };
        let sock = fetch_fd(&pidfd, fd_arg(args[0]))?;
        let domain = crate::sys::socket_domain(sock.as_fd()).map_err(|_| Errno::ENOTSOCK)?;
        let family = addr
            .get(..2)
            .map(|b| i32::from(u16::from_ne_bytes([b[0], b[1]])));
        let named = domain == libc::AF_UNIX
            && family == Some(libc::AF_UNIX)
            && addr.get(2).is_some_and(|b| *b != 0);
        if !named {
            // In proxy mode an IP socket reaches the proxy's listeners and nothing else (we
            // connect outside the child's Landlock TCP rules): EACCES, as Landlock answers.
            if let Some(ports) = self.proxy_only {
                if domain != libc::AF_UNIX && to_proxy(&addr, ports) {
                    return Ok((sock, addr, None));
                }
                return Err(if domain == libc::AF_UNIX {
                    Errno::EPERM
                } else {
                    Errno::EACCES
                });
            }
            // With the network denied only Unix sockets exist, and an abstract address would
            // be the host's: Landlock scopes the child's own connects, not ours.
            if self.network_denied {
                return Err(Errno::EPERM);
            }
            return Ok((sock, addr, None));
        }
        let path: Vec<u8> = addr[2..].iter().take_while(|b| **b != 0).copied().collect();
        let base = if path.first() == Some(&b'/') {
            None
        } else {
            Some(
                std::fs::File::open(format!("/proc/{tid}/cwd"))
                    .map(OwnedFd::from)
                    .map_err(|_| Errno::EPERM)?,
            )
        };
        let dir = base.as_ref().map_or(libc::AT_FDCWD, |b| b.as_raw_fd());
        let file = openat2(dir, &path, true)?;
        let real = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd()))
            .map_err(|_| Errno::EACCES)?;
        if !self.may_change(&real) {
            return Err(Errno::EACCES);
        }
        let st = nix::sys::stat::fstat(&file).map_err(|_| Errno::EACCES)?;
        if st.st_mode & libc::S_IFMT != libc::S_IFSOCK {
            return Err(Errno::ECONNREFUSED);
        }
        let mut checked = (libc::AF_UNIX as u16).to_ne_bytes().to_vec();
        checked.extend_from_slice(format!("/proc/self/fd/{}", file.as_raw_fd()).as_bytes());
        checked.push(0);
        Ok((sock, checked, Some(file)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::egress::handover::ProxyPorts;

    /// `struct sockaddr_in` / `sockaddr_in6` as the child would pass them.
    fn v4(a: [u8; 4], port: u16) -> Vec<u8> {
        let mut b = (libc::AF_INET as u16).to_ne_bytes().to_vec();
        b.extend(port.to_be_bytes());
        b.extend(a);
        b.extend([0; 8]);
        b
    }

    fn v6(ip: std::net::Ipv6Addr, port: u16) -> Vec<u8> {
        let mut b = (libc::AF_INET6 as u16).to_ne_bytes().to_vec();
        b.extend(port.to_be_bytes());
        b.extend([0; 4]);
        b.extend(ip.octets());
        b.extend([0; 4]);
        b
    }

    #[test]
    fn only_the_proxy_ports_on_ipv4_loopback_are_reachable() {
        let ports = ProxyPorts {
            http: 40001,
            socks: 40002,
        };
        assert!(to_proxy(&v4([127, 0, 0, 1], 40001), ports));
        assert!(to_proxy(&v4([127, 0, 0, 1], 40002), ports));
        let mapped = std::net::Ipv4Addr::LOCALHOST.to_ipv6_mapped();
        assert!(to_proxy(&v6(mapped, 40002), ports));
        for refused in [
            v4([127, 0, 0, 1], 40003),
            v4([127, 0, 0, 2], 40001),
            v4([10, 0, 0, 1], 40001),
            v6(std::net::Ipv6Addr::LOCALHOST, 40001),
            v6(std::net::Ipv4Addr::new(10, 0, 0, 1).to_ipv6_mapped(), 40001),
            v4([127, 0, 0, 1], 40001)[..6].to_vec(),
            Vec::new(),
        ] {
            assert!(!to_proxy(&refused, ports), "{refused:?}");
        }
    }
}
