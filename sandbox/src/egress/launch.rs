//! The launcher's part of `network = proxy` (daemon side). With a network namespace, the plan
//! channel of a proxy call is a Unix socket pair instead of a pipe, so that once the helper
//! has read the plan (we shut our sending half) it can send back the listeners it bound in
//! the call's network namespace ([`crate::egress::handover`]), which [`receive`] takes once the
//! helper reported ready. Without one (Landlock-only, Seatbelt), [`bind_on_host`] binds them
//! on the host's loopback before the helper starts, so no child can take their ports first.

use std::net::TcpListener;
use std::os::fd::{AsFd, OwnedFd};

use nix::sys::socket::{AddressFamily, Shutdown, SockFlag, SockType, shutdown, socketpair};

use crate::egress::handover::ProxyPorts;
use crate::error::SandboxError;

/// The proxy's two listeners of one call, bound inside its network namespace (or on the
/// host's loopback on a rung without one): accept on them
/// and serve the HTTP proxy and SOCKS5 (the daemon's egress proxy does).
#[derive(Debug)]
pub struct EgressListeners {
    pub http: TcpListener,
    pub socks: TcpListener,
    /// Their ports on the child's loopback (what the command's `*_PROXY` variables name).
    pub ports: ProxyPorts,
    /// Transparent egress's DNS stub socket and per-port listeners (the namespace backend).
    pub transparent: Option<crate::egress::handover::Transparent>,
}

/// A call's listeners on their way to [`crate::Confined`]: to be received over the plan
/// channel, or already bound by us.
#[derive(Debug)]
pub(crate) enum Pending {
    Channel(OwnedFd),
    Bound(EgressListeners),
}

impl Pending {
    /// The listeners, once the helper reported ready.
    pub(crate) fn listeners(self) -> Result<EgressListeners, SandboxError> {
        match self {
            Pending::Channel(ours) => receive(ours),
            Pending::Bound(listeners) => Ok(listeners),
        }
    }
}

/// For a proxy call without a network namespace (`plan.egress.on_host`): binds the HTTP and
/// SOCKS5 listeners on 127.0.0.1 at ephemeral ports and fills the plan in with them
/// ([`crate::plan::egress::on_host`]); `None` for any other call. The proxy is reachable by
/// the host's other processes too while the call runs (docs/policy.md says so).
pub(crate) fn bind_on_host(
    plan: &mut crate::plan::Plan,
) -> Result<Option<EgressListeners>, SandboxError> {
    if !plan.egress.on_host {
        return Ok(None);
    }
    let bind = || {
        let listener = TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0))?;
        listener.set_nonblocking(true)?;
        let port = listener.local_addr()?.port();
        Ok::<_, std::io::Error>((listener, port))
    };
    let failed = |e: std::io::Error| {
        SandboxError::Io(std::io::Error::new(
            e.kind(),
            format!("bind the egress proxy listeners on 127.0.0.1: {e}"),
        ))
    };
    let (http, http_port) = bind().map_err(failed)?;
    let (socks, socks_port) = bind().map_err(failed)?;
    let ports = ProxyPorts {
        http: http_port,
        socks: socks_port,
    };
    crate::plan::egress::on_host(plan, ports);
    Ok(Some(EgressListeners {
        http,
        socks,
        ports,
        transparent: None,
    }))
}

/// (our end, the helper's end) of a proxy call's plan channel, both close-on-exec.
pub(crate) fn plan_channel() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let (ours, theirs) = socketpair(
        AddressFamily::Unix,
        SockType::Stream,
        None,
        SockFlag::SOCK_CLOEXEC,
    )?;
    Ok((ours, theirs))
}

/// The plan is written: the helper reads to end-of-file, so shut our sending half (the
/// socket stays open for the listeners to come back).
pub(crate) fn plan_sent(ours: &OwnedFd) {
    let _ = shutdown(std::os::fd::AsRawFd::as_raw_fd(ours), Shutdown::Write);
}

/// The listeners the helper sent before it reported ready (already queued: a helper that
/// could not send them reported a setup failure instead).
pub(crate) fn receive(ours: OwnedFd) -> Result<EgressListeners, SandboxError> {
    let flags =
        nix::fcntl::fcntl(&ours, nix::fcntl::FcntlArg::F_GETFL).map_err(std::io::Error::from)?;
    let nonblocking = nix::fcntl::OFlag::from_bits_retain(flags) | nix::fcntl::OFlag::O_NONBLOCK;
    nix::fcntl::fcntl(&ours, nix::fcntl::FcntlArg::F_SETFL(nonblocking))
        .map_err(std::io::Error::from)?;
    let received = crate::egress::handover::receive(ours.as_fd()).map_err(|e| {
        SandboxError::Io(std::io::Error::new(
            e.kind(),
            format!("the helper's egress proxy listeners: {e}"),
        ))
    })?;
    let crate::egress::handover::Received {
        http,
        socks,
        ports,
        transparent,
    } = received;
    http.set_nonblocking(true)?;
    socks.set_nonblocking(true)?;
    if let Some(t) = &transparent {
        t.dns.set_nonblocking(true)?;
        for listener in &t.listeners {
            listener.set_nonblocking(true)?;
        }
    }
    Ok(EgressListeners {
        http,
        socks,
        ports,
        transparent,
    })
}
