//! JSON-RPC 2.0 peer: NDJSON framing, error codes, inbound dispatch, outbound `zc-out-<n>` requests.
//!
//! The transport is abstract: [`serve`] takes a stream of incoming text frames and a sink of
//! outgoing ones, so stdio ([`stdio`]) and later WebSocket share the same peer logic.
//! - [`codec`]: reads newline-delimited lines with a length cap, never buffering an oversize line.
//! - [`message`]: classifies one frame (request, notification, response, or an error to send).
//! - [`peer`]: the outbound half (responses, notifications, requests with a pending map).
//! - [`server`]: the inbound loop; every request on its own task, `$/cancel_request`.

pub mod codec;
pub mod error;
pub mod message;
pub mod peer;
pub mod server;
pub mod stdio;

pub use error::RpcError;
pub use peer::Peer;
pub use server::{Handler, serve};
