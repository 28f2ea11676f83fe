//! Helpers shared by the integration tests; each test binary uses only some of them.
#![allow(dead_code)]

pub mod model_server;
