//! Resolving and connecting for the proxy: the destination is judged first, the proxy resolves
//! a name itself ([`crate::egress::admit`]: the operator's `hosts` map, else DNS), every
//! address is judged, and only an admitted address is connected to (the one judged: no second
//! lookup to rebind). A name only
//! missing from `allow_domains` goes to the proxy's approver, if it has one; every other
//! refusal (denied name, port, address class) stands without asking.

use std::net::SocketAddr;

use tokio::net::TcpStream;
use tokio::time::timeout;

use super::{Inner, Refusal};
use crate::egress::admit::{Unadmitted, admitted_addresses};
use crate::egress::{Host, Rule};

/// Why the proxy has no upstream for a client.
pub(super) enum DialError {
    /// The policy refused it (recorded).
    Refused(Refusal),
    /// Allowed, but the name did not resolve or no address answered.
    Failed(String),
}

/// A connection to `host:port`, or why there is none.
pub(super) async fn dial(inner: &Inner, host: &Host, port: u16) -> Result<TcpStream, DialError> {
    let refuse = |rule| DialError::Refused(inner.refuse(host, port, rule));
    let decision = inner.policy.check_target(host, port);
    if !decision.allowed {
        match (decision.rule, host) {
            (Rule::NotInAllowDomains, Host::Name(name)) => {
                let how = inner.approve(name, port).await.map_err(refuse)?;
                tracing::info!(target = %format!("{host}:{port}"), how = %how, "egress approved");
            }
            (rule, _) => return Err(refuse(rule)),
        }
    }
    let candidates = match host {
        Host::Ip(ip) => vec![*ip],
        Host::Name(name) => {
            let within = inner.limits.connect_timeout;
            admitted_addresses(&inner.policy, name, port, within)
                .await
                .map_err(|why| match why {
                    Unadmitted::Refused(rule) => refuse(rule),
                    Unadmitted::Failed(why) => DialError::Failed(why),
                })?
        }
    };
    let mut last = String::new();
    for ip in candidates {
        let addr = SocketAddr::new(ip, port);
        match timeout(inner.limits.connect_timeout, TcpStream::connect(addr)).await {
            Ok(Ok(stream)) => {
                let _ = stream.set_nodelay(true);
                return Ok(stream);
            }
            Ok(Err(e)) => last = format!("cannot connect to {addr}: {e}"),
            Err(_) => last = format!("connecting to {addr} timed out"),
        }
    }
    Err(DialError::Failed(last))
}
