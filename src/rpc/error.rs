//! JSON-RPC error codes of the zeroclaw ACP contract and the error object sent on the wire.
//! The zeroclaw-specific codes (-32000, -32001, -32003) are built by their constructors here,
//! which add `data.reason` so a client can tell them apart without the code (base ACP gives
//! -32000 and -32002 other meanings).

use serde_json::{Value, json};

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;
pub const INTERNAL_ERROR: i64 = -32603;
pub const REQUEST_CANCELLED: i64 = -32800;
pub const SESSION_NOT_FOUND: i64 = -32000;
pub const SESSION_LIMIT_REACHED: i64 = -32001;
/// Not -32002: base ACP v1 defines that as "resource not found".
pub const SESSION_BUSY: i64 = -32003;

/// A JSON-RPC error object: `{"code", "message", "data"?}`. The message is user-facing.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    pub fn parse(message: impl Into<String>) -> Self {
        Self::new(PARSE_ERROR, message)
    }

    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(INVALID_REQUEST, message)
    }

    pub fn method_not_found(method: &str) -> Self {
        Self::new(METHOD_NOT_FOUND, format!("method not found: {method}"))
    }

    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(INVALID_PARAMS, message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(INTERNAL_ERROR, message)
    }

    pub fn request_cancelled() -> Self {
        Self::new(REQUEST_CANCELLED, "request cancelled")
    }

    /// -32000, `data.reason = "session_not_found"`.
    pub fn session_not_found(message: impl Into<String>) -> Self {
        Self::with_reason(SESSION_NOT_FOUND, message, "session_not_found")
    }

    /// -32001, `data.reason = "session_limit_reached"`.
    pub fn session_limit_reached(message: impl Into<String>) -> Self {
        Self::with_reason(SESSION_LIMIT_REACHED, message, "session_limit_reached")
    }

    /// -32003, `data.reason = "session_busy"`.
    pub fn session_busy(message: impl Into<String>) -> Self {
        Self::with_reason(SESSION_BUSY, message, "session_busy")
    }

    fn with_reason(code: i64, message: impl Into<String>, reason: &str) -> Self {
        Self::new(code, message).with_data(json!({"reason": reason}))
    }

    /// The wire form of the error object.
    pub fn to_json(&self) -> Value {
        let mut obj = json!({"code": self.code, "message": self.message});
        if let Some(data) = &self.data {
            obj["data"] = data.clone();
        }
        obj
    }

    /// Reads an error object received from the other side; lenient about missing fields.
    pub fn from_json(value: &Value) -> Self {
        Self {
            code: value
                .get("code")
                .and_then(Value::as_i64)
                .unwrap_or(INTERNAL_ERROR),
            message: value
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned(),
            data: value.get("data").cloned(),
        }
    }
}

impl std::fmt::Display for RpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

impl std::error::Error for RpcError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zeroclaw_codes_carry_their_reason() {
        for (error, code, reason) in [
            (
                RpcError::session_not_found("x"),
                -32000,
                "session_not_found",
            ),
            (
                RpcError::session_limit_reached("x"),
                -32001,
                "session_limit_reached",
            ),
            (RpcError::session_busy("x"), -32003, "session_busy"),
        ] {
            let wire = error.to_json();
            assert_eq!(wire["code"], code);
            assert_eq!(wire["data"]["reason"], reason);
        }
    }
}
