//! Transparent egress's connections to ports nothing listens on: the kernel of the child's
//! namespace refuses them (a reset, the program sees `ECONNREFUSED`) without the proxy ever
//! seeing them; the sandbox's watch ([`RefusedWatch`]) reads each such reset, and this task
//! makes it a refusal like a refused connection's (the tool result's `network: refused`
//! line; a `network.connection` record `via` transparent, rule `port_not_listed`), naming
//! the name when the address is synthetic, else the IP. Observation only: the kernel refused
//! already. At most [`MAX_REPORTED`] per call are reported (further ones only logged), so a
//! port scan cannot flood the audit log.

use std::net::{IpAddr, SocketAddr, SocketAddrV4};
use std::sync::Arc;

use tokio::sync::OwnedSemaphorePermit;
use zeroclaw_sandbox::egress::refused_watch::RefusedWatch;

use super::synthetic::Names;
use super::{Attempt, Inner, Via};
use crate::egress::Rule;

/// Refused connections reported per call.
const MAX_REPORTED: usize = 1024;

/// Reports the refusals `watch` reads until the proxy is closed, then those already queued
/// (the call's command has ended: every reset it caused is), holding `_permit` till then so
/// that [`super::Proxy::finish`] waits for them.
pub(super) async fn serve(
    inner: Arc<Inner>,
    names: Arc<Names>,
    watch: RefusedWatch,
    _permit: Option<OwnedSemaphorePermit>,
) {
    let mut reported = 0usize;
    loop {
        let got = tokio::select! {
            biased;
            () = inner.closed.cancelled() => break,
            got = watch.next() => got,
        };
        match got {
            Ok(refused) => report(&inner, &names, refused, &mut reported).await,
            Err(e) => {
                tracing::warn!(error = %e, "transparent egress: the refused-connection watch failed");
                return;
            }
        }
    }
    while let Ok(Some(refused)) = watch.queued() {
        report(&inner, &names, refused, &mut reported).await;
    }
}

/// Reports the connection to `refused` (the `reported`th; past [`MAX_REPORTED`], only logged).
async fn report(inner: &Inner, names: &Names, refused: SocketAddrV4, reported: &mut usize) {
    let (at, address) = attempt(names, refused);
    *reported = reported.saturating_add(1);
    if *reported > MAX_REPORTED {
        if *reported == MAX_REPORTED + 1 {
            tracing::warn!(
                "transparent egress: over {MAX_REPORTED} refused connections in one call; \
                 further ones are logged only"
            );
        }
        tracing::info!(target = %format!("{}:{}", at.name, at.port), "egress refused");
        return;
    }
    inner
        .refuse(&at, address, Rule::PortNotListed(refused.port()))
        .await;
}

/// The refused connection to `dest` as the proxy names it: the name the DNS stub gave `dest`
/// out for (no address), else the IP.
fn attempt(names: &Names, dest: SocketAddrV4) -> (Attempt, Option<SocketAddr>) {
    let ip = *dest.ip();
    match names.name_of(ip) {
        Some(name) => (Attempt::new(Via::Transparent, name, dest.port()), None),
        None => (
            Attempt::new(Via::Transparent, ip.to_string(), dest.port()),
            Some(SocketAddr::new(IpAddr::V4(ip), dest.port())),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    #[test]
    fn a_synthetic_address_is_named_an_other_is_its_ip() {
        let names = Names::default();
        let given = names.address_for("db.example").unwrap();
        let (at, address) = attempt(&names, SocketAddrV4::new(given, 5432));
        assert_eq!(
            (at.name.as_str(), at.port, address),
            ("db.example", 5432, None)
        );
        let other = SocketAddrV4::new(Ipv4Addr::new(10, 1, 2, 3), 9);
        let (at, address) = attempt(&names, other);
        assert_eq!(at.name, "10.1.2.3");
        assert_eq!(address, Some(SocketAddr::V4(other)));
        let unknown = SocketAddrV4::new(Ipv4Addr::new(198, 18, 7, 7), 9);
        assert_eq!(attempt(&names, unknown).0.name, "198.18.7.7");
    }
}
