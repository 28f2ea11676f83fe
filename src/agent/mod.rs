//! The turn loop: conversation history, model streaming, tool calls, cancellation.
