//! SQLite session store: metadata and per-turn history, off the async executor.
