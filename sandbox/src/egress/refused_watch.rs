//! Transparent egress's watch on the connections the kernel refused. In a call's network
//! namespace every IPv4 address is local to `lo` and the proxy listens at the allowed ports
//! only, so a `connect()` to any other port is answered by the kernel's own reset and never
//! reaches the proxy. [`open`] (in that namespace, with `CAP_NET_RAW`) makes a raw TCP socket
//! whose filter passes only such resets — TCP `RST`+`ACK` with sequence number 0, the answer
//! to a `SYN` no socket took — and [`RefusedWatch`] reads the refused destination out of each
//! (the reset's source). Observation only: the kernel refuses as before. The inside
//! check's probe ([`PROBE`], a connect made before the command runs) is the first reset from
//! that address, and is skipped.

use std::io;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};

use nix::sys::socket::{MsgFlags, recv};
use tokio::io::unix::AsyncFd;

/// Where the confined process's inside check connects to prove nothing leaves (a TEST-NET-1
/// address, RFC 5737: never routed).
pub const PROBE: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);

/// The bytes of a packet the filter keeps: an IPv4 header (at most 60) and the TCP header's
/// first 20.
const SNAP: u32 = 80;

/// The filter, on a packet starting at its IPv4 header: TCP, not a fragment, flags
/// `RST`+`ACK` among `FIN`/`SYN`/`RST`/`ACK`, sequence number 0.
fn program() -> [libc::sock_filter; 12] {
    use libc::{
        BPF_ABS, BPF_ALU, BPF_AND, BPF_B, BPF_H, BPF_IND, BPF_JEQ, BPF_JMP, BPF_JSET, BPF_K,
        BPF_LD, BPF_LDX, BPF_MSH, BPF_RET, BPF_W,
    };
    let op = |code: u32, jt: u8, jf: u8, k: u32| libc::sock_filter {
        code: code as u16,
        jt,
        jf,
        k,
    };
    // Jump offsets count the instructions skipped; 11 is the drop.
    [
        op(BPF_LD | BPF_B | BPF_ABS, 0, 0, 9), // 0: protocol
        op(BPF_JMP | BPF_JEQ | BPF_K, 0, 9, libc::IPPROTO_TCP as u32), // 1
        op(BPF_LD | BPF_H | BPF_ABS, 0, 0, 6), // 2: flags and fragment offset
        op(BPF_JMP | BPF_JSET | BPF_K, 7, 0, 0x1fff), // 3: a fragment
        op(BPF_LDX | BPF_B | BPF_MSH, 0, 0, 0), // 4: X = the IPv4 header's length
        op(BPF_LD | BPF_B | BPF_IND, 0, 0, 13), // 5: TCP flags
        op(BPF_ALU | BPF_AND | BPF_K, 0, 0, 0x17), // 6: FIN, SYN, RST, ACK
        op(BPF_JMP | BPF_JEQ | BPF_K, 0, 3, 0x14), // 7: RST and ACK only
        op(BPF_LD | BPF_W | BPF_IND, 0, 0, 4), // 8: sequence number
        op(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0), // 9
        op(BPF_RET | BPF_K, 0, 0, SNAP),       // 10: keep
        op(BPF_RET | BPF_K, 0, 0, 0),          // 11: drop
    ]
}

/// The watch's socket, made in the current network namespace (needs `CAP_NET_RAW` there).
pub fn open() -> io::Result<OwnedFd> {
    let fd = crate::sys::raw_tcp_socket(&program())?;
    // What came before the filter did is not the watch's.
    let mut packet = [0u8; SNAP as usize];
    while recv(fd.as_raw_fd(), &mut packet, MsgFlags::MSG_DONTWAIT).is_ok() {}
    Ok(fd)
}

/// The destination a reset refused: the reset's source, if `packet` (from its IPv4 header)
/// is a reset answering a `SYN`.
pub fn refused_destination(packet: &[u8]) -> Option<SocketAddrV4> {
    let version_ihl = *packet.first()?;
    let ihl = usize::from(version_ihl & 0x0f) * 4;
    if version_ihl >> 4 != 4 || ihl < 20 || *packet.get(9)? != libc::IPPROTO_TCP as u8 {
        return None;
    }
    let tcp = packet.get(ihl..ihl + 20)?;
    if tcp[13] & 0x17 != 0x14 || tcp[4..8] != [0; 4] {
        return None;
    }
    let source = Ipv4Addr::new(packet[12], packet[13], packet[14], packet[15]);
    Some(SocketAddrV4::new(
        source,
        u16::from_be_bytes([tcp[0], tcp[1]]),
    ))
}

/// The daemon's end of the watch: waits for refused destinations, skipping the inside
/// check's probe.
#[derive(Debug)]
pub struct RefusedWatch {
    fd: AsyncFd<OwnedFd>,
    probe_pending: AtomicBool,
}

impl RefusedWatch {
    /// The watch on `fd` (the socket [`open`] made), registered with the current Tokio
    /// runtime.
    pub fn new(fd: OwnedFd) -> io::Result<RefusedWatch> {
        Ok(RefusedWatch {
            fd: crate::sys::registered(fd)?,
            probe_pending: AtomicBool::new(true),
        })
    }

    /// The next refused destination, once one comes.
    pub async fn next(&self) -> io::Result<SocketAddrV4> {
        loop {
            let mut ready = self.fd.readable().await?;
            match ready.try_io(|fd| self.read(fd.get_ref())) {
                Ok(Ok(Some(refused))) => return Ok(refused),
                Ok(Ok(None)) | Err(_) => continue,
                Ok(Err(e)) => return Err(e),
            }
        }
    }

    /// The next refused destination already queued, if any (without waiting).
    pub fn queued(&self) -> io::Result<Option<SocketAddrV4>> {
        loop {
            match self.read(self.fd.get_ref()) {
                Ok(Some(refused)) => return Ok(Some(refused)),
                Ok(None) => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
                Err(e) => return Err(e),
            }
        }
    }

    /// One packet off `fd`: the destination it refused (`None`: not a refusal, or the probe's);
    /// `WouldBlock` when none is queued.
    fn read(&self, fd: &OwnedFd) -> io::Result<Option<SocketAddrV4>> {
        let mut packet = [0u8; SNAP as usize];
        let got = recv(fd.as_raw_fd(), &mut packet, MsgFlags::MSG_DONTWAIT)?;
        let refused = refused_destination(&packet[..got]);
        let probe = |d: &SocketAddrV4| {
            *d.ip() == PROBE && self.probe_pending.swap(false, Ordering::Relaxed)
        };
        Ok(refused.filter(|d| !probe(d)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An IPv4+TCP packet from `src:sport` with `flags` and `seq`.
    fn packet(src: [u8; 4], sport: u16, flags: u8, seq: u32) -> Vec<u8> {
        let mut p = vec![0x45, 0, 0, 40, 0, 0, 0x40, 0, 64, 6, 0, 0];
        p.extend_from_slice(&src);
        p.extend_from_slice(&[127, 0, 0, 1]);
        p.extend_from_slice(&sport.to_be_bytes());
        p.extend_from_slice(&40000u16.to_be_bytes());
        p.extend_from_slice(&seq.to_be_bytes());
        p.extend_from_slice(&7u32.to_be_bytes());
        p.extend_from_slice(&[0x50, flags, 0, 0, 0, 0, 0, 0]);
        p
    }

    #[test]
    fn a_reset_answering_a_syn_names_the_refused_destination() {
        assert_eq!(
            refused_destination(&packet([198, 18, 0, 1], 9, 0x14, 0)),
            Some(SocketAddrV4::new(Ipv4Addr::new(198, 18, 0, 1), 9))
        );
        // A reset of a connection that was open (its sequence number), a plain ACK, a SYN.
        for (flags, seq) in [(0x14, 1234), (0x10, 0), (0x02, 0), (0x04, 0)] {
            assert_eq!(
                refused_destination(&packet([10, 0, 0, 1], 9, flags, seq)),
                None
            );
        }
        let mut udp = packet([10, 0, 0, 1], 9, 0x14, 0);
        udp[9] = 17;
        assert_eq!(refused_destination(&udp), None);
        assert_eq!(
            refused_destination(&packet([1, 2, 3, 4], 9, 0x14, 0)[..30]),
            None
        );
    }

    /// The kernel's filter on a real socket: in this namespace (root needed), a connect
    /// to a port nothing listens on is queued as its destination by the time `connect`
    /// returns; a connection that was accepted is not.
    #[test]
    fn the_watch_sees_a_refused_connect_and_not_an_accepted_one() {
        let fd = match open() {
            Ok(fd) => fd,
            Err(e) => {
                let why = format!("skipped: no raw TCP socket here ({e})");
                eprintln!("{why}");
                assert_ne!(std::env::var("CI").as_deref(), Ok("true"), "{why}");
                return;
            }
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
            .unwrap();
        let _in_runtime = runtime.enter();
        let watch = RefusedWatch::new(fd).unwrap();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let open_port = listener.local_addr().unwrap().port();
        let accepted = std::net::TcpStream::connect(("127.0.0.1", open_port)).unwrap();
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let closed_port = closed.local_addr().unwrap().port();
        drop(closed);
        let refused = std::net::TcpStream::connect(("127.0.0.1", closed_port)).unwrap_err();
        assert_eq!(refused.kind(), io::ErrorKind::ConnectionRefused);
        drop(accepted);
        // Other processes' refusals in this namespace may be queued too: ours must be among
        // them.
        let mut seen = Vec::new();
        while let Some(d) = watch.queued().unwrap() {
            seen.push(d);
        }
        let ours = SocketAddrV4::new(Ipv4Addr::LOCALHOST, closed_port);
        assert!(seen.contains(&ours), "{seen:?}");
        assert!(!seen.iter().any(|d| d.port() == open_port), "{seen:?}");
    }
}
