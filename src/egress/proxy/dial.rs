//! Resolving and connecting for the proxy: the destination is judged first, the proxy resolves
//! a name itself ([`crate::egress::admit`]: the operator's `hosts` map, else DNS), every
//! address is judged, and only an admitted address is connected to (the one judged: no second
//! lookup to rebind). A name only
//! missing from `allow_domains` goes to the proxy's approver, if it has one; every other
//! refusal (denied name, port, address class) stands without asking.

use std::net::SocketAddr;

use tokio::net::TcpStream;
use tokio::time::timeout;

use super::{Attempt, Inner, Refusal};
use crate::egress::admit::{Unadmitted, admitted_addresses};
use crate::egress::{Host, Rule};

/// Why the proxy has no upstream for a client.
pub(super) enum DialError {
    /// The policy refused it (recorded).
    Refused(Refusal),
    /// Allowed, but the name did not resolve or no address answered.
    Failed(String),
}

/// An admitted upstream connection: the address connected to and the rule that admitted it.
pub(super) struct Dialed {
    pub stream: TcpStream,
    pub address: SocketAddr,
    pub rule: Rule,
}

/// A connection to `host` (at `at.port`), or why there is none.
pub(super) async fn dial(inner: &Inner, at: &Attempt, host: &Host) -> Result<Dialed, DialError> {
    let port = at.port;
    let decision = inner.policy.check_target(host, port);
    let rule = if decision.allowed {
        decision.rule
    } else {
        match (decision.rule, host) {
            (Rule::NotInAllowDomains, Host::Name(name)) => match inner.approve(name, port).await {
                Ok(how) => {
                    tracing::info!(target = %format!("{host}:{port}"), how = %how, "egress approved");
                    Rule::Approved(how)
                }
                Err(rule) => return Err(DialError::Refused(inner.refuse(at, None, rule).await)),
            },
            (rule, _) => return Err(DialError::Refused(inner.refuse(at, None, rule).await)),
        }
    };
    let candidates = match host {
        Host::Ip(ip) => vec![*ip],
        Host::Name(name) => {
            let within = inner.limits.connect_timeout;
            match admitted_addresses(&inner.policy, name, port, within).await {
                Ok(ips) => ips,
                Err(Unadmitted::Refused(rule)) => {
                    let address = match &rule {
                        Rule::RefusedAddress { addr, .. } => Some(SocketAddr::new(*addr, port)),
                        _ => None,
                    };
                    return Err(DialError::Refused(inner.refuse(at, address, rule).await));
                }
                Err(Unadmitted::Failed(why)) => return Err(DialError::Failed(why)),
            }
        }
    };
    let mut last = String::new();
    for ip in candidates {
        let address = SocketAddr::new(ip, port);
        match timeout(inner.limits.connect_timeout, TcpStream::connect(address)).await {
            Ok(Ok(stream)) => {
                let _ = stream.set_nodelay(true);
                return Ok(Dialed {
                    stream,
                    address,
                    rule,
                });
            }
            Ok(Err(e)) => last = format!("cannot connect to {address}: {e}"),
            Err(_) => last = format!("connecting to {address} timed out"),
        }
    }
    Err(DialError::Failed(last))
}
