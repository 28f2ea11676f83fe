//! A tunnel's relay between two TCP sockets with splice(2): each direction moves the bytes
//! from one socket into a pipe and from the pipe into the other socket, so they never cross
//! into user space (half the copies of a read/write relay, which costs the proxy its
//! throughput). Half-closes are passed on (EOF one way shuts down the other side's write
//! half), an error on either side ends both, and `idle` without a byte either way closes the
//! tunnel. A splice into a socket whose peer has gone raises SIGPIPE (the kernel passes no
//! `MSG_NOSIGNAL` there): the Rust runtime ignores that signal in every zeroclaw process, so
//! it ends the direction with `EPIPE` like a write would.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use nix::fcntl::{FcntlArg, OFlag, SpliceFFlags, fcntl, splice};
use nix::sys::socket::{Shutdown, shutdown};
use tokio::io::Interest;
use tokio::net::TcpStream;

use super::counted::Bytes;

/// The pipe's capacity asked for (the default is 64 KiB; a refusal, past the user's pipe
/// quota, keeps the default): fewer, larger moves per direction.
const PIPE_BYTES: i32 = 1 << 20;

/// Relays `a` and `b` both ways until both directions ended, either side failed, or nothing
/// moved for `idle`; what `a` sends counts as sent in `bytes`, what `b` sends as received. An
/// error making the pipes is returned before anything moved.
pub(super) async fn relay(
    a: &TcpStream,
    b: &TcpStream,
    idle: Duration,
    bytes: &Bytes,
) -> io::Result<()> {
    let (ab, ba) = (Pipe::new()?, Pipe::new()?);
    let start = Instant::now();
    let last = AtomicU64::new(0);
    let moved = || last.store(start.elapsed().as_millis() as u64, Ordering::Relaxed);
    let sent = |n| bytes.add_sent(n);
    let received = |n| bytes.add_received(n);
    let both = async {
        tokio::try_join!(
            ab.pump(a, b, &moved, &sent),
            ba.pump(b, a, &moved, &received)
        )
        .map(|_| ())
    };
    let watchdog = super::idle::quiet_for(idle, start, &last);
    tokio::select! {
        result = both => {
            if let Err(e) = result {
                tracing::debug!(error = %e, "egress tunnel ended");
            }
        }
        () = watchdog => tracing::debug!("egress tunnel idle; closed"),
    }
    Ok(())
}

/// One direction's pipe.
struct Pipe {
    read: OwnedFd,
    write: OwnedFd,
}

impl Pipe {
    fn new() -> io::Result<Pipe> {
        let (read, write) = nix::unistd::pipe2(OFlag::O_CLOEXEC | OFlag::O_NONBLOCK)?;
        let _ = fcntl(&write, FcntlArg::F_SETPIPE_SZ(PIPE_BYTES));
        Ok(Pipe { read, write })
    }

    /// Moves everything `from` sends into `to`; at `from`'s EOF, shuts down `to`'s write half.
    async fn pump(
        &self,
        from: &TcpStream,
        to: &TcpStream,
        moved: &impl Fn(),
        count: &impl Fn(usize),
    ) -> io::Result<()> {
        let flags = SpliceFFlags::SPLICE_F_MOVE | SpliceFFlags::SPLICE_F_NONBLOCK;
        loop {
            from.readable().await?;
            let n = match from.try_io(Interest::READABLE, || {
                Ok(splice(
                    from,
                    None,
                    &self.write,
                    None,
                    PIPE_BYTES as usize,
                    flags,
                )?)
            }) {
                Ok(0) => {
                    // `to` may be gone already: nothing is left to tell it.
                    let _ = shutdown(to.as_raw_fd(), Shutdown::Write);
                    return Ok(());
                }
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Err(e),
            };
            moved();
            count(n);
            let mut left = n;
            while left > 0 {
                to.writable().await?;
                match to.try_io(Interest::WRITABLE, || {
                    Ok(splice(&self.read, None, to, None, left, flags)?)
                }) {
                    Ok(m) => left -= m,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                    Err(e) => return Err(e),
                }
            }
        }
    }
}
