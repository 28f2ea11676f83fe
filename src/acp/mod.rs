//! ACP v1 methods (plus the ZeroClaw extensions): dispatch, sessions, prompt materialization, updates.
