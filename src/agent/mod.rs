//! The turn loop: conversation history, model streaming, tool calls, cancellation.
//!
//! - [`history`]: the entries a turn produces and their views (stored rows, provider
//!   messages, replayed `session/update`s); [`prompt_images`]: a prompt's images, kept by
//!   reference and put back in place of their markers.
//! - [`turn`]: one prompt turn — stream the model, forward deltas, run tool calls through the
//!   registry, loop until the model stops, the tool-round cap is hit, or the turn is cancelled.
//! - [`step`]: one model call, collected from the provider's event stream.
//! - [`usage`]: the `usage_update` of each model call and a turn's token totals.
//! - `recorder`: keeps the `plan` updates a tool emits, for the history.

pub mod history;
pub mod prompt_images;
mod recorder;
mod step;
#[cfg(test)]
mod tests;
pub mod turn;
pub mod usage;

pub use history::Entry;
pub use turn::{StopReason, TurnError, TurnOutcome, TurnRequest, run_turn};
