//! The one supervisor of a running call, sans I/O: [`Supervisor`] is fed what its driver saw
//! ([`Event`]: report bytes, output chunks per stream, the helper's exit, the deadline, a
//! cancellation) and answers what to do ([`Reply`]: output to pass on, whether to kill the
//! tree), until it is [`Supervisor::done`] and [`Supervisor::finish`] gives the [`Outcome`]
//! or the error. It owns the report decoding (through [`crate::wire::ReportLines`]), the
//! output cap, the end reason, when the call has ended, and the "helper ended before
//! confining the command" error. It reads no descriptor and sends no signal: its two drivers
//! do, the daemon's async loop ([`crate::launcher`]) and `sandbox run`'s poll loop
//! ([`crate::foreground`]); the kill they send is [`Kill`], through a pidfd.

mod ending;
mod kill;
mod machine;
mod output;
#[cfg(test)]
mod tests;
mod types;

pub(crate) use kill::Kill;
pub(crate) use machine::Supervisor;
pub(crate) use types::{Config, Event, Reaper, Reply, Start};
pub use types::{End, Outcome, Stream};
