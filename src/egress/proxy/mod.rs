//! zeroclaw's egress proxy: an HTTP proxy (plain `http://` forwarding and `CONNECT`) and a
//! SOCKS5 proxy, serving listeners it is handed (inside a child's network namespace, or on a
//! host loopback port). It resolves names itself, connects only to addresses the
//! [`EgressPolicy`] admits, and keeps the refusals of its lifetime for the tool result.
//!
//! Every connection holds a permit of a fixed pool (`max_connections`; past it new connections
//! are closed at once), request heads are bounded (`max_header_bytes`) and timed
//! (`header_timeout`), and tunnels end after `idle_timeout` without traffic: a hostile child
//! cannot grow the daemon's memory.
//!
//! With an [`Approver`] (a `supervised` session), a name outside `allow_domains` is not refused
//! at once: the connection waits while the approver asks, and connections to the same
//! `host:port` that arrive meanwhile share that one answer.
//!
//! With an [`Observer`] (a session's call), every connection is reported: a refusal at once,
//! an admitted connection when it ends, with its address, rule, bytes each way and duration.
//! [`Proxy::finish`] ends the tunnels still open and waits for their reports.
//!
//! Transparent egress ([`Proxy::serve_transparent`]): a DNS stub ([`dns_stub`]) answering
//! allowed names with synthetic addresses ([`synthetic`]), and listeners taking the child's
//! direct connections ([`transparent`]), judged like a `CONNECT` to the same name and port;
//! connections the kernel refused for want of a listener are refusals too
//! ([`refused_ports`]).
//!
//! With a session's credentials ([`Proxy::credentialed`]), a tunnel to a host bound to one
//! is intercepted to put the secret in ([`intercept`]), and every use is reported as a
//! [`CredentialUse`].

mod counted;
mod dial;
mod dns_stub;
#[doc(hidden)]
pub mod fuzz;
mod head;
mod http;
mod idle;
mod intercept;
mod observed;
mod peek;
mod refused_ports;
mod reply;
mod socks;
#[cfg(target_os = "linux")]
mod splice;
mod synthetic;
mod transparent;
mod tunnel;

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OnceCell, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use zeroclaw_sandbox::egress::refused_watch::RefusedWatch;

use super::credentials::Session;
use super::{EgressPolicy, Rule};

/// The proxy's bounds on what one client may cost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// The longest a client may take to send a request head (HTTP) or handshake (SOCKS5), and
    /// a tunnel's TLS ClientHello.
    pub header_timeout: Duration,
    /// Resolving and connecting to the upstream.
    pub connect_timeout: Duration,
    /// A tunnel or forwarded exchange with no traffic either way for this long is closed.
    pub idle_timeout: Duration,
    /// The largest request head accepted (bigger ones get 431).
    pub max_header_bytes: usize,
    /// Client connections served at once.
    pub max_connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            header_timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(300),
            max_header_bytes: 64 * 1024,
            max_connections: 256,
        }
    }
}

/// One refused destination and the rule that refused it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// `host:port` as the client asked for it.
    pub target: String,
    pub rule: Rule,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "network: refused {} — {}", self.target, self.rule)
    }
}

/// The answer to one approval: `Ok(how)` admits the connection, `Err(rule)` refuses it.
pub type Approval = Result<String, Rule>;

/// Decides whether a connection to a name outside `allow_domains` may go ahead (the
/// supervised approval; implemented by `crate::approval::network`, which asks the client).
pub trait Approver: Send + Sync {
    fn approve<'a>(
        &'a self,
        name: &'a str,
        port: u16,
    ) -> Pin<Box<dyn Future<Output = Approval> + Send + 'a>>;
}

/// How a client asked the proxy for a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// A forwarded absolute-form `http://` request.
    Http,
    /// An HTTP `CONNECT` tunnel.
    Connect,
    /// A SOCKS5 `CONNECT`.
    Socks,
    /// A direct connection of the child's, taken by transparent egress (or refused by the
    /// kernel for want of a listener at its port).
    Transparent,
    /// A name the transparent DNS stub refused to answer for (no connection followed).
    Dns,
}

impl Via {
    pub fn as_str(self) -> &'static str {
        match self {
            Via::Http => "http",
            Via::Connect => "connect",
            Via::Socks => "socks5",
            Via::Transparent => "transparent",
            Via::Dns => "dns",
        }
    }
}

/// One connection as the proxy reports it: a refusal at once, an admitted connection when
/// it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connection {
    pub via: Via,
    /// The host in its canonical form (as sent, escaped, when it has none).
    pub name: String,
    /// The destination port (`None` for a name refused by the DNS stub).
    pub port: Option<u16>,
    /// The upstream address connected to (or refused).
    pub address: Option<SocketAddr>,
    pub allowed: bool,
    /// The rule that admitted or refused it.
    pub rule: Rule,
    /// Bytes sent to the upstream and received from it.
    pub sent: u64,
    pub received: u64,
    /// From the request to the refusal or the end of the connection.
    pub duration: Duration,
}

/// One request of an intercepted connection that a credential was put in (`allowed`), or a
/// request refused for carrying a credential's placeholder to a host it is not bound to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CredentialUse {
    pub credential: String,
    /// The host the request went (or would have gone) to, and its port.
    pub name: String,
    pub port: u16,
    /// The request's method and path (without its query).
    pub method: String,
    pub path: String,
    pub allowed: bool,
}

/// Receives every [`Connection`] of a proxy (the audit log of a session's call). The proxy
/// waits for the returned future before it lets the connection's permit go.
pub trait Observer: Send + Sync {
    fn connection<'a>(&'a self, c: Connection) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

    /// A credential put in a request, or a placeholder refused (nothing by default).
    fn credential<'a>(
        &'a self,
        _used: CredentialUse,
    ) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> {
        Box::pin(std::future::ready(()))
    }
}

/// A connection being served: what it asked for and since when.
#[derive(Debug, Clone)]
pub(super) struct Attempt {
    pub via: Via,
    pub name: String,
    pub port: u16,
    pub started: Instant,
}

impl Attempt {
    pub fn new(via: Via, name: String, port: u16) -> Attempt {
        Attempt {
            via,
            name,
            port,
            started: Instant::now(),
        }
    }
}

/// Refusals kept per proxy (distinct ones; further ones are only logged).
const MAX_REFUSALS: usize = 64;
/// Names refused by the DNS stub that are reported to the observer per proxy (further ones
/// are only logged).
const MAX_REFUSED_NAMES: usize = 1024;

struct Inner {
    policy: EgressPolicy,
    limits: Limits,
    permits: Arc<Semaphore>,
    refusals: Mutex<Vec<Refusal>>,
    /// Names the DNS stub refused and reported ([`Inner::refuse_lookup`]).
    refused_names: Mutex<HashSet<String>>,
    approver: Option<Arc<dyn Approver>>,
    /// Approvals being asked, by `host:port` (concurrent connections share one answer).
    pending: Mutex<HashMap<String, Arc<OnceCell<Approval>>>>,
    /// Cancelled by [`Proxy::close`]: open questions are dropped and their connections refused.
    closed: CancellationToken,
    observer: Option<Arc<dyn Observer>>,
    /// The session's credentials: tunnels to their hosts are intercepted.
    credentials: Option<Arc<Session>>,
}

impl Inner {
    /// Reports a credential's use or a placeholder's refusal (logged without any secret).
    async fn credential(&self, used: CredentialUse) {
        tracing::info!(
            credential = %used.credential,
            target = %format!("{}:{}", used.name, used.port),
            allowed = used.allowed,
            "egress credential"
        );
        if let Some(observer) = &self.observer {
            observer.credential(used).await;
        }
    }

    /// The approver's answer for `name:port`; asked once for the connections waiting at once.
    /// Without an approver, the name is refused as not in `allow_domains`.
    async fn approve(&self, name: &str, port: u16) -> Approval {
        let Some(approver) = &self.approver else {
            return Err(Rule::NotInAllowDomains);
        };
        let key = format!("{name}:{port}");
        let cell = {
            let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            pending.entry(key.clone()).or_default().clone()
        };
        let answer = tokio::select! {
            answer = cell.get_or_init(|| approver.approve(name, port)) => answer.clone(),
            _ = self.closed.cancelled() => Err(Rule::NotApproved("the call ended".into())),
        };
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        if pending.get(&key).is_some_and(|c| Arc::ptr_eq(c, &cell)) {
            pending.remove(&key);
        }
        answer
    }

    /// Records a refusal of `at` (reported at once) and returns it.
    async fn refuse(&self, at: &Attempt, address: Option<SocketAddr>, rule: Rule) -> Refusal {
        let refusal = self.keep(format!("{}:{}", at.name, at.port), rule);
        self.report(at, address, false, refusal.rule.clone(), (0, 0))
            .await;
        refusal
    }

    /// Records that the DNS stub refused to answer for `name` (shown as the tool result's
    /// `network: refused NAME — RULE`); the observer hears of each name once per proxy (a
    /// lookup is several queries: `A` and `AAAA`, retries).
    async fn refuse_lookup(&self, name: &str, rule: Rule) {
        let refusal = self.keep(name.to_owned(), rule);
        let first = {
            let mut names = self.refused_names.lock().unwrap_or_else(|e| e.into_inner());
            names.len() < MAX_REFUSED_NAMES && names.insert(refusal.target.clone())
        };
        if let (true, Some(observer)) = (first, &self.observer) {
            let connection = Connection {
                via: Via::Dns,
                name: refusal.target,
                port: None,
                address: None,
                allowed: false,
                rule: refusal.rule,
                sent: 0,
                received: 0,
                duration: Duration::ZERO,
            };
            observer.connection(connection).await;
        }
    }

    /// Keeps a refusal of `target` for the tool result (distinct ones, at most
    /// [`MAX_REFUSALS`]), logs it and returns it.
    fn keep(&self, target: String, rule: Rule) -> Refusal {
        let refusal = Refusal { target, rule };
        tracing::info!(target = %refusal.target, rule = %refusal.rule, "egress refused");
        let mut kept = self.refusals.lock().unwrap_or_else(|e| e.into_inner());
        if kept.len() < MAX_REFUSALS && !kept.contains(&refusal) {
            kept.push(refusal.clone());
        }
        refusal
    }

    /// Reports an admitted connection that ended, with the bytes (sent, received).
    async fn ended(&self, at: &Attempt, address: SocketAddr, rule: Rule, bytes: (u64, u64)) {
        self.report(at, Some(address), true, rule, bytes).await;
    }

    async fn report(
        &self,
        at: &Attempt,
        address: Option<SocketAddr>,
        allowed: bool,
        rule: Rule,
        (sent, received): (u64, u64),
    ) {
        if let Some(observer) = &self.observer {
            let connection = Connection {
                via: at.via,
                name: at.name.clone(),
                port: Some(at.port),
                address,
                allowed,
                rule,
                sent,
                received,
                duration: at.started.elapsed(),
            };
            observer.connection(connection).await;
        }
    }
}

/// A running proxy for one policy; cheap to clone (the clones share state).
#[derive(Clone)]
pub struct Proxy {
    inner: Arc<Inner>,
}

impl Proxy {
    pub fn new(policy: EgressPolicy, limits: Limits) -> Proxy {
        Proxy::with_approver(policy, limits, None)
    }

    /// A proxy that asks `approver` about names outside `allow_domains` (else refuses them).
    pub fn with_approver(
        policy: EgressPolicy,
        limits: Limits,
        approver: Option<Arc<dyn Approver>>,
    ) -> Proxy {
        Proxy::observed(policy, limits, approver, None)
    }

    /// A proxy that also reports every connection to `observer`.
    pub fn observed(
        policy: EgressPolicy,
        limits: Limits,
        approver: Option<Arc<dyn Approver>>,
        observer: Option<Arc<dyn Observer>>,
    ) -> Proxy {
        Proxy::credentialed(policy, limits, approver, observer, None)
    }

    /// [`Proxy::observed`] that also puts a session's `credentials` in on the wire for their
    /// hosts (tunnels to them are intercepted).
    pub fn credentialed(
        policy: EgressPolicy,
        limits: Limits,
        approver: Option<Arc<dyn Approver>>,
        observer: Option<Arc<dyn Observer>>,
        credentials: Option<Arc<Session>>,
    ) -> Proxy {
        let permits = Arc::new(Semaphore::new(limits.max_connections));
        Proxy {
            inner: Arc::new(Inner {
                policy,
                limits,
                permits,
                refusals: Mutex::new(Vec::new()),
                refused_names: Mutex::new(HashSet::new()),
                approver,
                pending: Mutex::new(HashMap::new()),
                closed: CancellationToken::new(),
                observer,
                credentials,
            }),
        }
    }

    /// Serves the HTTP proxy on `listener` until the task is aborted.
    pub fn serve_http(&self, listener: TcpListener) -> JoinHandle<()> {
        self.serve(listener, |inner, stream, permit| {
            tokio::spawn(http::serve_conn(inner, stream, permit));
        })
    }

    /// Serves the SOCKS5 proxy on `listener` until the task is aborted.
    pub fn serve_socks(&self, listener: TcpListener) -> JoinHandle<()> {
        self.serve(listener, |inner, stream, permit| {
            tokio::spawn(socks::serve_conn(inner, stream, permit));
        })
    }

    /// Serves transparent egress until the tasks are aborted: the DNS stub on `dns` and the
    /// child's direct connections on `listeners` (one per destination port). The connections
    /// the kernel refused for want of a listener, which `watch` sees, are reported by a task
    /// of their own until [`Proxy::close`] (then those still queued; [`Proxy::finish`] waits
    /// for them).
    pub fn serve_transparent(
        &self,
        dns: tokio::net::UdpSocket,
        listeners: Vec<TcpListener>,
        watch: Option<RefusedWatch>,
    ) -> Vec<JoinHandle<()>> {
        let names = Arc::new(synthetic::Names::default());
        let mut tasks = vec![tokio::spawn(dns_stub::serve(
            self.inner.clone(),
            names.clone(),
            dns,
        ))];
        if let Some(watch) = watch {
            let permit = self.inner.permits.clone().try_acquire_owned().ok();
            let refused = refused_ports::serve(self.inner.clone(), names.clone(), watch, permit);
            tokio::spawn(refused);
        }
        for listener in listeners {
            let names = names.clone();
            tasks.push(self.serve(listener, move |inner, stream, permit| {
                tokio::spawn(transparent::serve_conn(
                    inner,
                    names.clone(),
                    stream,
                    permit,
                ));
            }));
        }
        tasks
    }

    /// The distinct refusals so far, oldest first.
    pub fn refusals(&self) -> Vec<Refusal> {
        let kept = self
            .inner
            .refusals
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        kept.clone()
    }

    /// Drops the approval questions still open (their connections are refused); called when
    /// the call the proxy serves has ended.
    pub fn close(&self) {
        self.inner.closed.cancel();
    }

    /// Closes the proxy ([`Proxy::close`]; tunnels still open end too) and waits, at most
    /// `within`, until every connection ended and was reported; returns the refusals.
    pub async fn finish(&self, within: Duration) -> Vec<Refusal> {
        self.close();
        let all = u32::try_from(self.inner.limits.max_connections).unwrap_or(u32::MAX);
        let drained = self.inner.permits.acquire_many(all);
        if tokio::time::timeout(within, drained).await.is_err() {
            tracing::warn!("egress connections still open after the call; not all reported");
        }
        self.refusals()
    }

    /// The policy this proxy enforces.
    pub fn policy(&self) -> &EgressPolicy {
        &self.inner.policy
    }

    fn serve(
        &self,
        listener: TcpListener,
        start: impl Fn(Arc<Inner>, TcpStream, Arc<OwnedSemaphorePermit>) + Send + 'static,
    ) -> JoinHandle<()> {
        let inner = self.inner.clone();
        tokio::spawn(async move {
            loop {
                let stream = match listener.accept().await {
                    Ok((stream, _)) => stream,
                    Err(e) => {
                        tracing::warn!(error = %e, "egress proxy accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                match inner.permits.clone().try_acquire_owned() {
                    Ok(permit) => start(inner.clone(), stream, Arc::new(permit)),
                    Err(_) => {
                        tracing::warn!("egress proxy at max_connections; connection closed");
                        drop(stream);
                    }
                }
            }
        })
    }
}
