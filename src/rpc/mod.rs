//! JSON-RPC 2.0 peer: NDJSON framing, error codes, inbound dispatch, outbound `zc-out-<n>` requests.
