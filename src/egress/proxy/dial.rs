//! Resolving and connecting for the proxy: the destination is judged first, the proxy resolves
//! a name itself (the operator's `hosts` map, else DNS), every address is judged, and only an
//! admitted address is connected to (the one judged: no second lookup to rebind). A name only
//! missing from `allow_domains` goes to the proxy's approver, if it has one; every other
//! refusal (denied name, port, address class) stands without asking.

use std::net::{IpAddr, SocketAddr};

use tokio::net::TcpStream;
use tokio::time::timeout;

use super::{Inner, Refusal};
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
            let resolved = match inner.policy.fixed_address(name) {
                Some(ip) => vec![ip],
                None => resolve(inner, name, port).await?,
            };
            let mut admitted = Vec::new();
            let mut first_refusal = None;
            for ip in resolved {
                let decision = inner.policy.check_address(ip);
                if decision.allowed {
                    admitted.push(ip);
                } else {
                    first_refusal.get_or_insert(decision.rule);
                }
            }
            if admitted.is_empty() {
                let rule = first_refusal
                    .ok_or_else(|| DialError::Failed(format!("{name} has no address")))?;
                return Err(refuse(rule));
            }
            admitted
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

async fn resolve(inner: &Inner, name: &str, port: u16) -> Result<Vec<IpAddr>, DialError> {
    let lookup = tokio::net::lookup_host((name, port));
    match timeout(inner.limits.connect_timeout, lookup).await {
        Ok(Ok(addrs)) => Ok(addrs.map(|a| a.ip().to_canonical()).collect()),
        Ok(Err(e)) => Err(DialError::Failed(format!("cannot resolve {name}: {e}"))),
        Err(_) => Err(DialError::Failed(format!("resolving {name} timed out"))),
    }
}
