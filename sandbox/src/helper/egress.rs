//! The helper's part of `network = proxy` (child side): once the call's network namespace
//! exists, bring its `lo` up, bind the proxy's two listeners there and send them to the
//! launcher over the plan socket ([`crate::egress_fds`]), then close that socket.

use std::os::fd::AsFd;

use crate::error::{SetupError, Stage};
use crate::plan::Plan;
use crate::wire::PLAN_FD;

/// Sends the listeners when the plan asks for them (the plan socket was kept open for this
/// by `read_plan`); nothing otherwise.
pub(crate) fn send_listeners(plan: &Plan) -> Result<(), SetupError> {
    let Some(ports) = plan.egress else {
        return Ok(());
    };
    if plan.warm {
        // A warm helper's plan came over its go socket: no plan socket to answer on.
        return Err(SetupError::new(
            Stage::Plan,
            "a warm helper cannot serve a network proxy call",
        ));
    }
    let channel = crate::sys::take_inherited(PLAN_FD);
    crate::sys::loopback_up()
        .map_err(|e| SetupError::os(Stage::Namespaces, "ioctl(SIOCSIFFLAGS, lo)", &e))?;
    crate::egress_fds::bind_and_send(channel.as_fd(), ports).map_err(|e| {
        SetupError::os(
            Stage::Namespaces,
            "bind and send the egress proxy listeners",
            &e,
        )
    })?;
    Ok(())
}
