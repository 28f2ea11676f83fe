//! Classification of one incoming JSON-RPC frame.
//!
//! A frame is a request (method + id), a notification (method, no id), or a response to one of
//! our outbound requests (result/error + id). Anything else becomes the error to answer with.

use serde_json::{Map, Value};

use super::RpcError;

/// One well-formed incoming message.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    Notification {
        method: String,
        params: Value,
    },
    Response {
        id: Value,
        result: Result<Value, RpcError>,
    },
}

/// A frame that must be answered with an error; `id` is `null` when it could not be read.
#[derive(Debug, Clone, PartialEq)]
pub struct Rejected {
    pub id: Value,
    pub error: RpcError,
}

/// Parses and classifies a text frame.
pub fn classify(text: &str) -> Result<Incoming, Box<Rejected>> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        Box::new(Rejected {
            id: Value::Null,
            error: RpcError::parse(format!("parse error: {e}")),
        })
    })?;
    let obj = match value {
        Value::Object(obj) => obj,
        Value::Array(_) => return Err(reject_null("batch requests are not supported")),
        _ => return Err(reject_null("a JSON-RPC message must be an object")),
    };
    let id = read_id(&obj)?;
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(Box::new(Rejected {
            id: id.unwrap_or(Value::Null),
            error: RpcError::invalid_request("\"jsonrpc\" must be \"2.0\""),
        }));
    }
    match obj.get("method") {
        Some(method) => classify_call(&obj, method, id),
        None => classify_response(&obj, id),
    }
}

fn reject_null(message: &str) -> Box<Rejected> {
    Box::new(Rejected {
        id: Value::Null,
        error: RpcError::invalid_request(message),
    })
}

/// The `id` member: absent, or a string, an integer or null. Other types are invalid, and so
/// are fractional or out-of-range numbers, which could not be echoed back exactly.
fn read_id(obj: &Map<String, Value>) -> Result<Option<Value>, Box<Rejected>> {
    match obj.get("id") {
        None => Ok(None),
        Some(id @ (Value::String(_) | Value::Null)) => Ok(Some(id.clone())),
        Some(id @ Value::Number(n)) if !n.is_f64() => Ok(Some(id.clone())),
        Some(_) => Err(reject_null("\"id\" must be a string or an integer")),
    }
}

fn classify_call(
    obj: &Map<String, Value>,
    method: &Value,
    id: Option<Value>,
) -> Result<Incoming, Box<Rejected>> {
    let reject = |message: &str| {
        Box::new(Rejected {
            id: id.clone().unwrap_or(Value::Null),
            error: RpcError::invalid_request(message),
        })
    };
    let Some(method) = method.as_str() else {
        return Err(reject("\"method\" must be a string"));
    };
    // `"params": null` is read as absent: lenient, and harmless.
    let params = match obj.get("params") {
        None | Some(Value::Null) => Value::Null,
        Some(p @ (Value::Object(_) | Value::Array(_))) => p.clone(),
        Some(_) => return Err(reject("\"params\" must be an object or an array")),
    };
    if id == Some(Value::Null) {
        return Err(reject("a request's \"id\" must not be null"));
    }
    let method = method.to_owned();
    Ok(match id {
        Some(id) => Incoming::Request { id, method, params },
        None => Incoming::Notification { method, params },
    })
}

fn classify_response(
    obj: &Map<String, Value>,
    id: Option<Value>,
) -> Result<Incoming, Box<Rejected>> {
    let id = id.unwrap_or(Value::Null);
    let result = match (obj.get("result"), obj.get("error")) {
        (Some(result), None) => Ok(result.clone()),
        (None, Some(error)) => Err(RpcError::from_json(error)),
        _ => {
            return Err(Box::new(Rejected {
                id,
                error: RpcError::invalid_request(
                    "a message needs \"method\", or exactly one of \"result\" and \"error\"",
                ),
            }));
        }
    };
    Ok(Incoming::Response { id, result })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rpc::error::{INVALID_REQUEST, PARSE_ERROR};
    use serde_json::json;

    fn rejected_code(text: &str) -> (Value, i64) {
        let r = classify(text).unwrap_err();
        (r.id, r.error.code)
    }

    #[test]
    fn request_notification_and_response_are_told_apart() {
        assert!(matches!(
            classify(r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{}}"#),
            Ok(Incoming::Request { .. })
        ));
        assert!(matches!(
            classify(r#"{"jsonrpc":"2.0","method":"m"}"#),
            Ok(Incoming::Notification { .. })
        ));
        assert_eq!(
            classify(r#"{"jsonrpc":"2.0","id":"zc-out-1","result":{"x":1}}"#).unwrap(),
            Incoming::Response {
                id: json!("zc-out-1"),
                result: Ok(json!({"x":1}))
            }
        );
    }

    #[test]
    fn malformed_frames_get_the_contract_codes() {
        assert_eq!(rejected_code("{nope"), (Value::Null, PARSE_ERROR));
        assert_eq!(rejected_code("[]"), (Value::Null, INVALID_REQUEST));
        assert_eq!(
            rejected_code(r#"[{"jsonrpc":"2.0","id":1,"method":"m"}]"#),
            (Value::Null, INVALID_REQUEST)
        );
        assert_eq!(rejected_code("42"), (Value::Null, INVALID_REQUEST));
        assert_eq!(
            rejected_code(r#"{"id":7,"method":"m"}"#),
            (json!(7), INVALID_REQUEST)
        );
        assert_eq!(
            rejected_code(r#"{"jsonrpc":"2.0","id":{},"method":"m"}"#),
            (Value::Null, INVALID_REQUEST)
        );
        assert_eq!(
            rejected_code(r#"{"jsonrpc":"2.0","id":1e-28,"method":"m"}"#),
            (Value::Null, INVALID_REQUEST)
        );
        assert_eq!(
            rejected_code(r#"{"jsonrpc":"2.0","id":18446744073709551616,"method":"m"}"#),
            (Value::Null, INVALID_REQUEST)
        );
        assert_eq!(
            rejected_code(r#"{"jsonrpc":"2.0","id":3,"method":5}"#),
            (json!(3), INVALID_REQUEST)
        );
        assert_eq!(
            rejected_code(r#"{"jsonrpc":"2.0","id":3,"method":"m","params":"x"}"#),
            (json!(3), INVALID_REQUEST)
        );
        assert_eq!(
            rejected_code(r#"{"jsonrpc":"2.0","id":null,"method":"m"}"#),
            (Value::Null, INVALID_REQUEST)
        );
        assert_eq!(
            rejected_code(r#"{"jsonrpc":"2.0","id":3}"#),
            (json!(3), INVALID_REQUEST)
        );
    }

    #[test]
    fn deep_nesting_is_a_parse_error_not_a_crash() {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert_eq!(rejected_code(&deep), (Value::Null, PARSE_ERROR));
    }
}
