//! What a repository's control state in an upper layer may hold (to be written: see `super`).
