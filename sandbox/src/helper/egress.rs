//! The helper's part of `network = proxy` (child side): once the call's network namespace
//! exists, `lo` is up there, the proxy's two listeners are bound in it and sent to the
//! launcher over the plan socket ([`crate::egress::handover`]), and that socket is closed. The
//! namespace backend does it all in the helper ([`send_listeners`]); bubblewrap makes the
//! namespace itself, so its helper passes the socket through bwrap on [`EGRESS_FD`]
//! ([`keep_for_inner`], [`pass_to_inner`]) and the inner stage sends from there
//! ([`send_from_inner`]). A child forked by a single-threaded caller finds the socket on
//! [`PLAN_FD`] too ([`channel_fd`]), the pid namespace's init that caller cloned included.
//! With transparent egress (`plan.egress.transparent`), [`send_listeners`] (or the inner stage)
//! first makes every IPv4 address local to `lo`, and sends the DNS stub's socket and the
//! per-port listeners with the proxy's two; bubblewrap's inner stage launched by another user
//! does it in a network namespace of its own ([`own_namespaces`]).

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};

use crate::error::{SetupError, Stage};
use crate::plan::Plan;
use crate::wire::{EGRESS_FD, PLAN_FD};

/// The descriptor a child forked by a single-threaded caller keeps open beside its stdio, report
/// and lifeline: the plan socket on [`PLAN_FD`], when `plan` sends its listeners back (a
/// proxy call with a network namespace; `None` otherwise).
pub(crate) fn channel_fd(plan: &Plan) -> Option<RawFd> {
    (plan.egress.ports.is_some() && !plan.egress.on_host).then_some(PLAN_FD)
}

/// Sends the listeners when the plan asks for them (the plan socket was kept open for this
/// by `read_plan`); nothing otherwise.
pub(crate) fn send_listeners(plan: &Plan) -> Result<(), SetupError> {
    let Some(ports) = plan.egress.ports else {
        return Ok(());
    };
    if plan.is_warm() {
        // A warm helper's plan came over its go socket: no plan socket to answer on.
        return Err(SetupError::new(
            Stage::Plan,
            "a warm helper cannot serve a network proxy call",
        ));
    }
    let channel = crate::sys::take_inherited(PLAN_FD);
    crate::sys::loopback_up()
        .map_err(|e| SetupError::os(Stage::Namespaces, "ioctl(SIOCSIFFLAGS, lo)", &e))?;
    if plan.egress.transparent.is_some() {
        crate::sys::local_route_all().map_err(|e| {
            SetupError::os(
                Stage::Namespaces,
                "rtnetlink(RTM_NEWROUTE local 0.0.0.0/0 dev lo)",
                &e,
            )
        })?;
    }
    bind_and_send(channel.as_fd(), ports, plan.egress.transparent.as_deref())
}

/// Bubblewrap's helper, before its plan number takes the inner stage's plan: the plan
/// socket of a proxy call, moved to a close-on-exec descriptor of its own (`None`: not a
/// proxy call).
pub(crate) fn keep_for_inner(plan: &Plan) -> Result<Option<OwnedFd>, SetupError> {
    if plan.egress.ports.is_none() {
        return Ok(None);
    }
    let socket = crate::sys::take_inherited(PLAN_FD);
    let moved = crate::sys::dup_high(socket.as_raw_fd())
        .map_err(|e| SetupError::os(Stage::Bubblewrap, "fcntl(F_DUPFD_CLOEXEC, plan)", &e))?;
    drop(socket);
    Ok(Some(moved))
}

/// In the process about to exec bwrap: the socket on [`EGRESS_FD`], inherited by bwrap and
/// through it by the inner stage (bwrap keeps every descriptor that is not close-on-exec).
pub(crate) fn pass_to_inner(socket: &OwnedFd) -> Result<(), SetupError> {
    crate::sys::dup_onto(socket.as_raw_fd(), EGRESS_FD)
        .map_err(|e| SetupError::os(Stage::Bubblewrap, "dup2(egress socket)", &e))
}

/// Bubblewrap's inner stage, in bwrap's network namespace (bwrap brought `lo` up; the stage
/// has no capability to do it): sends the listeners on [`EGRESS_FD`] and closes it. With
/// `plan.egress.inner_namespaces` (launched by another user), first a network and a mount
/// namespace of the stage's own, `lo` brought up there ([`own_namespaces`]).
pub(crate) fn send_from_inner(plan: &Plan) -> Result<(), SetupError> {
    let Some(ports) = plan.egress.ports else {
        return Ok(());
    };
    let channel = crate::sys::adopt_inherited(EGRESS_FD).ok_or_else(|| {
        SetupError::new(
            Stage::Namespaces,
            format!("no egress proxy socket on fd {EGRESS_FD} in the inner stage"),
        )
    })?;
    if plan.egress.inner_namespaces {
        own_namespaces()?;
    }
    let up = crate::sys::loopback_is_up()
        .map_err(|e| SetupError::os(Stage::Namespaces, "ioctl(SIOCGIFFLAGS, lo)", &e))?;
    if !up {
        return Err(SetupError::new(
            Stage::Namespaces,
            "bwrap left lo down in the call's network namespace: the egress proxy would be \
             unreachable",
        ));
    }
    if plan.egress.transparent.is_some() {
        // With CAP_NET_ADMIN and CAP_NET_BIND_SERVICE bwrap kept for this stage (over bwrap's
        // namespace, or over the stage's own).
        crate::sys::local_route_all().map_err(|e| {
            SetupError::os(
                Stage::Namespaces,
                "rtnetlink(RTM_NEWROUTE local 0.0.0.0/0 dev lo)",
                &e,
            )
        })?;
    }
    bind_and_send(channel.as_fd(), ports, plan.egress.transparent.as_deref())
}

/// Bubblewrap launched by another user: bwrap's network and mount namespaces belong to the
/// user namespace bwrap made first, and the stage runs in one nested below it, where bwrap
/// kept it `CAP_SYS_ADMIN` and the network capabilities. With them the stage unshares a
/// network namespace (only `lo`, brought up here) and a mount namespace (for the two files)
/// owned by its own user namespace; the command, forked later, inherits both.
fn own_namespaces() -> Result<(), SetupError> {
    use nix::sched::CloneFlags;
    let flags = CloneFlags::CLONE_NEWNET | CloneFlags::CLONE_NEWNS;
    nix::sched::unshare(flags).map_err(|e| {
        SetupError::os(
            Stage::Namespaces,
            "unshare(CLONE_NEWNET | CLONE_NEWNS) in the inner stage",
            &e.into(),
        )
    })?;
    crate::sys::loopback_up()
        .map_err(|e| SetupError::os(Stage::Namespaces, "ioctl(SIOCSIFFLAGS, lo)", &e))
}

fn bind_and_send(
    channel: BorrowedFd<'_>,
    ports: crate::egress::handover::ProxyPorts,
    transparent: Option<&[u16]>,
) -> Result<(), SetupError> {
    crate::egress::handover::bind_and_send_with(channel, ports, transparent).map_err(|e| {
        SetupError::os(
            Stage::Namespaces,
            "bind and send the egress proxy listeners",
            &e,
        )
    })?;
    Ok(())
}
