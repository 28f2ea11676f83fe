//! The egress proxy's listeners (`network = proxy`) on their way from where they are bound to
//! the daemon that serves them: [`handover`] (both ends of the `SCM_RIGHTS` hand-over over the
//! plan socket) and [`launch`] (the launcher's part: the plan socket, or listeners bound on the
//! host's loopback on a rung without a network namespace), and [`refused_watch`] (transparent
//! egress's watch on the connections the kernel refused, sent with them). The plan's part is
//! `crate::plan::egress`, the helper's stage `crate::helper::egress`.

pub mod handover;
pub(crate) mod launch;
pub mod refused_watch;
