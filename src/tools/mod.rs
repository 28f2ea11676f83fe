//! Tool definitions and the registry the agent dispatches through.
